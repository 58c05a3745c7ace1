package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dpmf/dpmf/internal/cli"
)

// sparseNPY writes a .npy file at path whose header declares an n x n
// '<f8' array, in Fortran order or not, and whose data, 8 n^2 bytes, is a
// hole (a sparse file: no disk space used).
func sparseNPY(t *testing.T, path string, n int, fortran bool) {
	t.Helper()
	order := "False"
	if fortran {
		order = "True"
	}
	dict := fmt.Sprintf("{'descr': '<f8', 'fortran_order': %s, 'shape': (%d, %d), }", order, n, n)
	pad := 64 - (10+len(dict)+1)%64
	hdr := dict + strings.Repeat(" ", pad%64) + "\n"
	var b bytes.Buffer
	b.WriteString("\x93NUMPY\x01\x00")
	binary.Write(&b, binary.LittleEndian, uint16(len(hdr)))
	b.WriteString(hdr)
	f, err := os.Create(path)
	require.NoError(t, err)
	_, err = f.Write(b.Bytes())
	require.NoError(t, err)
	require.NoError(t, f.Truncate(int64(b.Len())+8*int64(n)*int64(n)))
	require.NoError(t, f.Close())
}

// TestWorkloadLargerThanMemoryNotLoaded: a -workload file whose header
// declares an array larger than the available memory is refused from
// its header, with one line naming the file, its shape and the memory,
// before its data is read. Before, the whole array was allocated and
// read first (a 70000 x 70000 file, 39 GB, ended in "fatal error: out of
// memory" with a goroutine dump, or the OOM killer), and only then did
// the solver's memory check speak. Here the machine pretends to have
// 64 MB and the file declares 128 MB (256 MB to load in Fortran order,
// which makes a C-order copy); the test measures what the run allocated.
func TestWorkloadLargerThanMemoryNotLoaded(t *testing.T) {
	const n = 4000 // 8 n^2 = 128 MB
	for _, fortran := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "A.npy")
		sparseNPY(t, path, n, fortran)
		var out, errb bytes.Buffer
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		code := run(t.Context(), []string{"-workload", path, "-loss-only", "-no-cache"}, env{
			stdout: &out, stderr: &errb,
			memAvailable: func() (uint64, error) { return 64e6, nil },
		})
		runtime.ReadMemStats(&after)
		assert.Equal(t, cli.ExitFailure, code, errb.String())
		requireOneErrorLine(t, errb.String(), fmt.Sprintf("mfsolve: -workload %s: shape (%d, %d) ", path, n, n))
		assert.Contains(t, errb.String(), "64.0 MB available")
		assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(16<<20), "bytes allocated (fortran_order %v)", fortran)
	}
}
