package main

import (
	"regexp"
	"strings"
)

// tempPath matches the test's directories in a log line.
var tempPath = regexp.MustCompile(`/\S*/(state|link)\b`)

// lastLine returns the last line of log, without the time, the state
// directory named DIR.
func lastLine(log string) string {
	lines := strings.Split(strings.TrimSpace(log), "\n")
	s := lines[len(lines)-1]
	if i := strings.Index(s, "msg="); i >= 0 {
		s = s[i:]
	}
	return tempPath.ReplaceAllString(s, "DIR")
}
