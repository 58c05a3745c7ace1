package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/internal/cli"
)

// fullStdout fails every write, as stdout redirected to /dev/full does.
type fullStdout struct{}

func (fullStdout) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// TestReportToFullStdout: an audit whose report cannot be printed is a
// failure (exit status 1, one error line with the write's error that
// still gives the verdict), in the text form as in JSON, and with
// canary -out the line says which files are in place. Before, the text
// report's write errors were dropped: dpaudit replay ... > /dev/full
// exited 0 having printed nothing.
func TestReportToFullStdout(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"replay", "-rounds", "12", "-learners", "3", "-tau", "2", "-dim", "3"}, []string{"replay: PASS", "printing the report failed: no space left on device"}},
		{[]string{"replay", "-rounds", "12", "-learners", "3", "-tau", "2", "-dim", "3", "-json"}, []string{"no space left on device"}},
		{[]string{"canary", "-rounds", "10", "-learners", "2", "-tau", "2", "-dim", "3", "-canaries", "5", "-out", dir},
			[]string{"wrote " + filepath.Join(dir, "canary.json"), "printing the report failed: no space left on device"}},
		{[]string{"canary", "-rounds", "10", "-learners", "2", "-tau", "2", "-dim", "3", "-canaries", "5", "-out", dir, "-json"},
			[]string{"wrote " + filepath.Join(dir, "canary.json"), "printing the report failed: no space left on device"}},
	} {
		var errb bytes.Buffer
		code, err := run(context.Background(), tc.args, fullStdout{}, &errb)
		if err == nil || code != 0 || cli.ExitCode(err) != cli.ExitFailure {
			t.Errorf("dpaudit %q to a full stdout: code %d, error %v; want exit status 1", tc.args, code, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("dpaudit %q to a full stdout: error %q, want it to contain %q", tc.args, err, w)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "canary.json")); err != nil {
		t.Error(err)
	}
}
