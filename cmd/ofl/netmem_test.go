package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dpmf/dpmf/internal/cli"
)

// "ofl server" and "ofl evaluate" make ofl's memory check: a run too large
// for the machine is refused at once with one line and exit status 1
// (before, a Go stack and exit status 2), and the server creates nothing.
func TestNetMemoryCheck(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	// evaluate takes the run from its state directory's plan.
	big := filepath.Join(t.TempDir(), "big")
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the server stops at once after opening its state
	run(ctx, []string{"server", "-insecure", "-state", big, "-listen", "127.0.0.1:0", "-algo", "nonprivate", "-rounds", "30000", "-learners", "1000", "-tau", "10"}, env{stdout: io.Discard, stderr: io.Discard})
	for _, c := range []struct {
		cmd  string
		args []string
		want string
	}{
		// The correlated noise's factorization: 8 R^2 floats.
		{"server", []string{"-insecure", "-state", state, "-rounds", "100000000"}, "-rounds 100000000, -learners 10, -tau 10, -dim 60 need about "},
		// The models and the round's updates: 8 (n + 6) d bytes.
		{"server", []string{"-insecure", "-state", state, "-algo", "independent", "-dim", "1000000000"}, "-rounds 800, -learners 10, -tau 10, -dim 1000000000 need about "},
		{"evaluate", []string{"-state", big, "-seed", "1"}, "-rounds 30000, -learners 1000, -tau 10, -dim 60 need about "},
	} {
		start := time.Now()
		r := runOflMem(t, 16e9, append([]string{c.cmd}, c.args...)...)
		if r.code != cli.ExitFailure {
			t.Errorf("ofl %s %v: exit %d, want %d", c.cmd, c.args, r.code, cli.ExitFailure)
		}
		requireNetError(t, c.cmd, r.stderr, c.want)
		if !strings.HasSuffix(r.stderr, "this machine has 16.0 GB available; use smaller values\n") {
			t.Errorf("ofl %s %v: %q, want the available memory", c.cmd, c.args, r.stderr)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("ofl %s %v: refused after %v, want at once", c.cmd, c.args, d)
		}
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Errorf("the refused server left %s: %v", state, err)
	}
	// The default server fits in a gigabyte.
	c, err := parseArgs(nil)
	if err != nil {
		t.Fatal(err)
	}
	if need := serverMemoryNeed(c); need > 1e9 {
		t.Errorf("the default server needs %g bytes, want less than 1 GB", need)
	}
}
