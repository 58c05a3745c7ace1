//go:build linux

package atomicfile

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
)

// TestWriteRemovesOnlyDeadWritersTemps: a write of a destination removes
// the temporary files of it whose writer is provably gone (this host tag,
// a pid no process has), and keeps those of a live writer (a running
// process, this process itself), of another host and of an older dpmf
// (no writer in the name), and those of other destinations; UnprovenTemps
// names exactly the other host's and the older dpmf's.
func TestWriteRemovesOnlyDeadWritersTemps(t *testing.T) {
	if _, provable := owner(); !provable {
		t.Skip("no boot id or pid namespace to prove a writer gone")
	}
	dead := exec.Command("/bin/true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	live := exec.Command("/bin/sleep", "30")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { live.Process.Kill(); live.Wait() }()
	tag, _ := owner()
	dir := t.TempDir()
	path := filepath.Join(dir, "B.npy")
	name := func(base, tag string, pid int) string {
		return "." + base + tempInfix + tag + "." + strconv.Itoa(pid) + ".0123456789abcdef"
	}
	gone := name("B.npy", tag, dead.Process.Pid)
	kept := []string{
		name("B.npy", tag, live.Process.Pid),
		name("B.npy", tag, os.Getpid()),
		name("B.npy", "00000000", dead.Process.Pid), // another host
		".B.npy.tmp-0123456789abcdef",               // an older dpmf
		name("C.npy", tag, dead.Process.Pid),        // another destination
	}
	for _, n := range append([]string{gone}, kept...) {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{filepath.Join(dir, kept[2]), filepath.Join(dir, kept[3])}
	if got := UnprovenTemps(path); !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
		t.Errorf("UnprovenTemps %v, want %v", got, want)
	}
	if err := Write(path, 0o644, func(io.Writer) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, gone)); !os.IsNotExist(err) {
		t.Errorf("the dead writer's %s is still there (%v)", gone, err)
	}
	for _, n := range kept {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Errorf("%s removed: %v", n, err)
		}
	}
	// PrepareNoting removes the same and names the same, from its one
	// listing, before it makes its own temporary file.
	if err := os.WriteFile(filepath.Join(dir, gone), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	calls := 0
	p, err := PrepareNoting(context.Background(), path, 0o644, func(io.Writer) error { return nil }, func(got []string) {
		calls++
		if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
			t.Errorf("PrepareNoting names %v, want %v", got, want)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Discard()
	if calls != 1 {
		t.Errorf("PrepareNoting called unproven %d times, want 1", calls)
	}
	if _, err := os.Stat(filepath.Join(dir, gone)); !os.IsNotExist(err) {
		t.Errorf("PrepareNoting: the dead writer's %s is still there (%v)", gone, err)
	}
}

// TestWriteKeepsNonFilesNamedLikeDeadTemps: only regular files are a dead
// writer's temporary files. A symbolic link, an empty directory and a
// FIFO under a dead writer's name are kept, and so is the file outside
// the directory the link points to; a name cannot leave the directory (a
// listed name holds no separator).
func TestWriteKeepsNonFilesNamedLikeDeadTemps(t *testing.T) {
	if _, provable := owner(); !provable {
		t.Skip("no boot id or pid namespace to prove a writer gone")
	}
	dead := exec.Command("/bin/true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	tag, _ := owner()
	dir, outside := t.TempDir(), t.TempDir()
	path := filepath.Join(dir, "B.npy")
	name := func(i int) string {
		return ".B.npy" + tempInfix + tag + "." + strconv.Itoa(dead.Process.Pid) + ".000000000000000" + strconv.Itoa(i)
	}
	target := filepath.Join(outside, "precious")
	if err := os.WriteFile(target, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, name(1))); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, name(2)), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, name(3)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, 0o644, func(io.Writer) error { return nil }); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		if _, err := os.Lstat(filepath.Join(dir, name(i))); err != nil {
			t.Errorf("%s removed: %v", name(i), err)
		}
	}
	if got, err := os.ReadFile(target); err != nil || string(got) != "keep" {
		t.Errorf("the link's target outside the directory: %q (%v)", got, err)
	}
}

// TestWriteKeepsDirectorySwappedForDeadTemp: a dead writer's temporary
// file that is replaced by an empty directory of the same name between
// the listing and the removal (here while the writer's pid is looked up)
// is kept: only a file is unlinked. removeDeadTemps removed it with
// os.Remove, which removes an empty directory when the name is one.
func TestWriteKeepsDirectorySwappedForDeadTemp(t *testing.T) {
	if _, provable := owner(); !provable {
		t.Skip("no boot id or pid namespace to prove a writer gone")
	}
	tag, _ := owner()
	dir := t.TempDir()
	path := filepath.Join(dir, "B.npy")
	temp := filepath.Join(dir, ".B.npy"+tempInfix+tag+".4194304.0123456789abcdef")
	if err := os.WriteFile(temp, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	defer func(f func(int) bool) { processExists = f }(processExists)
	processExists = func(int) bool {
		if err := os.Remove(temp); err != nil {
			t.Error(err)
		}
		if err := os.Mkdir(temp, 0o700); err != nil {
			t.Error(err)
		}
		return false
	}
	if err := Write(path, 0o644, func(io.Writer) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(temp); err != nil || !fi.IsDir() {
		t.Errorf("the directory swapped in under a dead writer's temporary name was removed: %v", err)
	}
}
