package fednet

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What the server reads at start is bounded, and what it writes it can
// read back. A run whose run.json would exceed the 1 MiB a restart reads
// (here a library model name of 1.1 MB) is refused at its start, before
// anything is written, naming run.json and the limit. Before, it started,
// and every restart refused its directory as damaged.
func TestRunFileLongerThanReadBackRefused(t *testing.T) {
	r := newRun(t, 2, 4, 1, 3)
	dir := t.TempDir()
	opt := r.options(dir, nil)
	opt.Model.Name = strings.Repeat("m", 1100<<10)
	srv, err := NewServer(opt)
	if err == nil {
		srv.Close()
	}
	require.Error(t, err, "a run whose run.json a restart cannot read started")
	assert.Contains(t, err.Error(), runFile)
	assert.Contains(t, err.Error(), "1048576 a restart reads back")
	assert.NotContains(t, err.Error(), "\n")
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range ents {
		assert.Equal(t, lockFile, e.Name(), "the refused start wrote a state file")
	}
}

// A round file whose header names another dimension than the run's, with
// a (sparse) file of the length that dimension gives and the released
// round's hash at its end, is refused from its header, naming the
// dimension, and the directory is left as it was. Before, the last round
// was read whole, up to 8 MaxWire bytes (17 GB), before its checksum
// failed.
func TestStateRefusesRoundOfAnotherDimension(t *testing.T) {
	dir := t.TempDir()
	newTestState(t, dir, true, 2)
	p := filepath.Join(dir, roundName(2))
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	const dim = 1 << 20 // an 8 MB file: the point is the message, not the size
	head, tail := data[:roundHead], data[len(data)-32:]
	binary.LittleEndian.PutUint64(head[len(roundMagic)+16+8:], dim)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0o644)
	require.NoError(t, err)
	_, err = f.Write(head)
	require.NoError(t, err)
	size := int64(roundHead) + 8*dim + 32
	_, err = f.WriteAt(tail, size-32)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	h, err := store{dir}.readHeader(2)
	require.NoError(t, err, "the forged header is consistent with its file's length")
	require.Equal(t, dim, h.dim)

	refusedRestart(t, dir, "a round file of another dimension", "holds a model of dimension 1048576, the run's is 2")
}

// A lock file held by another process whose text is garbled (lines,
// control bytes, invalid UTF-8, 64 KiB of it) gives the one-line error
// naming the holder, quoting at most 256 bytes of it. Before, its lines
// went into the error as they were.
func TestStateLockHolderGarbled(t *testing.T) {
	dir := t.TempDir()
	st, err := openState(dir, testOptions(false))
	require.NoError(t, err)
	defer st.lock.Close()
	garbage := "pid 1\nrm -rf /\r\x00\xff" + strings.Repeat("z", 64<<10)
	require.NoError(t, os.WriteFile(filepath.Join(dir, lockFile), []byte(garbage), 0o644))
	err = reopen(dir, false)
	require.Error(t, err)
	msg := err.Error()
	assert.Contains(t, msg, "in use by another server")
	assert.NotContains(t, msg, "\n")
	assert.NotContains(t, msg, "\r")
	assert.NotContains(t, msg, "\x00")
	assert.Contains(t, msg, `"pid 1\nrm -rf /\r\x00\xff`)
	assert.Less(t, len(msg), 1024)
}
