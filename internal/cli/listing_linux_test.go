//go:build linux

package cli

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// dirListings returns how many times dir was listed while run ran:
// inotify's IN_ACCESS events without a name (the watched directory
// itself, not a file in it), which every read of its entries makes.
// inotify merges an event into an identical one just before it, so the
// reads of one listing make one event; openings and closings are watched
// too, so that two listings, each between its opening and its closing,
// make two.
func dirListings(t *testing.T, dir string, run func()) int {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Skipf("no inotify: %v", err)
	}
	defer unix.Close(fd)
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_OPEN|unix.IN_CLOSE_NOWRITE|unix.IN_ACCESS); err != nil {
		t.Skipf("no inotify watch: %v", err)
	}
	run()
	listings := 0
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(fd, buf)
		if errors.Is(err, unix.EAGAIN) {
			return listings
		}
		if err != nil {
			t.Fatal(err)
		}
		for b := buf[:n]; len(b) >= unix.SizeofInotifyEvent; {
			mask := binary.NativeEndian.Uint32(b[4:])
			nameLen := int(binary.NativeEndian.Uint32(b[12:]))
			if mask&unix.IN_Q_OVERFLOW != 0 {
				t.Fatal("inotify queue overflow")
			}
			if mask&unix.IN_ACCESS != 0 && nameLen == 0 {
				listings++
			}
			b = b[unix.SizeofInotifyEvent+nameLen:]
		}
	}
}

// TestWriteOutputsListsEachDirectoryOncePerOutput: WriteOutputs lists an
// output's directory once, for both the removal of dead writers'
// temporary files and the warning about those it cannot prove gone.
// Before, twice, and a write beside 10^5 files read them all twice.
// The outputs are written at once, and the inotify events of two listings
// of one directory at the same time merge or interleave, so the two
// outputs go to two directories, each watched on its own.
func TestWriteOutputsListsEachDirectoryOncePerOutput(t *testing.T) {
	dir, dirC := t.TempDir(), t.TempDir()
	outIn := func(d, flag, name string) Output {
		return Output{File: File{Flag: flag, Path: filepath.Join(d, name)}, Perm: 0o644, Write: func(w io.Writer) error {
			_, err := io.WriteString(w, name)
			return err
		}}
	}
	out := func(flag, name string) Output { return outIn(dir, flag, name) }
	var stderr strings.Builder
	one := dirListings(t, dir, func() {
		if err := WriteOutputs(context.Background(), &stderr, "test: ", out("-o", "B")); err != nil {
			t.Fatal(err)
		}
	})
	old := filepath.Join(dir, ".B.tmp-0123456789abcdef") // an older dpmf's: warned about, left
	if err := os.WriteFile(old, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	twoC := 0
	two := dirListings(t, dir, func() {
		twoC = dirListings(t, dirC, func() {
			if err := WriteOutputs(context.Background(), &stderr, "test: ", out("-o", "B"), outIn(dirC, "-C", "C")); err != nil {
				t.Fatal(err)
			}
		})
	})
	if one != 1 || two != 1 || twoC != 1 {
		t.Errorf("the directories were listed %d times for one output, %d and %d for two (one each): want one listing per output", one, two, twoC)
	}
	if msg := stderr.String(); strings.Count(msg, "\n") != 1 || !strings.HasPrefix(msg, "test: -o "+filepath.Join(dir, "B")+": left "+old+": ") {
		t.Errorf("warnings: %q, want one line naming %s", msg, old)
	}
	if _, err := os.Stat(old); err != nil {
		t.Errorf("the older dpmf's temporary file: %v", err)
	}
}
