package main

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dpmf/dpmf/internal/cli"
)

// TestParticipationOfWorkloadFile: a workload file sets R, so a
// -participation is checked against the file's order, whatever the file's
// name. A file not named .npy (as `-workload <(cmd)` gives /dev/fd/63) was
// checked against the default -R 800 instead: epochs:3 on a 9 x 9 workload
// was refused as "800 rounds are not a whole number of 3 epochs". The
// 9 x 9 prefix-sum matrix under epochs:3 is the prefix workload under
// epochs:3, so both runs report the same loss; epochs:4 does not divide 9
// and is refused naming the file's 9 rounds.
func TestParticipationOfWorkloadFile(t *testing.T) {
	dir := t.TempDir()
	var a []float64
	for i := range 9 {
		for j := range 9 {
			a = append(a, map[bool]float64{true: 1, false: 0}[j <= i])
		}
	}
	want := runT(t, "-R", "9", "-participation", "epochs:3", "-strategy", "sqrt", "-json", "-no-cache")
	require.Equal(t, cli.ExitOK, want.code, want.stderr)
	for _, name := range []string{"A.npy", "A.dat", "A"} {
		path := filepath.Join(dir, name)
		writeNPY(t, path, "<f8", "(9, 9)", f8(a...))
		res := runT(t, "-workload", path, "-participation", "epochs:3", "-strategy", "sqrt", "-json", "-no-cache")
		require.Equal(t, cli.ExitOK, res.code, "%s: %s", name, res.stderr)
		assert.Equal(t, parseJSON(t, want.stdout)["loss"], parseJSON(t, res.stdout)["loss"], name)

		res = runT(t, "-workload", path, "-participation", "epochs:4", "-no-cache")
		require.Equal(t, cli.ExitUsage, res.code, "%s: %s", name, res.stderr)
		requireOneErrorLine(t, res.stderr, "9 rounds")
	}
}

// TestSummaryLineOneLineWithControlCharacters: the summary is one line on
// stdout, even for an output file whose name holds a newline (a legal
// Unix name): -o $'a\nb.npy' split it into two lines, the second "b.npy"
// alone. A name with a character that does not print is written as a Go
// quoted string ("a\nb.npy"), which names the file unambiguously; an
// ordinary name is written as it is.
func TestSummaryLineOneLineWithControlCharacters(t *testing.T) {
	dir := t.TempDir()
	odd := filepath.Join(dir, "a\nb.npy")
	res := runT(t, "-R", "3", "-strategy", "identity", "-o", odd, "-no-cache")
	require.Equal(t, cli.ExitOK, res.code, res.stderr)
	assert.Equal(t, 1, strings.Count(res.stdout, "\n"), "%q", res.stdout)
	assert.True(t, strings.HasSuffix(res.stdout, "wrote B (3 x 3) to "+strconv.Quote(odd)+"\n"), "%q", res.stdout)
	plain := filepath.Join(dir, "B é.npy")
	res = runT(t, "-R", "3", "-strategy", "identity", "-o", plain, "-no-cache")
	require.Equal(t, cli.ExitOK, res.code, res.stderr)
	assert.True(t, strings.HasSuffix(res.stdout, "wrote B (3 x 3) to "+plain+"\n"), "%q", res.stdout)
}
