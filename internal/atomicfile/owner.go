package atomicfile

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// A temporary file's name carries its writer: "."+base+".tmp-"+host+"."+
// pid+"."+random, where host is 8 hex digits of the SHA-256 of what
// identifies the writer's pid space (on Linux the host name, the boot's id
// and the pid namespace; elsewhere the host name alone) and pid its
// process id. A later write of the same destination removes a temporary
// file whose writer is provably gone: the same host tag, where the tag
// proves the pid space (Linux), and a pid that no process has. A pid that
// another process has meanwhile taken keeps the file (never the other way
// round): a live writer's file is never removed. A name without writer
// (an older dpmf's: 16 random hex digits alone) or of another host is
// left, and [UnprovenTemps] names it, for the caller to warn.

// owner is this process's writer tag, computed once.
var owner = sync.OnceValues(func() (tag string, provable bool) {
	id, provable := pidSpace()
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:4]), provable
})

// ownerInfix returns "host.pid." for this process.
func ownerInfix() string {
	tag, _ := owner()
	return tag + "." + strconv.Itoa(os.Getpid()) + "."
}

// parseOwner returns the host tag and pid of a temporary file's suffix
// (what follows tempInfix), ok false for a suffix without them.
func parseOwner(suffix string) (tag string, pid int, ok bool) {
	parts := strings.Split(suffix, ".")
	if len(parts) != 3 || len(parts[0]) != 8 {
		return "", 0, false
	}
	if _, err := hex.DecodeString(parts[0]); err != nil {
		return "", 0, false
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil || pid <= 0 {
		return "", 0, false
	}
	return parts[0], pid, true
}

// tempsOf returns the names of the temporary files in dir that may be of
// the destination base: those of base itself, and those whose base was
// cut to fit the name length and is a prefix of base. Regular files only,
// in name order. Every write lists its directory this way: the names
// are read in batches, unsorted and without a stat, and only those that
// pass the name test are examined (os.ReadDir, which makes and sorts an
// entry of every name, took 0.36 s of a write beside 10^5 files;
// BenchmarkWriteBesideEntries).
func tempsOf(dir, base string) ([]string, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	var names []string
	for {
		batch, err := d.Readdirnames(1024)
		for _, n := range batch {
			if !IsTemp(n) {
				continue
			}
			b := n[1:max(1, strings.LastIndex(n, tempInfix))]
			if b == base || len(n) > maxNameBytes-utf8MaxCut && strings.HasPrefix(base, b) {
				names = append(names, n)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	files := names[:0]
	for _, n := range names {
		if fi, err := os.Lstat(filepath.Join(dir, n)); err == nil && fi.Mode().IsRegular() {
			files = append(files, n)
		}
	}
	slices.Sort(files)
	return files, nil
}

// utf8MaxCut is the most bytes a cut at a rune boundary drops beyond the
// room: a name cut short is within this of maxNameBytes.
const utf8MaxCut = 4

// writerGone reports whether the writer of the temporary file name is
// provably gone: its tag is this process's, the tag proves the pid space,
// and no process has its pid. This process's own pid proves nothing (a
// goroutine of this process may be writing it).
func writerGone(name string) bool {
	tag, pid, ok := parseOwner(name[strings.LastIndex(name, tempInfix)+len(tempInfix):])
	mine, provable := owner()
	return ok && provable && tag == mine && pid != os.Getpid() && !processExists(pid)
}

// removeDeadTemps removes the temporary files of the destination path
// whose writer is provably gone (see above), and returns those whose
// writer can be proven neither alive nor gone ([UnprovenTemps]), from the
// same listing. Errors are ignored: a file left is only a file left.
func removeDeadTemps(path string) (unproven []string) {
	dir, names := listTemps(path)
	for _, n := range names {
		if writerGone(n) {
			// Unlinked, never removed as a directory (os.Remove's
			// fallback): the name may have become one since the
			// listing.
			syscall.Unlink(filepath.Join(dir, n))
		}
	}
	return unprovenOf(dir, names)
}

// listTemps returns the directory of the destination path and the names
// of its temporary files in it (tempsOf), none if it cannot be listed.
func listTemps(path string) (dir string, names []string) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	names, err := tempsOf(dir, base)
	if err != nil {
		return dir, nil
	}
	return dir, names
}

// UnprovenTemps returns the temporary files of the destination path
// (beside it, full paths) whose writer can be proven neither alive nor
// gone: names of an older dpmf, without writer, of
// another host (or of this one, where its pid space cannot be proven: not
// on Linux). A killed writer leaves them; a writer on another host may
// still be writing one. The caller warns and names them; nothing removes
// them. Those whose writer is gone are removed by every write of path.
// [PrepareNoting] returns them from the listing that its write makes
// anyway.
func UnprovenTemps(path string) []string {
	return unprovenOf(listTemps(path))
}

// unprovenOf returns, as paths in dir, the temporary files among names
// whose writer is not of this pid space (UnprovenTemps).
func unprovenOf(dir string, names []string) []string {
	mine, provable := owner()
	var out []string
	for _, n := range names {
		// Of this pid space: live (its writer's) or provably gone
		// (removed by the write).
		if tag, _, ok := parseOwner(n[strings.LastIndex(n, tempInfix)+len(tempInfix):]); ok && provable && tag == mine {
			continue
		}
		out = append(out, filepath.Join(dir, n))
	}
	return out
}
