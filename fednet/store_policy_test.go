package fednet

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dpmf/dpmf/internal/testutil"
)

// A FIFO, a device or a directory planted under a state file's name
// (run.json, noise.key, a round file) is refused at once: before, reading
// a FIFO blocked the server forever (SIGTERM could not end it) and a link
// to /dev/zero read without bound.
func TestStoreRefusesNonRegularStateFiles(t *testing.T) {
	plant := map[string]func(path string) error{
		"fifo":      func(p string) error { return testutil.Mkfifo(p, 0o600) },
		"/dev/zero": func(p string) error { return os.Symlink("/dev/zero", p) },
		"directory": func(p string) error { return os.Mkdir(p, 0o700) },
	}
	if !testutil.HaveFIFO {
		delete(plant, "fifo")
	}
	// Each name is planted in a directory that holds a run at round 1
	// (or, for run.json, in an empty one), and the server is restarted.
	reads := map[string]func(dir string) error{
		runFile:      func(dir string) error { return reopen(dir, true) },
		keyFile:      func(dir string) error { return reopen(dir, true) },
		markFile:     func(dir string) error { return reopen(dir, true) },
		roundName(1): func(dir string) error { return reopen(dir, true) },
	}
	for kind, mk := range plant {
		for name, read := range reads {
			dir := t.TempDir()
			if name != runFile {
				newTestState(t, dir, true, 1)
			}
			os.Remove(filepath.Join(dir, name))
			if err := mk(filepath.Join(dir, name)); err != nil {
				t.Skipf("cannot plant a %s: %v", kind, err)
			}
			done := make(chan error, 1)
			go func() { done <- read(dir) }()
			select {
			case err := <-done:
				if err == nil {
					t.Errorf("%s planted as %s: no error", kind, name)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("%s planted as %s: still blocked after 5 s", kind, name)
			}
		}
	}
}

// Zero values and out-of-range arguments are errors (package doc, "Errors
// and panics"): before, the methods of a zero-value Server panicked with a
// nil pointer.
func TestZeroValuesAreErrors(t *testing.T) {
	ctx := context.Background()
	for name, s := range map[string]*Server{"nil": nil, "zero": {}} {
		require.NotPanics(t, func() {
			assert.Error(t, s.Run(ctx), name)
			_, err := s.Join(ctx, nil)
			assert.Error(t, err, name)
			assert.Error(t, s.GetModel(nil, nil), name)
			assert.Error(t, s.SubmitUpdate(nil), name)
			r, x := s.Round()
			assert.Equal(t, 0, r)
			assert.Nil(t, x)
		}, name)
	}
	_, err := ReadRound(t.TempDir(), -1)
	assert.Error(t, err)
}
