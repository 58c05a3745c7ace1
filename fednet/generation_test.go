package fednet

import (
	"bytes"
	"encoding/binary"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/internal/testutil"
)

// planted are generations a planted (or renamed) file may claim at the
// top of uint64: 2^63-1 (the largest that the names parsed before, whose
// next, 2^63, no start could read back), 2^63 and 2^64-1 (whose next
// wraps to 0).
var planted = []uint64{math.MaxInt64, 1 << 63, math.MaxUint64}

// TestSecureGenerationAtTheTopRefused: a snapshot file planted with a
// generation of 2^63-1, 2^63 or 2^64-1 makes a start refuse the state
// directory in one line naming the file (a start takes one more than the
// largest generation: none fits), and the directory is left as it was.
// Before, 2^63-1 was accepted, the server claimed 2^63, and every later
// start refused the directory for an "unexpected file" (the newest
// snapshot, which the message said to move out).
func TestSecureGenerationAtTheTopRefused(t *testing.T) {
	r := newRun(t, 3, 2, 1, 4)
	secureRun(t, r)
	for _, g := range planted {
		dir := t.TempDir()
		opt := secureOptions(r, dir, 2)
		srv, err := NewServer(opt)
		if err != nil {
			t.Fatal(err)
		}
		srv.Close()
		good, err := os.ReadFile(filepath.Join(dir, secName(1)))
		if err != nil {
			t.Fatal(err)
		}
		// A file made to pass every other check: generation g in its
		// header too, and its checksum made right.
		binary.LittleEndian.PutUint64(good[secHead-8:], g)
		if err := os.WriteFile(filepath.Join(dir, secName(g)), reseal(good), 0o600); err != nil {
			t.Fatal(err)
		}
		before := snapshot(t, dir)
		srv, err = NewServer(opt)
		if err == nil {
			srv.Close()
			t.Errorf("generation %d: the start was accepted; the directory holds %q", g, testutil.DirNames(t, dir))
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, secName(g)+": generation") || !strings.Contains(msg, "has no next one") ||
			!strings.Contains(msg, "fresh state directory") || strings.Contains(msg, "\n") {
			t.Errorf("generation %d: %v, want one line naming the file, that it has no next generation, and what to do", g, err)
		}
		after := snapshot(t, dir)
		delete(before, lockFile) // it names the holder and its start time
		delete(after, lockFile)
		if !maps.Equal(before, after) {
			t.Errorf("generation %d: the refused start changed the directory: %q, then %q", g, slices.Sorted(maps.Keys(before)), slices.Sorted(maps.Keys(after)))
		}
	}
}

// TestLearnerGenerationAtTheTop: a learner's record file planted with a
// generation of 2^63-1, 2^63 or 2^64-1 is refused at start in one line
// naming it, the directory left as it was; one of 2^63-2 is read, and
// the start takes 2^63-1, the largest, after which the next start is
// refused (never a generation that wraps to 0 or 1, below the newest).
func TestLearnerGenerationAtTheTop(t *testing.T) {
	run := bytes.Repeat([]byte{4}, 16)
	rec := handRecord2(run, 0, 0, 0, nil, 0, 0, 2, []byte("d"))
	for _, g := range planted {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, learnerName(g)), rec, 0o600); err != nil {
			t.Fatal(err)
		}
		ls, err := openLearnerState(dir, 0)
		if err == nil {
			ls.Close()
			t.Errorf("generation %d: accepted", g)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, learnerName(g)+": generation") || !strings.Contains(msg, "has no next one") ||
			!strings.Contains(msg, "fresh directory") || strings.Contains(msg, "\n") {
			t.Errorf("generation %d: %v, want one line naming the file, that it has no next generation, and what to do", g, err)
		}
		if got, want := testutil.DirNames(t, dir), []string{learnerName(g), "lock"}; !slices.Equal(got, want) {
			t.Errorf("generation %d: the directory holds %q, want %q", g, got, want)
		}
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, learnerName(math.MaxInt64-1)), rec, 0o600); err != nil {
		t.Fatal(err)
	}
	ls, err := openLearnerState(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	if ls.rec == nil || ls.rec.seenRound != 2 {
		t.Fatalf("read %+v", ls.rec)
	}
	if err := ls.recordWitness(&model{round: 3, run: run, digest: []byte("e")}); err != nil {
		t.Fatal(err)
	}
	ls.Close()
	if got, want := testutil.DirNames(t, dir), []string{learnerName(math.MaxInt64), learnerFile, "lock"}; !slices.Equal(got, want) {
		t.Fatalf("the directory holds %q, want %q", got, want)
	}
	if ls, err := openLearnerState(dir, 0); err == nil || !strings.Contains(err.Error(), "has no next one") {
		if err == nil {
			ls.Close()
		}
		t.Fatalf("the start after generation 2^63-1: %v, want it refused", err)
	}
}
