package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckOutputs(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	require.NoError(t, os.WriteFile("in.npy", []byte("A"), 0o644))
	require.NoError(t, os.Link("in.npy", "alias.npy"))
	require.NoError(t, os.Mkdir("sub", 0o755))
	in := []File{{"-workload", "in.npy"}}

	assert.NoError(t, CheckOutputs([]File{{"-o", "B.npy"}, {"-C", "sub/B.npy"}}, in))
	for _, tc := range []struct {
		outs  []File
		usage bool
		want  string
	}{
		{[]File{{"-o", ""}}, true, "-o is empty: want a file name"},
		{[]File{{"-o", "-C"}}, true, "-o -C: want a file name, not a flag (write ./-C for one of that name)"},
		{[]File{{"-o", "B.npy"}, {"-noise", "-json"}}, true, "-noise -json: want a file name, not a flag"},
		{[]File{{"-o", "B.npy"}, {"-C", "sub/../B.npy"}}, true, "-o B.npy and -C sub/../B.npy are the same file"},
		{[]File{{"-o", "alias.npy"}}, true, "-o alias.npy is the -workload input file: refusing to overwrite an input"},
		{[]File{{"-o", "in.npy"}}, true, "-o in.npy is the -workload input file"},
		{[]File{{"-o", "none/B.npy"}}, false, "-o none/B.npy: directory none does not exist"},
		{[]File{{"-o", "in.npy/B.npy"}}, false, "-o in.npy/B.npy: in.npy is not a directory"},
		{[]File{{"-o", "sub"}}, false, "-o sub is a directory, want a file name"},
	} {
		err := CheckOutputs(tc.outs, in)
		require.Error(t, err, "%v", tc.outs)
		assert.Contains(t, err.Error(), tc.want)
		assert.Equal(t, tc.usage, ExitCode(err) == ExitUsage, "%v: %v", tc.outs, err)
	}
	// Nothing was created by the checks.
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 3)
}

func TestCheckOutputDir(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	assert.NoError(t, CheckOutputDir("-out", dir))
	assert.NoError(t, CheckOutputDir("-out", filepath.Join(dir, "a", "b", "c")))
	_, err := os.Stat(filepath.Join(dir, "a"))
	assert.True(t, os.IsNotExist(err), "nothing created")

	err = CheckOutputDir("-out", "")
	assert.Equal(t, ExitUsage, ExitCode(err))
	err = CheckOutputDir("-out", "-quick")
	assert.Equal(t, ExitUsage, ExitCode(err))
	assert.EqualError(t, err, "-out -quick: want a directory, not a flag (write ./-quick for one of that name)")
	err = CheckOutputDir("-out", filepath.Join(file, "x", "y"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), file+" is not a directory")
}
