package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// doneAfter is a context that is done (its Err is context.Canceled) as soon
// as the file at path exists: it stands for a SIGINT that arrives between
// the renames of WriteOutputs, after the first output is in place.
type doneAfter struct {
	context.Context
	path string
}

func (c doneAfter) Err() error {
	if _, err := os.Lstat(c.path); err == nil {
		return context.Canceled
	}
	return nil
}

// TestWriteOutputsAllOrNothingWhenCancelledBetweenRenames checks the
// all-or-nothing promise (docs/cli.md, "Output files") against a
// cancellation that comes after the first rename: either every output is
// in place and the call succeeds, or none is and it fails. Before the fix
// the second rename checked ctx again, so B was replaced, C was not, and
// the command reported "interrupted; nothing written".
func TestWriteOutputsAllOrNothingWhenCancelledBetweenRenames(t *testing.T) {
	dir := t.TempDir()
	b, c := filepath.Join(dir, "B.npy"), filepath.Join(dir, "C.npy")
	out := func(flag, path, content string) Output {
		return Output{File: File{flag, path}, Perm: 0o644, Write: func(w io.Writer) error {
			_, err := io.WriteString(w, content)
			return err
		}}
	}
	err := WriteOutputs(doneAfter{context.Background(), b}, io.Discard, "test: ", out("-o", b, "B"), out("-C", c, "C"))
	_, errB := os.Stat(b)
	_, errC := os.Stat(c)
	if err == nil {
		assert.NoError(t, errB, "B in place after a success")
		assert.NoError(t, errC, "C in place after a success")
	} else {
		assert.True(t, os.IsNotExist(errB) && os.IsNotExist(errC), "%v, yet B (%v) or C (%v) was written", err, errB, errC)
	}
	entries, rerr := os.ReadDir(dir)
	require.NoError(t, rerr)
	for _, e := range entries {
		assert.False(t, strings.Contains(e.Name(), ".tmp-"), "temporary file %s left", e.Name())
	}
}

// TestWriteOutputsChecksEveryTargetBeforeRenaming: a destination that has
// become a directory while the outputs were written is found before any
// output is renamed, so the others are not replaced either.
func TestWriteOutputsChecksEveryTargetBeforeRenaming(t *testing.T) {
	dir := t.TempDir()
	b, c := filepath.Join(dir, "B.npy"), filepath.Join(dir, "C.npy")
	require.NoError(t, os.WriteFile(b, []byte("old"), 0o644))
	outB := Output{File: File{"-o", b}, Perm: 0o644, Write: func(w io.Writer) error {
		_, err := io.WriteString(w, "new")
		return err
	}}
	outC := Output{File: File{"-C", c}, Perm: 0o644, Write: func(w io.Writer) error {
		// C's destination turns into a directory after B is prepared.
		if err := os.Mkdir(c, 0o755); err != nil {
			return err
		}
		_, err := io.WriteString(w, "C")
		return err
	}}
	err := WriteOutputs(context.Background(), io.Discard, "test: ", outB, outC)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "-C "+c+" is a directory")
	got, rerr := os.ReadFile(b)
	require.NoError(t, rerr)
	assert.Equal(t, "old", string(got), "B replaced although C could not be")
}

// TestWriteOutputsNamesWhatARenameFailureLeftWritten: a rename that fails
// after another output is in place (here C's temporary file vanished) is a
// *WrittenError that names the output written, so that a command does not
// report "nothing written".
func TestWriteOutputsNamesWhatARenameFailureLeftWritten(t *testing.T) {
	dir := t.TempDir()
	b, c := filepath.Join(dir, "B.npy"), filepath.Join(dir, "C.npy")
	outB := Output{File: File{"-o", b}, Perm: 0o644, Write: func(w io.Writer) error {
		_, err := io.WriteString(w, "B")
		return err
	}}
	outC := Output{File: File{"-C", c}, Perm: 0o644, Write: func(w io.Writer) error {
		tmp, err := filepath.Glob(filepath.Join(dir, ".C.npy.tmp-*"))
		if err != nil || len(tmp) != 1 {
			return fmt.Errorf("temporary files %v: %v", tmp, err)
		}
		if err := os.Remove(tmp[0]); err != nil {
			return err
		}
		_, err = io.WriteString(w, "C")
		return err
	}}
	err := WriteOutputs(context.Background(), io.Discard, "test: ", outB, outC)
	var we *WrittenError
	require.ErrorAs(t, err, &we)
	assert.Equal(t, []string{"-o " + b}, we.Written)
	assert.Contains(t, err.Error(), "-C "+c+": rename temp file")
	assert.Contains(t, err.Error(), "(-o "+b+" already written)")
	got, rerr := os.ReadFile(b)
	require.NoError(t, rerr)
	assert.Equal(t, "B", string(got))
}

