//go:build unix

package npy

import (
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// allocated returns the bytes of disk the file at path takes.
func allocated(t *testing.T, path string) (int64, bool) {
	fi, err := os.Stat(path)
	require.NoError(t, err)
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int64(st.Blocks) * 512, true
}
