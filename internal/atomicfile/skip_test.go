package atomicfile

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A write of more than a few writeback chunks, in pieces of every size
// (buffered, larger than the buffer, larger than a write chunk), with
// skipped runs between them and at the end, reads back as the data with
// zeros in the skipped runs, and the file has the full size.
func TestWriteWithSkipsReadsBack(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	type piece struct {
		data []byte
		skip int64
	}
	var pieces []piece
	for _, size := range []int{100, 5 << 20, 3, 9 << 20, 4096, 1 << 20} {
		d := make([]byte, size)
		for i := range d {
			d[i] = byte(1 + rng.IntN(255))
		}
		pieces = append(pieces, piece{d, int64(rng.IntN(3 << 20))})
	}
	pieces[len(pieces)-1].skip = 7 << 20 // ends in a skipped run
	var want []byte
	for _, p := range pieces {
		want = append(append(want, p.data...), make([]byte, p.skip)...)
	}
	path := filepath.Join(t.TempDir(), "big")
	require.NoError(t, Write(path, 0o644, func(w io.Writer) error {
		zs := w.(ZeroSkipper)
		for _, p := range pieces {
			if _, err := w.Write(p.data); err != nil {
				return err
			}
			if err := zs.SkipZeros(p.skip); err != nil {
				return err
			}
		}
		return nil
	}))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, len(want), len(got), "size")
	require.True(t, bytes.Equal(want, got), "content")
	require.Error(t, Write(path, 0o644, func(w io.Writer) error { return w.(ZeroSkipper).SkipZeros(-1) }), "a negative skip")
}
