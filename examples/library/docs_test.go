package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// root is the repository root, seen from this package's directory.
const root = "../.."

// markdownFiles returns README.md and the Markdown files under docs/,
// relative to root.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, _ := filepath.Rel(root, path)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// goSources returns the module's non-test Go files, relative to the root
// with forward slashes, skipping hidden and testdata directories.
func goSources(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			rel, _ := filepath.Rel(root, path)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// proseLines returns the lines of a Markdown text outside fenced code
// blocks, with their line numbers, and inline code spans removed.
func proseLines(text string) (lines []string, numbers []int) {
	code := regexp.MustCompile("`[^`]*`")
	fenced := false
	for i, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			lines = append(lines, code.ReplaceAllString(line, ""))
			numbers = append(numbers, i+1)
		}
	}
	return lines, numbers
}

// anchors returns the anchors of a Markdown text's headings as GitHub
// makes them (lower case; letters, digits, spaces, '-' and '_' kept,
// spaces turned into '-'; "-1", "-2", ... for repeats), and of its
// explicit <a name> and <a id> tags.
func anchors(text string) map[string]bool {
	heading := regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	tag := regexp.MustCompile(`<a (?:name|id)="([^"]+)"`)
	seen := map[string]int{}
	out := map[string]bool{}
	lines, _ := proseLines(text)
	for _, line := range strings.Split(text, "\n") {
		for _, m := range tag.FindAllStringSubmatch(line, -1) {
			out[m[1]] = true
		}
	}
	for _, line := range lines {
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		// The heading as written, inline code included.
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// TestDocLinks: every relative link of README.md and docs/ names a file or
// directory that exists, and every anchor (#...) one of the target's
// headings.
func TestDocLinks(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	// The headings are those of the raw text, inline code included.
	rawAnchors := func(path string) map[string]bool {
		b, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			t.Fatal(err)
		}
		return anchors(string(b))
	}
	n := 0
	for _, file := range markdownFiles(t) {
		b, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		lines, numbers := proseLines(string(b))
		for i, line := range lines {
			for _, m := range link.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if regexp.MustCompile(`^[a-z]+:`).MatchString(target) {
					continue // http:, https:, mailto:
				}
				n++
				path, anchor, _ := strings.Cut(target, "#")
				dest := file
				if path != "" {
					dest = filepath.ToSlash(filepath.Join(filepath.Dir(file), path))
				}
				info, err := os.Stat(filepath.Join(root, dest))
				if err != nil {
					t.Errorf("%s:%d: the link %s names %s, which does not exist", file, numbers[i], target, dest)
					continue
				}
				if anchor == "" {
					continue
				}
				if info.IsDir() || !strings.HasSuffix(dest, ".md") {
					t.Errorf("%s:%d: the link %s has an anchor on a file that is not Markdown", file, numbers[i], target)
				} else if !rawAnchors(dest)[anchor] {
					t.Errorf("%s:%d: the link %s names no heading of %s", file, numbers[i], target, dest)
				}
			}
		}
	}
	if n < 100 {
		t.Errorf("found %d relative links, want the docs' 100 or more: is the link pattern stale?", n)
	}
}

