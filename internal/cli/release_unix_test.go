//go:build unix

package cli

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Outputs that replace existing files, held open across the renames
// (holdReplaced) or not (a write-only file that cannot be opened for
// reading, unless by root), hold the new content afterwards; the old
// content read through a held file is still the old one.
func TestWriteOutputsReplacesHeldFiles(t *testing.T) {
	dir := t.TempDir()
	b, c := filepath.Join(dir, "B.npy"), filepath.Join(dir, "C.npy")
	require.NoError(t, os.WriteFile(b, []byte("old B"), 0o644))
	require.NoError(t, os.WriteFile(c, []byte("old C"), 0o200))
	held := holdReplaced([]Output{{File: File{"-o", b}}, {File: File{"-C", c}}})
	require.NotEmpty(t, held, "B is readable")
	out := func(flag, path, content string) Output {
		return Output{File: File{flag, path}, Perm: 0o644, Write: func(w io.Writer) error {
			_, err := io.WriteString(w, content)
			return err
		}}
	}
	require.NoError(t, WriteOutputs(context.Background(), io.Discard, "test: ", out("-o", b, "new B"), out("-C", c, "new C")))
	for p, want := range map[string]string{b: "new B", c: "new C"} {
		require.NoError(t, os.Chmod(p, 0o644))
		got, err := os.ReadFile(p)
		require.NoError(t, err)
		require.Equal(t, want, string(got))
	}
	old, err := io.ReadAll(held[0])
	require.NoError(t, err)
	require.Equal(t, "old B", string(old), "the held file is the replaced one")
	releaseAll(held)
}
