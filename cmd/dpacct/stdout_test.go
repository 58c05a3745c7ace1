package main

import (
	"bytes"
	"context"
	"testing"
)

// TestResultToFullStdout: a result that cannot be printed is a failure
// (dpacct sigma -eps 1 -delta 1e-5 > /dev/full exited 0 with nothing
// written): the command's only output is its line on stdout, so exit 1
// with the write's error on stderr, for the text and the JSON forms.
func TestResultToFullStdout(t *testing.T) {
	for _, args := range [][]string{
		{"sigma", "-eps", "1", "-delta", "1e-5"},
		{"epsilon", "-sigma", "1", "-delta", "1e-5", "-json"},
		{"delta", "-sigma", "1", "-eps", "1"},
	} {
		var errb bytes.Buffer
		code := run(context.Background(), args, fullWriter{}, &errb)
		if code != 1 || errb.String() != "dpacct: no space left on device\n" {
			t.Errorf("dpacct %q to a full stdout: exit %d, stderr %q; want 1 and the write's error", args, code, errb.String())
		}
	}
}
