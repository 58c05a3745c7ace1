//go:build unix

package private

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestCheck: a directory or file of this user is private unless its group
// or others may write it, whatever they may read; one owned by another
// user is not; one owned by root is (ssh trusts root's files too).
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		mode os.FileMode
		want string // "" for private
	}{
		{0o700, ""}, {0o755, ""}, {0o744, ""}, {0o500, ""},
		{0o770, "writable by its group (mode 0770)"},
		{0o702, "writable by others (mode 0702)"},
		{0o777, "writable by its group and by others (mode 0777)"},
		{0o1777, "writable by its group and by others (mode 0777)"}, // sticky: others still create files
	} {
		for _, p := range []string{dir, file} {
			if err := os.Chmod(p, c.mode); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			err = Check(p, fi)
			var pe *Error
			switch {
			case c.want == "" && err != nil:
				t.Errorf("%s mode %04o: %v, want private", p, c.mode, err)
			case c.want != "" && (!errors.As(err, &pe) || pe.Path != p || !strings.Contains(err.Error(), c.want)):
				t.Errorf("%s mode %04o: %v, want an error saying %q", p, c.mode, err, c.want)
			}
		}
		if err := os.Chmod(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(file, 0o600); err != nil {
		t.Fatal(err)
	}
	// A file of another user: as root, a file given to uid 4242; else
	// this process pretends to be another uid.
	if os.Geteuid() == 0 {
		if err := os.Chown(file, 4242, -1); err != nil {
			t.Fatal(err)
		}
	} else {
		me := os.Geteuid()
		euid = func() int { return me + 1 }
		defer func() { euid = os.Geteuid }()
	}
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(file, fi); err == nil || !strings.Contains(err.Error(), "owned by another user") {
		t.Errorf("a file of another user: %v", err)
	}
	// Root's files are trusted by every user.
	euid = func() int { return 4243 }
	defer func() { euid = os.Geteuid }()
	if fi, err := os.Stat("/"); err == nil && fi.Sys().(*syscall.Stat_t).Uid == 0 {
		if err := Check("/", fi); err != nil && strings.Contains(err.Error(), "owned by") {
			t.Errorf("root's /: %v", err)
		}
	}
}
