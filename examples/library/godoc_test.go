package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"path/filepath"
	"testing"
)

// TestGoDoc: what go doc shows a newcomer is documented. Every package
// directory has a package comment in one of its files, and every exported
// function, method of an exported type, type, constant and variable has a
// doc comment (on itself or on its group). Generated files (the protocol
// code under proto/) are skipped.
func TestGoDoc(t *testing.T) {
	hasDoc := map[string]bool{}
	for _, file := range goSources(t) {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, filepath.Join(root, file), nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		dir := path.Dir(file)
		if _, ok := hasDoc[dir]; !ok {
			hasDoc[dir] = false
		}
		if f.Doc != nil {
			hasDoc[dir] = true
		}
		if ast.IsGenerated(f) {
			continue
		}
		missing := func(pos token.Pos, what string) {
			p := fset.Position(pos)
			t.Errorf("%s:%d: exported %s has no doc comment", file, p.Line, what)
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Doc != nil || !d.Name.IsExported() || (d.Recv != nil && !exportedRecv(d.Recv.List[0].Type)) {
					continue
				}
				missing(d.Pos(), "func "+d.Name.Name)
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() && s.Doc == nil && d.Doc == nil {
							missing(s.Pos(), "type "+s.Name.Name)
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() && s.Doc == nil && s.Comment == nil && d.Doc == nil {
								missing(n.Pos(), "name "+n.Name)
							}
						}
					}
				}
			}
		}
	}
	if len(hasDoc) < 40 {
		t.Fatalf("found %d package directories, want the module's 40 or more", len(hasDoc))
	}
	for dir, ok := range hasDoc {
		if !ok {
			t.Errorf("package %s has no package comment (go doc ./%s shows none)", dir, dir)
		}
	}
}

// exportedRecv reports whether a method's receiver type is exported: a
// method of an unexported type is not shown by go doc.
func exportedRecv(typ ast.Expr) bool {
	for {
		switch x := typ.(type) {
		case *ast.StarExpr:
			typ = x.X
		case *ast.IndexExpr:
			typ = x.X
		case *ast.IndexListExpr:
			typ = x.X
		case *ast.ParenExpr:
			typ = x.X
		case *ast.Ident:
			return x.IsExported()
		default:
			return true
		}
	}
}
