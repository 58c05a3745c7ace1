//go:build unix

package fednet

import (
	"os"
	"strings"
	"testing"
)

// TestStateDirWritableByOthers: a server's or a learner's state directory
// that its group or others may write is refused at start, in one line
// naming the directory and what to do: another local user could replace
// the run's record or its released rounds (rewinding the privacy state).
// Before, both started on it.
func TestStateDirWritableByOthers(t *testing.T) {
	for _, mode := range []os.FileMode{0o777, 0o775, 0o1777} {
		dir := t.TempDir()
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		st, err := openState(dir, testOptions(false))
		if err == nil {
			st.lock.Close()
		}
		check := func(who string, err error) {
			t.Helper()
			if err == nil {
				t.Errorf("mode %04o: the %s started", mode, who)
				return
			}
			msg := err.Error()
			if !strings.Contains(msg, dir) || !strings.Contains(msg, "writable by") || !strings.Contains(msg, "chmod go-w") || strings.Contains(msg, "\n") {
				t.Errorf("mode %04o: the %s's error %q", mode, who, msg)
			}
		}
		check("server", err)
		ls, err := openLearnerState(dir, 0)
		if err == nil {
			ls.lock.Close()
		}
		check("learner", err)
	}
	// A private directory, readable by others, is fine.
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	st, err := openState(dir, testOptions(false))
	if err != nil {
		t.Fatalf("mode 0755: %v", err)
	}
	st.lock.Close()
}
