//go:build unix

package fednet

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStateDirWritableByOthers: a server's or a learner's state directory
// that its group or others may write is refused at start, in one line
// naming the directory and what to do: another local user could replace
// the run's record or its released rounds (rewinding the privacy state).
// Before, both started on it.
func TestStateDirWritableByOthers(t *testing.T) {
	for _, mode := range []os.FileMode{0o777, 0o775, os.ModeSticky | 0o777} {
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
				t.Errorf("mode %v: the %s started", mode, who)
				return
			}
			msg := err.Error()
			if !strings.Contains(msg, dir) || !strings.Contains(msg, "writable by") || !strings.Contains(msg, "chmod go-w") || strings.Contains(msg, "\n") {
				t.Errorf("mode %v: the %s's error %q", mode, who, msg)
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

// TestStateDirUnderWritableParent: a private state directory inside a
// directory that others may write without the sticky bit is refused at
// start too (another user could rename it away and put a directory of
// their own, with a rewound record, in its place), in one line naming the
// directory above and what to do; under a sticky one (as /tmp) it is
// used. Before, only the state directory itself was checked.
func TestStateDirUnderWritableParent(t *testing.T) {
	parent := t.TempDir()
	for i, mode := range []os.FileMode{0o777, 0o775, os.ModeSticky | 0o777} {
		if err := os.Chmod(parent, mode); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(parent, fmt.Sprintf("state%d", i))
		st, err := openState(dir, testOptions(false))
		if err == nil {
			st.lock.Close()
		}
		ls, lerr := openLearnerState(dir+"l", 0)
		if lerr == nil {
			ls.lock.Close()
		}
		for who, err := range map[string]error{"server": err, "learner": lerr} {
			switch msg := fmt.Sprint(err); {
			case mode&os.ModeSticky != 0 && err != nil:
				t.Errorf("mode %v (sticky): the %s refused: %v", mode, who, err)
			case mode&os.ModeSticky == 0 && err == nil:
				t.Errorf("mode %v: the %s started", mode, who)
			case mode&os.ModeSticky == 0 && (!strings.Contains(msg, "is under "+parent+", which is writable by") || !strings.Contains(msg, "chmod go-w "+parent) || strings.Contains(msg, "\n")):
				t.Errorf("mode %v: the %s's error %q", mode, who, msg)
			}
		}
	}
}
