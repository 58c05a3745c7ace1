package fednet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Where no flock(2) ties a lock to an open file (lock_other.go), a process
// tells its own lock file from a second process's by the line it wrote:
// holdsLine is true for that line alone, and false once the file is
// removed or replaced by another process's, even one with the same pid
// started in the same second (the random part differs), or with a byte
// more. Before, the check there was only that a file of the lock's name
// existed, which a second server's lock file is: a server whose lock file
// was removed and made again by a second server went on writing.
func TestHoldsLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), lockFile)
	now := time.Date(2026, 11, 28, 5, 0, 0, 0, time.UTC)
	mine, theirs := lockLine(now), lockLine(now)
	if string(mine) == string(theirs) {
		t.Fatalf("two lock lines of one process at one time are equal: %q", mine)
	}
	if s := lockHolder(mine); strings.ContainsAny(s, "\"\n") || !strings.Contains(s, "since 2026-11-28T05:00:00Z") {
		t.Errorf("lock line as an error quotes it: %q", s)
	}
	for _, tc := range []struct {
		name    string
		content []byte // nil: no file
		want    bool
	}{
		{"this process's", mine, true},
		{"no file", nil, false},
		{"another process's", theirs, false},
		{"one byte more", append(append([]byte(nil), mine...), 'x'), false},
		{"one byte less", mine[:len(mine)-1], false},
		{"empty", []byte{}, false},
	} {
		os.Remove(path)
		if tc.content != nil {
			if err := os.WriteFile(path, tc.content, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if got := holdsLine(path, mine); got != tc.want {
			t.Errorf("%s: holdsLine = %v, want %v", tc.name, got, tc.want)
		}
	}
}
