package testutil

import (
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestSyncBufferConcurrent: 8 writers of 1000 lines each lose nothing (run
// with -race to check the locking).
func TestSyncBufferConcurrent(t *testing.T) {
	var b SyncBuffer
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				b.Write([]byte("x\n"))
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	if got := strings.Count(b.String(), "x\n"); got != 8000 {
		t.Fatalf("%d lines, want 8000", got)
	}
}

// TestSkipOn386Short: the skip applies to 386 with -short and to nothing
// else: 386 and amd64 with and without -short, and arm (32-bit too, but
// not the platform of CI's step).
func TestSkipOn386Short(t *testing.T) {
	for _, c := range []struct {
		goarch string
		short  bool
		want   bool
	}{{"386", true, true}, {"386", false, false}, {"amd64", true, false}, {"amd64", false, false}, {"arm", true, false}} {
		if got := skipOn386Short(c.goarch, c.short); got != c.want {
			t.Errorf("skipOn386Short(%q, %v) = %v, want %v", c.goarch, c.short, got, c.want)
		}
	}
}

// TestIntFlagRefusal: a value from 2^31 is the flag package's refusal
// exactly where int has 32 bits; small values, non-numbers and values
// beyond int64 never are.
func TestIntFlagRefusal(t *testing.T) {
	r, ok := IntFlagRefusal([]string{"run", "-seed", "1", "-R", "3000000000", "-dim", "4294967296"})
	if ok != (strconv.IntSize == 32) || ok && r != `invalid value "3000000000" for flag -R: value out of range` {
		t.Errorf("-R 3000000000: %q, %v; want a refusal exactly on a 32-bit platform", r, ok)
	}
	for _, args := range [][]string{{"-R", "2147483647"}, {"-R", "-2147483648"}, {"-eps", "3e9"}, {"3000000000"}, {"-R", "99999999999999999999"}, {}} {
		if r, ok := IntFlagRefusal(args); ok {
			t.Errorf("%q: %q, want no refusal", args, r)
		}
	}
}
