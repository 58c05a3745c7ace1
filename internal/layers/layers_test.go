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

// imports returns each package directory of the module (relative to the
// root, with forward slashes) and the module packages its non-test files
// import.
func imports(t *testing.T) map[string][]string {
	t.Helper()
	graph := map[string][]string{}
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
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		if _, ok := graph[pkg]; !ok {
			graph[pkg] = nil
		}
		for _, imp := range f.Imports {
			ip, _ := strconv.Unquote(imp.Path.Value)
			if dep, ok := strings.CutPrefix(ip, module); ok {
				graph[pkg] = append(graph[pkg], dep)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return graph
}

// TestDepsPointOneWay checks the layers on every package a package depends
// on, directly or through others (what go list -deps lists), so that an
// internal package which imports a public one cannot carry that import
// below its layer: accountant importing internal/optim, which imports
// linalg, would break "accountant imports no dpmf package".
func TestDepsPointOneWay(t *testing.T) {
	rank := map[string]int{}
	for i, line := range layers {
		for _, p := range line {
			rank[p] = i
		}
	}
	graph := imports(t)
	if len(graph) < 40 {
		t.Fatalf("found %d packages, want the module's 40 or more", len(graph))
	}
	for pkg := range graph {
		from := top(pkg)
		r, ok := rank[from]
		if from == "internal" || !ok {
			continue // TestImportsPointOneWay reports a package in no layer
		}
		// via[dep] is the package through which pkg reaches dep.
		via := map[string]string{}
		stack := []string{pkg}
		for len(stack) > 0 {
			p := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, dep := range graph[p] {
				if _, seen := via[dep]; seen || dep == pkg {
					continue
				}
				via[dep] = p
				stack = append(stack, dep)
			}
		}
		for dep, through := range via {
			to := top(dep)
			if to == "internal" || to == from {
				continue
			}
			switch dr, known := rank[to]; {
			case alone[from]:
				t.Errorf("%s depends on %s (imported by %s): package %s depends on no other dpmf package", pkg, dep, through, from)
			case !known:
				t.Errorf("%s depends on %s (imported by %s), which is in no layer", pkg, dep, through)
			case dr > r:
				t.Errorf("%s depends on %s (imported by %s): %s sits below %s in docs/architecture.md's layers", pkg, dep, through, from, to)
			}
		}
	}
}
