package cli

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// names returns the names in dir, sorted.
func names(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var s []string
	for _, de := range des {
		s = append(s, de.Name())
	}
	slices.Sort(s)
	return s
}

// TestMkdirAllUndo: undo removes exactly the directories MkdirAll
// created, never one that existed, and stops at one that is no longer
// empty (a file written there meanwhile stays, and so do its parents).
func TestMkdirAllUndo(t *testing.T) {
	root := t.TempDir()
	old := filepath.Join(root, "old")
	if err := os.Mkdir(old, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(old, "a", "b", "c")
	undo, err := MkdirAll(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("%s after MkdirAll: %v", dir, err)
	}
	undo()
	if got := names(t, old); len(got) != 0 {
		t.Errorf("after undo, %s holds %v, want nothing (and it stays)", old, got)
	}

	// An existing directory: nothing created, nothing removed.
	undo, err = MkdirAll(old)
	if err != nil {
		t.Fatal(err)
	}
	undo()
	if got := names(t, root); !slices.Equal(got, []string{"old"}) {
		t.Errorf("undo of an existing directory: %s holds %v, want [old]", root, got)
	}

	// A file written meanwhile into a parent: that parent and its own
	// parents stay, the empty directory below it goes.
	undo, err = MkdirAll(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(old, "a", "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	undo()
	if got := names(t, filepath.Join(old, "a")); !slices.Equal(got, []string{"x"}) {
		t.Errorf("undo with a file in a: a holds %v, want [x]", got)
	}

	// A parent that is a file: an error.
	f := filepath.Join(root, "file")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := MkdirAll(filepath.Join(f, "d")); err == nil {
		t.Errorf("MkdirAll under a file: no error")
	}
}
