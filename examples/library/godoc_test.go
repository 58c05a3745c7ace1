package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
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

// TestExamplesCopyable: every Example function is in an external test
// package (package x_test), so that go doc and pkgsite show it calling the
// package by its name, as a newcomer's code must (an Example inside
// package x shows bare names), and every one has an output comment, so
// go test runs and checks it.
func TestExamplesCopyable(t *testing.T) {
	examples := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Example") {
				continue
			}
			examples++
			if name := f.Name.Name; name != "main" && !strings.HasSuffix(name, "_test") {
				t.Errorf("%s: %s is in package %s: put it in package %s_test", rel, fn.Name.Name, name, name)
			}
			hasOutput := false
			for _, c := range f.Comments {
				if c.Pos() > fn.Body.Lbrace && c.End() < fn.Body.Rbrace {
					for _, l := range c.List {
						if s := strings.TrimSpace(strings.TrimPrefix(l.Text, "//")); strings.HasPrefix(s, "Output:") || strings.HasPrefix(s, "Unordered output:") {
							hasOutput = true
						}
					}
				}
			}
			if !hasOutput {
				t.Errorf("%s: %s has no // Output: comment, so go test compiles it but never runs it", rel, fn.Name.Name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if examples < 40 {
		t.Errorf("found %d Example functions, want the module's 40 or more", examples)
	}
}
