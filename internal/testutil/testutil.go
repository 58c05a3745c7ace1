// Package testutil holds small helpers shared by dpmf's tests.
package testutil

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
)

// SyncBuffer is a bytes.Buffer safe for concurrent writers and readers: a
// log destination or a command's output read while the command runs. Its
// zero value is ready to use.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p to the buffer.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what has been written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// DirNames returns the names of the entries of dir, sorted (os.ReadDir's
// order), so tests can check that nothing was written or left behind. It
// fails the test if dir cannot be read.
func DirNames(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// RingPearson is the sample correlation of a and b, two vectors of the ring
// Z_{2^64} read as centred (two's complement) integers: the statistic of
// secure aggregation's tests that nothing a server sees correlates with one
// learner's update.
func RingPearson(a, b []uint64) float64 {
	n := float64(len(a))
	var ma, mb float64
	for i := range a {
		ma += float64(int64(a[i]))
		mb += float64(int64(b[i]))
	}
	ma, mb = ma/n, mb/n
	var sab, saa, sbb float64
	for i := range a {
		x, y := float64(int64(a[i]))-ma, float64(int64(b[i]))-mb
		sab += x * y
		saa += x * x
		sbb += y * y
	}
	return sab / math.Sqrt(saa*sbb)
}

// SameBits reports whether a and b have the same length and are equal bit
// for bit (so NaNs of one payload compare equal, and 0 and -0 differ).
func SameBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if math.Float64bits(a[k]) != math.Float64bits(b[k]) {
			return false
		}
	}
	return true
}

// SkipOn386Short skips t in CI's 32-bit step: GOARCH=386 with -short (see
// .ci/run). That step is there for what the word size and the assembly
// change: int overflow and the bounds that depend on int's width, and the
// Go fallbacks of the assembly kernels. A test calls SkipOn386Short only
// if its property depends on neither (the same Go float64 code on every
// platform, at sizes far from any int bound) and go test ./... on amd64
// runs it; reason says why, and appears in the skip message. Without
// -short, 386 runs the test too.
func SkipOn386Short(t testing.TB, reason string) {
	t.Helper()
	if skipOn386Short(runtime.GOARCH, testing.Short()) {
		t.Skip("skipped on 386 with -short (amd64 runs it): " + reason)
	}
}

// skipOn386Short is SkipOn386Short's decision for a platform and mode.
func skipOn386Short(goarch string, short bool) bool {
	return goarch == "386" && short
}

// SkipOn386 skips t on GOARCH=386 in every mode, for a test that compares
// against numbers recorded on amd64 (golden files, numbers quoted in the
// docs) to a tolerance that the platform's math library moves past: amd64
// computes math.Exp and math.Log in assembly and 386 in Go (and Floor and
// Hypot with its own x87 assembly), so their last bits differ, and a solver
// run to its tolerance ends at another iterate. reason says by how much;
// the property itself is tested by the amd64 run.
func SkipOn386(t testing.TB, reason string) {
	t.Helper()
	if runtime.GOARCH == "386" {
		t.Skip("skipped on 386 (numbers recorded on amd64): " + reason)
	}
}

// IntFlagRefusal returns the refusal of Go's flag package for the first
// value in args that follows a flag name (-name) and is a decimal integer
// that int64 holds but this platform's int does not (from 2^31 on a
// 32-bit platform): `invalid value "v" for flag -name: value out of range`,
// which a command prints with its usage exit status before its own checks
// see the value; ok is false where args has no such value (every value on
// a 64-bit platform). A command-line test of a huge count expects the
// command's own refusal where ok is false, and this one where it is true.
func IntFlagRefusal(args []string) (refusal string, ok bool) {
	for i := 1; i < len(args); i++ {
		name, v := args[i-1], args[i]
		if len(name) < 2 || name[0] != '-' {
			continue
		}
		if _, err := strconv.ParseInt(v, 10, 64); err != nil {
			continue
		}
		if _, err := strconv.ParseInt(v, 10, strconv.IntSize); err != nil {
			return `invalid value "` + v + `" for flag ` + name + ": value out of range", true
		}
	}
	return "", false
}

// FillDir creates n empty files named entry-000000, entry-000001, ... in
// dir: a directory that a listing must wade through (the benchmarks of
// writes beside many entries).
func FillDir(tb testing.TB, dir string, n int) {
	tb.Helper()
	for i := range n {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("entry-%06d", i)))
		if err != nil {
			tb.Fatal(err)
		}
		f.Close()
	}
}
