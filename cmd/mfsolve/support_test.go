package main

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dpmf/dpmf/factorize"
)

func TestParseMeminfo(t *testing.T) {
	tests := []struct {
		name, in string
		want     uint64
		err      bool
	}{
		{"available", "MemTotal:       24684084 kB\nMemFree:        24192756 kB\nMemAvailable:   24349272 kB\n", 24349272 * 1024, false},
		{"old kernel", "MemTotal:       1000 kB\nMemFree:        500 kB\n", 1000 * 1024, false},
		{"garbage", "hello\nMemAvailable: lots kB\n", 0, true},
		{"empty", "", 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseMeminfo(strings.NewReader(tc.in))
			if tc.err {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestMemoryNeed(t *testing.T) {
	tests := []struct {
		strategy string
		r        int
		lossOnly bool
		banded   bool
		want     float64
	}{
		// Optimal: B and C (2 R^2) plus 4 R^2 working space, 8 bytes each.
		{"optimal", 1000, false, true, 48e6},
		{"optimal", 1000, true, true, 0},
		{"optimal", 1000, true, false, 32e6},
		{"blt", 1000, false, true, 48e6},
		{"identity", 1000, false, true, 24e6},
		{"sqrt", 1000, false, true, 16e6},
		// Tree with R = 13: m = 13 + 6 + 3 + 1 = 23 nodes; B and C 2 R m.
		{"tree", 13, false, true, 8 * 2 * 13 * 23},
		{"tree", 13, true, true, 8 * 2 * 13 * 23},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, memoryNeed(tc.strategy, tc.r, tc.lossOnly, tc.banded), "%+v", tc)
	}
}

func TestFormatBytes(t *testing.T) {
	assert.Equal(t, "512 bytes", formatBytes(512))
	assert.Equal(t, "1.9 TB", formatBytes(1.92e12))
	assert.Equal(t, "22.9 GB", formatBytes(22.9e9))
}

func TestLineWriter(t *testing.T) {
	var b bytes.Buffer
	lw := &lineWriter{w: &b, prefix: "mfsolve: "}
	_, err := lw.Write([]byte("one\ntw"))
	require.NoError(t, err)
	assert.Equal(t, "mfsolve: one\n", b.String())
	_, err = lw.Write([]byte("o\n"))
	require.NoError(t, err)
	assert.Equal(t, "mfsolve: one\nmfsolve: two\n", b.String())
}

func TestProgressText(t *testing.T) {
	pr := factorize.Progress{Iter: 42, Gap: 3.14159e-8, Tol: 1e-10}
	assert.Equal(t, "mfsolve: optimal R=800  iteration 42  gap 3.14e-08 (target 1e-10)  2.5 s",
		progressText("optimal R=800", pr, true, 2500*time.Millisecond))
	assert.Equal(t, "mfsolve: tree R=9  computing  0.7 s",
		progressText("tree R=9", factorize.Progress{}, false, 700*time.Millisecond))
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestProgressLine(t *testing.T) {
	var out syncBuffer
	p := startProgress(&out, "optimal R=5", 0, time.Millisecond)
	p.update(factorize.Progress{Iter: 7, Gap: 1e-3, Tol: 1e-10})
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "iteration 7") }, 10*time.Second, time.Millisecond)
	p.finish()
	s := out.String()
	assert.True(t, strings.HasPrefix(s, "\r"), "%q", s)
	assert.True(t, strings.HasSuffix(s, "\r\x1b[K"), "line erased at the end: %q", s)
	assert.NotContains(t, s, "\n")

	// A solve that ends before the delay prints nothing.
	var quiet syncBuffer
	q := startProgress(&quiet, "optimal R=5", time.Hour, time.Millisecond)
	q.finish()
	assert.Empty(t, quiet.String())
}

func TestProgressLineWarning(t *testing.T) {
	// A warning while the line is shown erases it first, so the warning
	// starts at the beginning of a clean line.
	var out syncBuffer
	p := startProgress(&out, "optimal R=5", 0, time.Millisecond)
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "computing") }, 10*time.Second, time.Millisecond)
	lw := &lineWriter{w: p, prefix: "mfsolve: "}
	_, err := lw.Write([]byte("cache warning\n"))
	require.NoError(t, err)
	p.finish()
	assert.Contains(t, out.String(), "\r\x1b[Kmfsolve: cache warning\n")
}