// TestWriteOutputsConcurrently: the outputs' temporary files are written
// at the same time (B's Write returns only once C's has started, which
// would never happen one after the other); when several fail, the error
// names the first output in the order given, whichever failed first; the
// outputs after a failed one are stopped; nothing is left behind.
func TestWriteOutputsConcurrently(t *testing.T) {
	const wait = 10 * time.Second
	dir := t.TempDir()
	b, c, z := filepath.Join(dir, "B.npy"), filepath.Join(dir, "C.npy"), filepath.Join(dir, "Z.npy")
	noTemps := func() {
		t.Helper()
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		for _, e := range entries {
			assert.False(t, strings.Contains(e.Name(), ".tmp-"), "temporary file %s left", e.Name())
		}
	}

	started := make(chan struct{})
	outB := Output{File: File{"-o", b}, Perm: 0o644, Write: func(w io.Writer) error {
		select {
		case <-started:
		case <-time.After(wait):
			return errors.New("C's Write did not start while B's ran")
		}
		_, err := io.WriteString(w, "B")
		return err
	}}
	outC := Output{File: File{"-C", c}, Perm: 0o644, Write: func(w io.Writer) error {
		close(started)
		_, err := io.WriteString(w, "C")
		return err
	}}
	require.NoError(t, WriteOutputs(context.Background(), io.Discard, "test: ", outB, outC))
	for p, want := range map[string]string{b: "B", c: "C"} {
		got, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.Equal(t, want, string(got))
	}
	noTemps()

	// C fails at once, B later: B is named.
	cFailed := make(chan struct{})
	outB.Write = func(io.Writer) error {
		select {
		case <-cFailed:
		case <-time.After(wait):
		}
		return errors.New("B failed second")
	}
	outC.Write = func(io.Writer) error {
		defer close(cFailed)
		return errors.New("C failed first")
	}
	err := WriteOutputs(context.Background(), io.Discard, "test: ", outB, outC)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "-o "+b+": ")
	assert.Contains(t, err.Error(), "B failed second")
	noTemps()

	// B fails: C and Z, still writing, are stopped (their writes see a
	// done context) and B is named; the old files stay.
	for _, p := range []string{b, c, z} {
		require.NoError(t, os.WriteFile(p, []byte("old"), 0o644))
	}
	stopped := func(w io.Writer) error {
		chunk := strings.Repeat("x", 1<<14) // past any buffer
		for range int(wait / time.Millisecond) {
			if _, err := io.WriteString(w, chunk); err != nil {
				return err
			}
			time.Sleep(time.Millisecond)
		}
		return errors.New("never stopped")
	}
	outB.Write = func(io.Writer) error { return errors.New("B failed") }
	outC.Write = stopped
	outZ := Output{File: File{"-z", z}, Perm: 0o644, Write: stopped}
	err = WriteOutputs(context.Background(), io.Discard, "test: ", outB, outC, outZ)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "-o "+b+": ")
	assert.Contains(t, err.Error(), "B failed")
	for _, p := range []string{b, c, z} {
		got, rerr := os.ReadFile(p)
		require.NoError(t, rerr)
		assert.Equal(t, "old", string(got), p)
	}
	noTemps()
}

// A Write that panics: the panic reaches WriteOutputs' caller once the
// other outputs are done, and no temporary file is left, neither the
// panicking output's nor the others'.
func TestWriteOutputsPanicInWrite(t *testing.T) {
	dir := t.TempDir()
	b, c := filepath.Join(dir, "B.npy"), filepath.Join(dir, "C.npy")
	outB := Output{File: File{"-o", b}, Perm: 0o644, Write: func(w io.Writer) error {
		_, err := io.WriteString(w, "B")
		return err
	}}
	outC := Output{File: File{"-C", c}, Perm: 0o644, Write: func(io.Writer) error { panic("boom") }}
	require.PanicsWithValue(t, "boom", func() {
		WriteOutputs(context.Background(), io.Discard, "test: ", outB, outC)
	})
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "files left")
}
