package fednet

import (
	"strconv"
	"strings"
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
