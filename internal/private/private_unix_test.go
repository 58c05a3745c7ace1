//go:build unix

package private

import (
	"errors"
	"fmt"
	"io/fs"
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
		{os.ModeSticky | 0o777, "writable by its group and by others (mode 0777)"}, // sticky: others still create files
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
				t.Errorf("%s mode %v: %v, want private", p, c.mode, err)
			case c.want != "" && (!errors.As(err, &pe) || pe.Path != p || !strings.Contains(err.Error(), c.want)):
				t.Errorf("%s mode %v: %v, want an error saying %q", p, c.mode, err, c.want)
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

// TestCheckDir: a private directory is refused when a directory above it
// is writable by its group or others without the sticky bit, or owned by
// another user (who could rename it away and put their own in its place),
// and accepted under a sticky one of this user or root (as /tmp, which
// t.TempDir is under); the path is checked through symbolic links, both
// where they lead and where they lie. The Error's Path is the directory
// asked about, its Above the directory at fault.
func TestCheckDir(t *testing.T) {
	base := t.TempDir()
	mk := mkdirUnder(t, base)
	safe := mk("safe", "cache")
	open := mk("open")
	inOpen := mk("open", "cache")
	deep := mk("open", "a", "b", "cache")
	if err := os.Symlink(inOpen, filepath.Join(base, "safe", "toopen")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(safe, filepath.Join(open, "tosafe")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(safe, filepath.Join(base, "safe", "tosafe")); err != nil {
		t.Fatal(err)
	}
	check := func(name, dir, above, want string) {
		t.Helper()
		err := CheckDir(dir)
		var pe *Error
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v, want private", name, err)
		case want != "" && !errors.As(err, &pe):
			t.Errorf("%s: %v, want an *Error saying %q", name, err, want)
		case want != "" && (pe.Path != dir || pe.Above != above || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n")):
			t.Errorf("%s: %v (Path %q, Above %q), want Path %q, Above %q, saying %q", name, err, pe.Path, pe.Above, dir, above, want)
		}
	}
	for _, mode := range []os.FileMode{0o700, 0o755} {
		if err := os.Chmod(open, mode); err != nil {
			t.Fatal(err)
		}
		check("private parents", inOpen, "", "")
		check("private parents, deep", deep, "", "")
		check("through a link", filepath.Join(base, "safe", "toopen"), "", "")
	}
	check("t.TempDir", base, "", "")
	check("a link in a private directory to a private one", filepath.Join(base, "safe", "tosafe"), "", "")
	for _, mode := range []os.FileMode{0o777, 0o770, 0o702, 0o775} {
		if err := os.Chmod(open, mode); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("is under %s, which is writable by", open)
		check(fmt.Sprintf("parent %v", mode), inOpen, open, want)
		check(fmt.Sprintf("grandparent %v", mode), deep, open, want)
		check(fmt.Sprintf("linked into parent %v", mode), filepath.Join(base, "safe", "toopen"), open, want)
		check(fmt.Sprintf("a link in parent %v", mode), filepath.Join(open, "tosafe"), open, want)
		if err := CheckDir(inOpen); err == nil || !strings.Contains(err.Error(), "chmod go-w "+open) {
			t.Errorf("parent %v: %v does not say chmod go-w %s", mode, err, open)
		}
	}
	// The sticky bit: others may create entries, not rename ours.
	if err := os.Chmod(open, os.ModeSticky|0o777); err != nil {
		t.Fatal(err)
	}
	check("sticky parent", inOpen, "", "")
	check("sticky grandparent", deep, "", "")
	check("a link in a sticky parent", filepath.Join(open, "tosafe"), "", "")
	check("itself sticky", open, "", "writable by its group and by others (mode 0777)")
	// A parent of another user, sticky or not, and a link of another user
	// in a sticky parent: as root, chown them to uid 4242; else this
	// process pretends to be another uid (so every directory it made is
	// another user's, and the nearest above is named).
	if os.Geteuid() != 0 {
		me := os.Geteuid()
		euid = func() int { return me + 1 }
		defer func() { euid = os.Geteuid }()
		if err := CheckDir(inOpen); err == nil || !strings.Contains(err.Error(), "owned by another user") {
			t.Errorf("directories of another user: %v", err)
		}
		return
	}
	link := filepath.Join(open, "tosafe")
	if err := os.Lchown(link, 4242, -1); err != nil {
		t.Fatal(err)
	}
	check("another user's link in a sticky parent", link, link, "is reached through the symbolic link "+link+", which is owned by another user (uid 4242")
	for _, mode := range []os.FileMode{0o755, os.ModeSticky | 0o777} {
		if err := os.Chmod(open, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(open, 4242, -1); err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("another user's parent %v", mode), inOpen, open, "is under "+open+", which is owned by another user (uid 4242")
	}
	// Root's directories are trusted by every user.
	if err := os.Chown(open, 0, -1); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, os.ModeSticky|0o777); err != nil {
		t.Fatal(err)
	}
	euid = func() int { return 4243 }
	defer func() { euid = os.Geteuid }()
	check("root's directories, root's sticky parent", inOpen, "", "")
	var pe *Error
	if err := CheckDir(filepath.Join(base, "missing")); err == nil || errors.As(err, &pe) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing directory: %v, want fs.ErrNotExist", err)
	}
}

// TestCheckDirLookup: CheckDir checks the path the kernel will look up,
// not a lexical rewrite of it: a link whose target runs through another
// link that lies in a directory others may write (they could point that
// link elsewhere), and a ".." after a link (which leads to the parent of
// the link's target, not back) are refused, naming the directory others
// may write; a name under a file and a loop of links are errors of
// another type, as for os.Stat.
func TestCheckDirLookup(t *testing.T) {
	base := t.TempDir()
	mk := mkdirUnder(t, base)
	link := func(target string, parts ...string) string {
		t.Helper()
		p := filepath.Join(append([]string{base}, parts...)...)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	mk("safe", "cache")
	mk("open", "x")
	mk("open", "cache")
	mk("cache")
	open := filepath.Join(base, "open")
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	// base/l1 -> base/open/l2 -> base/safe: l1/cache resolves to
	// base/safe/cache, but whoever may write base/open may repoint l2.
	link(filepath.Join(base, "safe"), "open", "l2")
	link(filepath.Join(base, "open", "l2"), "l1")
	// A relative link in a chain: base/l3 -> open/l2.
	link(filepath.Join("open", "l2"), "l3")
	// base/lx -> base/open/x: lx/../cache is base/open/cache, not
	// base/cache.
	link(filepath.Join(base, "open", "x"), "lx")
	// base/ls -> base/safe/cache: ls/../cache is base/safe/cache.
	link(filepath.Join(base, "safe", "cache"), "ls")
	file := filepath.Join(base, "safe", "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link("loop", "loop")

	want := fmt.Sprintf("is under %s, which is writable by its group and by others (mode 0777, no sticky bit)", open)
	for _, c := range []struct{ dir, above string }{
		{filepath.Join(base, "l1", "cache"), open},
		{filepath.Join(base, "l3", "cache"), open},
		{filepath.Join(base, "lx") + "/../cache", open},
		{filepath.Join(base, "lx") + "/../x/..", open},
	} {
		err := CheckDir(c.dir)
		var pe *Error
		want := fmt.Sprintf("is under %s, which is writable by its group and by others (mode 0777, no sticky bit)", c.above)
		if !errors.As(err, &pe) || pe.Path != c.dir || pe.Above != c.above || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckDir(%s) = %v, want an *Error with Above %s saying %q", c.dir, err, c.above, want)
		}
	}
	for _, dir := range []string{
		filepath.Join(base, "ls") + "/../cache",
		filepath.Join(base, "ls") + "/..",
		filepath.Join(base, "safe", "cache") + "/./..//cache/",
		// Others may write into open but not move it (base is this
		// user's): ".." out of it leads to base whatever they do.
		open + "/../safe/cache",
	} {
		if err := CheckDir(dir); err != nil {
			t.Errorf("CheckDir(%s) = %v, want private", dir, err)
		}
	}
	// ".." out of a directory of another user in a sticky one: that user
	// may move it away and put a link in its place, and ".." then leads
	// to the parent of the link's target. As root, a directory given to
	// uid 4242; other users cannot make one.
	if os.Geteuid() == 0 {
		sticky := mk("sticky")
		if err := os.Chmod(sticky, os.ModeSticky|0o777); err != nil {
			t.Fatal(err)
		}
		theirs := mk("sticky", "theirs")
		if err := os.Chown(theirs, 4242, -1); err != nil {
			t.Fatal(err)
		}
		dir := theirs + "/../../safe/cache"
		err := CheckDir(dir)
		var pe *Error
		want := "is reached through .. out of " + theirs + ", which is owned by another user (uid 4242"
		if !errors.As(err, &pe) || pe.Path != dir || pe.Above != theirs || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckDir(%s) = %v, want an *Error with Above %s saying %q", dir, err, theirs, want)
		}
	}
	// Relative to the working directory, as the kernel looks it up.
	t.Chdir(base)
	if err := CheckDir("lx/../cache"); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf(`CheckDir("lx/../cache") in %s = %v, want an error saying %q`, base, err, want)
	}
	if err := CheckDir("ls/../cache"); err != nil {
		t.Errorf(`CheckDir("ls/../cache") in %s = %v, want private`, base, err)
	}
	for _, c := range []struct {
		dir  string
		want error
	}{
		{file + "/..", syscall.ENOTDIR},
		{file + "/.", syscall.ENOTDIR},
		{filepath.Join(base, "loop"), syscall.ELOOP},
		{filepath.Join(base, "safe", "missing") + "/..", fs.ErrNotExist},
	} {
		err := CheckDir(c.dir)
		var pe *Error
		if errors.As(err, &pe) || !errors.Is(err, c.want) {
			t.Errorf("CheckDir(%s) = %v, want %v", c.dir, err, c.want)
		}
		if _, serr := os.Stat(c.dir); !errors.Is(serr, c.want) {
			t.Errorf("os.Stat(%s) = %v, want %v (the kernel's answer)", c.dir, serr, c.want)
		}
	}
}

// mkdirUnder returns a function that makes the directory base/parts...
// (and those above it) with mode 0700 and returns its path.
func mkdirUnder(t *testing.T, base string) func(parts ...string) string {
	return func(parts ...string) string {
		t.Helper()
		p := filepath.Join(append([]string{base}, parts...)...)
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
		return p
	}
}
