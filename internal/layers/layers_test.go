package layers

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/dpmf/dpmf/"

// layers is docs/architecture.md's list: a package may import packages
// of its own line or of the lines above it, and internal/... anywhere.
// The packages marked alone import no other dpmf package.
var layers = [][]string{
	{"linalg", "npy"},
	{"factorize"},
	{"accountant", "secagg"},
	{"cache"},
	{"plan"},
	{"mechanism"},
	{"dataset"},
	{"model"},
	{"fedopt"},
	{"experiment"},
	{"fednet", "proto"},
	{"audit", "reproduce"},
	{"cmd"},
	{"bench", "docgen", "examples"},
}

var alone = map[string]bool{"accountant": true, "secagg": true, "linalg": true, "npy": true}

// top returns a package's first path element: its entry in layers.
func top(pkg string) string {
	first, _, _ := strings.Cut(pkg, "/")
	return first
}

func TestImportsPointOneWay(t *testing.T) {
	rank := map[string]int{}
	for i, line := range layers {
		for _, p := range line {
			rank[p] = i
		}
	}
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		pkg := filepath.ToSlash(rel)
		from := top(pkg)
		if from == "internal" {
			return nil
		}
		r, ok := rank[from]
		if !ok {
			t.Errorf("%s: package %s is in no layer of docs/architecture.md: add it there and here", path, pkg)
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			ip, _ := strconv.Unquote(imp.Path.Value)
			dep, ok := strings.CutPrefix(ip, module)
			if !ok || top(dep) == "internal" || top(dep) == from {
				continue
			}
			switch dr, known := rank[top(dep)]; {
			case alone[from]:
				t.Errorf("%s imports %s: package %s imports no other dpmf package", path, dep, from)
			case !known:
				t.Errorf("%s imports %s, which is in no layer", path, dep)
			case dr > r:
				t.Errorf("%s imports %s: %s sits below %s in docs/architecture.md's layers", path, dep, from, top(dep))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
