package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dpmf/dpmf/internal/atomicfile/atomicfiletest"
	"github.com/dpmf/dpmf/internal/cli"
	"github.com/dpmf/dpmf/internal/testutil"
)

// TestOutputFileOperationFails fails each file operation of the writes of
// -o and -C, of the first output or of the second, one at a time
// (atomicfiletest), and checks what is left: before the first rename a
// failure exits 1 with one line naming the output's flag and file, both
// files keep their old content and no temporary file is left; a second
// rename that fails after the first leaves B new and C old and says so
// ("-o B.npy already written"); a directory sync that fails after the
// renames is ignored (the files are complete and in place).
func TestOutputFileOperationFails(t *testing.T) {
	boom := errors.New("injected failure")
	for _, op := range []string{"create", "chmod", "write", "fsync", "close", "rename", "syncdir"} {
		for _, target := range []string{"B.npy", "C.npy"} {
			if op == "syncdir" && target == "C.npy" {
				continue // one directory: its sync is failed once
			}
			t.Run(op+" "+target, func(t *testing.T) {
				dir := t.TempDir()
				b, c := filepath.Join(dir, "B.npy"), filepath.Join(dir, "C.npy")
				for _, p := range []string{b, c} {
					require.NoError(t, os.WriteFile(p, []byte(oldContents), 0o644))
				}
				var failed atomic.Bool // the outputs are written on two goroutines
				restore := atomicfiletest.FailOps(func(o, path string) error {
					// The temporary file's operations name its path:
					// ".B.npy.tmp-...".
					base := filepath.Base(path)
					if o == op && (base == target || strings.HasPrefix(base, "."+target+".tmp-") || o == "syncdir" && target == "B.npy") && failed.CompareAndSwap(false, true) {
						return boom
					}
					return nil
				})
				res := runIn(t.Context(), filepath.Join(t.TempDir(), "cache"), "-no-cache", "-R", "6", "-strategy", "sqrt", "-o", b, "-C", c)
				restore()
				require.True(t, failed.Load(), "the operation was never made")
				assert.Empty(t, temps(t, dir), "temporary files")
				content := func(p string) string {
					got, err := os.ReadFile(p)
					require.NoError(t, err)
					return string(got)
				}
				flag := map[string]string{"B.npy": "-o", "C.npy": "-C"}[target]
				switch {
				case op == "syncdir":
					require.Equal(t, cli.ExitOK, res.code, res.stderr)
					assert.NotEqual(t, oldContents, content(b))
					assert.NotEqual(t, oldContents, content(c))
				case op == "rename" && target == "C.npy":
					require.Equal(t, cli.ExitFailure, res.code)
					requireOneErrorLine(t, res.stderr, "-C "+c+": ")
					assert.Contains(t, res.stderr, "injected failure (-o "+b+" already written)")
					assert.NotEqual(t, oldContents, content(b), "B is in place")
					assert.Equal(t, oldContents, content(c))
				default:
					require.Equal(t, cli.ExitFailure, res.code)
					requireOneErrorLine(t, res.stderr, "mfsolve: "+flag+" "+filepath.Join(dir, target)+": ")
					assert.Contains(t, res.stderr, "injected failure")
					assert.Equal(t, oldContents, content(b))
					assert.Equal(t, oldContents, content(c))
					assert.Empty(t, res.stdout)
				}
				assert.ElementsMatch(t, []string{"B.npy", "C.npy"}, testutil.DirNames(t, dir))
			})
		}
	}
}
