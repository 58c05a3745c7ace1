package fednet

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// maxLockHolder is the most of a lock file's text an error quotes: the
// holder writes one short line ("pid 4242 on host since 2026-...").
const maxLockHolder = 256

// lockHolder returns the text of a lock file, of which the caller read at
// most maxLockHolder bytes, as an error quotes it: trimmed, and quoted
// with Go's escapes where it is not one line of printable text (a garbled
// or foreign lock file), so that the error stays one line.
func lockHolder(b []byte) string {
	s := strings.TrimSpace(string(b))
	if !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) {
		return strconv.Quote(s)
	}
	return s
}

// lockLine returns the line a process writes into a lock file it made:
// its pid, host and start time, which an error quotes to the operator,
// and 16 random bytes, so that the line is this process's alone (a second
// process started on the directory after the file was removed writes
// another, even with the same pid at the same second).
func lockLine(now time.Time) []byte {
	host, _ := os.Hostname()
	var nonce [16]byte
	rand.Read(nonce[:]) // never fails (crypto/rand, Go 1.24+)
	return fmt.Appendf(nil, "pid %d on %s since %s (lock %s)\n", os.Getpid(), host, now.UTC().Format(time.RFC3339), hex.EncodeToString(nonce[:]))
}

// holdsLine reports whether the file at path holds exactly line, the one
// this process wrote into the lock file it made: false when the file was
// removed, or replaced by another process's lock file (where no flock(2)
// ties the lock to an open file, the content is what tells them apart).
func holdsLine(path string, line []byte) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	got := make([]byte, len(line)+1)
	n, _ := io.ReadFull(f, got)
	return bytes.Equal(got[:n], line)
}