// testNames returns the names of the top-level Test, Benchmark, Example
// and Fuzz functions of the _test.go files in dir (relative to root), and
// of the packages below it when recursive, whatever their build tags.
func testNames(t *testing.T, dir string, recursive bool) []string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != filepath.Join(root, dir) && (!recursive || strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil {
				continue
			}
			for _, prefix := range []string{"Test", "Benchmark", "Example", "Fuzz"} {
				if strings.HasPrefix(fn.Name.Name, prefix) {
					names = append(names, fn.Name.Name)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// splitTop splits a -run or -bench pattern at the slashes outside
// brackets and parentheses, as go test does, and returns its first
// element.
func splitTop(re string) string {
	depth := 0
	for i, r := range re {
		switch r {
		case '(', '[':
			depth++
		case ')', ']':
			depth--
		case '/':
			if depth == 0 {
				return re[:i]
			}
		}
	}
	return re
}

// shellTokens splits s into shell words (single and double quotes
// removed), stopping at a backtick, a comment or a command separator.
func shellTokens(s string) []string {
	var out []string
	var cur strings.Builder
	in := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
			continue
		case r == '\'' || r == '"':
			quote, in = r, true
			continue
		case r == '`' || r == ';' || r == '#':
			if in {
				out = append(out, cur.String())
			}
			return out
		case unicode.IsSpace(r):
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
			continue
		}
		cur.WriteRune(r)
		in = true
	}
	if in {
		out = append(out, cur.String())
	}
	return out
}

// knownGone are documented go test commands whose tests were removed on
// purpose, the doc saying so next to the command.
var knownGone = map[string]string{
	"BandKernelOldNew": "docs/solver.md: at commit 10f1c8c; the harness is not kept",
}

// TestDocTestPatterns: every "go test ... -run R" and "go test ... -bench
// R" that README.md, docs/ and the Go sources' comments print, with a
// package path, selects at least one test, benchmark or example of that
// package by the first element of R (a renamed test would make the
// command run nothing and pass). "^$" (run none) is not checked.
func TestDocTestPatterns(t *testing.T) {
	var texts []struct{ name, text string }
	for _, f := range markdownFiles(t) {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, struct{ name, text string }{f, string(b)})
	}
	for _, f := range goSources(t) {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, struct{ name, text string }{f, string(b)})
	}
	cache := map[string][]string{}
	checked := 0
	for _, f := range texts {
		// Commands wrap across lines, in prose and in comments: join the
		// lines, without the comment markers.
		var joined strings.Builder
		for _, line := range strings.Split(f.text, "\n") {
			line = strings.TrimSpace(line)
			line = strings.TrimPrefix(line, "//")
			joined.WriteString(line + " ")
		}
		text := joined.String()
		for _, idx := range regexp.MustCompile(`\bgo test `).FindAllStringIndex(text, -1) {
			words := shellTokens(text[idx[1]:])
			var patterns []string
			var pkgs []string
			for i := 0; i < len(words); i++ {
				w := words[i]
				if w == "go" || w == "&&" || w == "|" {
					break
				}
				if (w == "-run" || w == "-bench") && i+1 < len(words) {
					patterns = append(patterns, words[i+1])
					i++
					continue
				}
				if strings.HasPrefix(w, "./") {
					w = strings.TrimRight(w, ",)")
					if !strings.HasSuffix(w, "/...") {
						w = strings.TrimSuffix(w, ".") // the end of a sentence
					}
					pkgs = append(pkgs, w)
				}
			}
			if len(pkgs) == 0 {
				continue
			}
			for _, p := range patterns {
				if p == "^$" || p == "." {
					continue
				}
				top := splitTop(p)
				re, err := regexp.Compile(top)
				if err != nil {
					t.Errorf("%s: go test pattern %q: %v", f.name, p, err)
					continue
				}
				var names []string
				for _, pkg := range pkgs {
					dir, recursive := strings.CutSuffix(strings.TrimSuffix(pkg, "/"), "/...")
					key := dir + "|" + map[bool]string{true: "r"}[recursive]
					if _, ok := cache[key]; !ok {
						cache[key] = testNames(t, strings.TrimPrefix(dir, "./"), recursive)
					}
					names = append(names, cache[key]...)
				}
				checked++
				if slices.ContainsFunc(names, re.MatchString) {
					continue
				}
				if why, ok := knownGone[top]; ok {
					t.Logf("%s: -run/-bench %s matches nothing, as documented (%s)", f.name, p, why)
					continue
				}
				t.Errorf("%s: go test ... %s %v: the pattern %q selects no test, benchmark or example there", f.name, p, pkgs, top)
			}
		}
	}
	if checked < 20 {
		t.Errorf("checked %d go test patterns, want the docs' 20 or more: is the command pattern stale?", checked)
	}
}

// TestREADMEListsEveryPackage: the README's table of packages names every
// package directory of the module (its path, as `internal/par` or a link
// target), and every directory its table links to holds Go code. The
// generated protocol code under proto/ is named by its row, `proto`.
func TestREADMEListsEveryPackage(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	_, table, ok := strings.Cut(readme, "\n| package | what it does |\n")
	if !ok {
		t.Fatal("README.md has no table of packages")
	}
	table, _, _ = strings.Cut(table, "\n\n")
	var pkgs []string
	for _, f := range goSources(t) {
		if dir := path.Dir(f); dir != "." && !slices.Contains(pkgs, dir) {
			pkgs = append(pkgs, dir)
		}
	}
	if len(pkgs) < 40 {
		t.Fatalf("found %d package directories, want the module's 40 or more", len(pkgs))
	}
	for _, p := range pkgs {
		if strings.HasPrefix(p, "proto/") {
			continue
		}
		if !strings.Contains(table, "`"+p+"`") && !strings.Contains(table, "]("+p+")") && !strings.Contains(table, "./"+p) {
			t.Errorf("README.md's table of packages does not name the package %s", p)
		}
	}
	for _, m := range regexp.MustCompile(`\]\(([a-z][^)#]*)\)`).FindAllStringSubmatch(table, -1) {
		dir := filepath.Join(root, m[1])
		if info, err := os.Stat(dir); err != nil || !info.IsDir() {
			continue // a file link; TestDocLinks checks it exists
		}
		if !slices.ContainsFunc(pkgs, func(p string) bool { return p == m[1] || strings.HasPrefix(p, m[1]+"/") }) {
			t.Errorf("README.md's table links to %s, which holds no Go package", m[1])
		}
	}
}
