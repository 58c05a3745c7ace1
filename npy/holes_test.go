package npy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dpmf/dpmf/internal/atomicfile"
)

// skipRecorder is a ZeroSkipper that records what it is given: the bytes
// written, with every skip filled in as zeros, and the skips as [offset,
// offset+n) byte ranges.
type skipRecorder struct {
	out   []byte
	skips [][2]int
}

func (r *skipRecorder) Write(p []byte) (int, error) {
	r.out = append(r.out, p...)
	return len(p), nil
}

func (r *skipRecorder) SkipZeros(n int64) error {
	r.skips = append(r.skips, [2]int{len(r.out), len(r.out) + int(n)})
	r.out = append(r.out, make([]byte, n)...)
	return nil
}

// runsToSkip is the brute-force answer: the maximal runs of values whose
// bits are all zero (not -0) that are at least HoleMin long, as byte
// ranges of the data (offset by the header's length).
func runsToSkip(data []float64, header int) [][2]int {
	var runs [][2]int
	for j := 0; j < len(data); {
		if math.Float64bits(data[j]) != 0 {
			j++
			continue
		}
		k := j
		for k < len(data) && math.Float64bits(data[k]) == 0 {
			k++
		}
		if k-j >= HoleMin {
			runs = append(runs, [2]int{header + 8*j, header + 8*k})
		}
		j = k
	}
	return runs
}

// Write on a ZeroSkipper skips exactly the runs of +0 of at least HoleMin
// values (against a brute-force scan), at the start, the end, around the
// boundaries of the blocks it looks into and shorter by one, writes -0,
// and produces the bytes of a plain Write.
func TestWriteNPYSkipsZeroRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	lengths := []int{HoleMin - 1, HoleMin, HoleMin + 1, HoleMin/2 - 1, HoleMin / 2, 3 * HoleMin / 2, 2 * HoleMin, 5 * HoleMin}
	for trial := 0; trial < 200; trial++ {
		var data []float64
		for len(data) < 6*HoleMin {
			switch rng.IntN(3) {
			case 0: // a zero run, sometimes with one -0 inside
				run := make([]float64, lengths[rng.IntN(len(lengths))])
				if rng.IntN(4) == 0 {
					run[rng.IntN(len(run))] = math.Copysign(0, -1)
				}
				data = append(data, run...)
			default:
				for range 1 + rng.IntN(HoleMin) {
					data = append(data, rng.NormFloat64())
				}
			}
		}
		if trial%3 == 0 {
			data = append(data, make([]float64, HoleMin)...) // ends in a run
		}
		var plain bytes.Buffer
		require.NoError(t, Write(&plain, []int{len(data)}, data))
		var rec skipRecorder
		require.NoError(t, Write(&rec, []int{len(data)}, data))
		require.Equal(t, plain.Bytes(), rec.out, "trial %d: bytes", trial)
		if !nativeLittleEndian {
			assert.Empty(t, rec.skips, "big-endian hosts write every value")
			continue
		}
		header := len(npyHeader([]int{len(data)}))
		want := runsToSkip(data, header)
		if len(want) == 0 {
			want = nil
		}
		require.Equal(t, want, rec.skips, "trial %d: skipped ranges", trial)
	}
}

// Save leaves the skipped runs as holes: the file holds the bytes of a
// plain Write, with the right size after a final run (a seek alone does
// not extend a file), reads back bit for bit (-0 included), and where the
// file system makes holes, takes fewer blocks than its size.
func TestSaveNPYLeavesHoles(t *testing.T) {
	dir := t.TempDir()
	const n = 1 << 17 // 1 MiB of data
	for _, c := range []struct {
		name string
		fill func(i int) float64
	}{
		{"zero", func(int) float64 { return 0 }},
		{"first and last values only", func(i int) float64 {
			if i == 0 || i == n-1 {
				return 1
			}
			return 0
		}},
		{"leading value, trailing zeros, a -0 in the middle", func(i int) float64 {
			switch {
			case i == 0:
				return 2
			case i == n/2:
				return math.Copysign(0, -1)
			}
			return 0
		}},
	} {
		data := make([]float64, n)
		for i := range data {
			data[i] = c.fill(i)
		}
		path := filepath.Join(dir, "a.npy")
		require.NoError(t, Save(path, []int{n}, data), c.name)
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		var plain bytes.Buffer
		require.NoError(t, Write(&plain, []int{n}, data))
		require.Equal(t, plain.Bytes(), got, "%s: file content", c.name)
		a, err := Load(path)
		require.NoError(t, err)
		for i, v := range a.Data {
			require.Equal(t, math.Float64bits(data[i]), math.Float64bits(v), "%s: value %d", c.name, i)
		}
		if used, ok := allocated(t, path); ok && makesHoles(t, dir) && nativeLittleEndian {
			assert.Less(t, used, int64(len(got))/2, "%s: %d bytes allocated for %d", c.name, used, len(got))
		}
	}
}

// makesHoles reports whether the file system of dir leaves a hole where a
// file is written past a seek.
func makesHoles(t *testing.T, dir string) bool {
	f, err := os.CreateTemp(dir, "probe")
	require.NoError(t, err)
	defer os.Remove(f.Name())
	defer f.Close()
	_, err = f.Seek(1<<20, io.SeekStart)
	require.NoError(t, err)
	_, err = f.Write([]byte{1})
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	used, ok := allocated(t, f.Name())
	return ok && used < 1<<19
}

// The writer of a write whose context is done refuses to skip.
func TestSkipZerosAfterCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	path := filepath.Join(t.TempDir(), "a.npy")
	err := atomicfile.WriteContext(ctx, path, 0o644, func(w io.Writer) error {
		zs, ok := w.(atomicfile.ZeroSkipper)
		require.True(t, ok, "the writer of atomicfile's writes is a ZeroSkipper")
		require.NoError(t, zs.SkipZeros(8))
		cancel()
		return zs.SkipZeros(8)
	})
	require.ErrorIs(t, err, context.Canceled)
	_, serr := os.Stat(path)
	assert.True(t, errors.Is(serr, os.ErrNotExist), "file written: %v", serr)
}
