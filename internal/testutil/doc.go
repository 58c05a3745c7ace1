package testutil

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// DocClaim is a command quoted in a Markdown file together with output it is
// said to print, so that a test can run the command and keep the text true.
type DocClaim struct {
	// File and Line locate the claim (Line counts from 1).
	File string
	Line int
	// Args are the command's arguments, after its name.
	Args []string
	// Want are the key=value tokens the output must contain.
	Want []string
}

// String gives the claim's place and command, for test messages.
func (c DocClaim) String() string {
	return c.File + ":" + strconv.Itoa(c.Line) + ": " + strings.Join(c.Args, " ")
}

var (
	kvToken   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=\S+$`)
	inlineCmd = regexp.MustCompile("`([a-z]+) ([^`]*)`: `([^`]*)`")
)

// kvTokens returns the leading key=value tokens of s, skipping "..." (an
// elision), up to the first other word.
func kvTokens(s string) []string {
	var kv []string
	for _, f := range strings.Fields(s) {
		if f == "..." {
			continue
		}
		if !kvToken.MatchString(f) {
			break
		}
		kv = append(kv, f)
	}
	return kv
}

// DocClaims returns the claims about the command cmd (for example
// "dpacct") in the Markdown files that glob matches, in three forms:
//
//   - a code line "go run ./cmd/CMD ARGS  # k=v k=v (words)": the output
//     contains the key=value tokens of the comment;
//   - a code line "go run ./cmd/CMD ARGS" followed by a line of key=value
//     tokens: its output;
//   - inline code "`CMD ARGS`: `k=v ... k=v`" in the text ("..." elides).
//
// It fails t if glob matches no file.
func DocClaims(t testing.TB, glob, cmd string) []DocClaim {
	t.Helper()
	files, err := filepath.Glob(glob)
	if err != nil || len(files) == 0 {
		t.Fatalf("no Markdown files match %s (%v)", glob, err)
	}
	var claims []DocClaim
	prefix := "go run ./cmd/" + cmd + " "
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		inCode := false
		for i, line := range lines {
			trimmed := strings.TrimSpace(line)
			if strings.HasPrefix(trimmed, "```") {
				inCode = !inCode
				continue
			}
			if !inCode {
				for _, m := range inlineCmd.FindAllStringSubmatch(line, -1) {
					if m[1] != cmd {
						continue
					}
					if want := kvTokens(m[3]); len(want) > 0 {
						claims = append(claims, DocClaim{File: file, Line: i + 1, Args: strings.Fields(m[2]), Want: want})
					}
				}
				continue
			}
			if !strings.HasPrefix(trimmed, prefix) {
				continue
			}
			command, comment, hasComment := strings.Cut(strings.TrimPrefix(trimmed, prefix), "#")
			var want []string
			if hasComment {
				want = kvTokens(comment)
			} else if i+1 < len(lines) {
				want = kvTokens(lines[i+1])
			}
			if len(want) > 0 {
				claims = append(claims, DocClaim{File: file, Line: i + 1, Args: strings.Fields(command), Want: want})
			}
		}
	}
	return claims
}

// CheckClaim fails t unless output (a line of key=value tokens, possibly
// followed by words) holds every token of c.Want, except those whose key is
// in vary (such as seconds), whose presence alone is checked.
func CheckClaim(t testing.TB, c DocClaim, output string, vary ...string) {
	t.Helper()
	got := map[string]string{}
	for _, line := range strings.Split(output, "\n") {
		for _, kv := range kvTokens(line) {
			k, v, _ := strings.Cut(kv, "=")
			got[k] = v
		}
	}
	for _, kv := range c.Want {
		k, v, _ := strings.Cut(kv, "=")
		g, ok := got[k]
		switch {
		case !ok:
			t.Errorf("%v: the doc quotes %s, the output has no %s: %q", c, kv, k, output)
		case g != v && !slices.Contains(vary, k):
			t.Errorf("%v: the doc quotes %s, the command prints %s=%s", c, kv, k, g)
		}
	}
}
