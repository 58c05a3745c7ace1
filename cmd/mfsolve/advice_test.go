package main

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dpmf/dpmf/internal/cli"
)

// rerunTol matches the strategy spec with a tol that a failed run
// advises, and the tol.
var rerunTol = regexp.MustCompile(`rerun with -strategy ([a-z-]+:[^\s,]+(?:,[^\s,]+)*)`)

// advisedTol matches the tol setting in a spec.
var advisedTol = regexp.MustCompile(`tol=([0-9.e+-]+)`)

// withFlag returns args with flag set to value (replaced if present).
func withFlag(args []string, flag, value string) []string {
	out := slices.Clone(args)
	if i := slices.Index(out, flag); i >= 0 {
		out[i+1] = value
		return out
	}
	return append(out, flag, value)
}

// Every solver failure advises a strategy spec that mfsolve accepts and
// that works: the banded solver at small band counts under min-separation
// (which once advised a tolerance that mfsolve refused for banded), the
// fixed-epoch and the single-participation optimal solvers, each at the
// default target, at a target below rounding (a stall or a floor) and with
// too few iterations. A run either succeeds with a certified gap within
// its target or fails with one error line whose "rerun with -strategy
// SPEC" succeeds, certified to SPEC's tol.
func TestAdvisedFlagsWork(t *testing.T) {
	var cases [][]string
	for _, r := range []int{20, 60, 200} {
		for _, b := range []int{1, 2, 3} {
			cases = append(cases, []string{"-R", strconv.Itoa(r), "-strategy", "banded:bands=" + strconv.Itoa(b), "-participation", "minsep:" + strconv.Itoa(b)})
		}
	}
	cases = append(cases,
		[]string{"-R", "12", "-strategy", "optimal", "-participation", "epochs:3"},
		[]string{"-R", "32", "-strategy", "optimal", "-participation", "epochs:16"},
		[]string{"-R", "50", "-strategy", "optimal"},
		[]string{"-R", "40", "-strategy", "semiseparable:buffers=2"},
	)
	for _, base := range cases {
		base = append(base, "-json", "-no-cache")
		for _, extra := range []string{"", "tol=1e-17", "max-iter=2"} {
			args := slices.Clone(base)
			if extra != "" {
				sep := ":"
				if strings.Contains(args[3], ":") {
					sep = ","
				}
				args[3] += sep + extra
			}
			tol := 1e-8
			if m := advisedTol.FindStringSubmatch(args[3]); m != nil {
				tol, _ = strconv.ParseFloat(m[1], 64)
			} else if !strings.HasPrefix(args[3], "banded") {
				tol = 1e-10
			}
			res := runT(t, args...)
			if res.code == cli.ExitOK {
				gap := parseJSON(t, res.stdout)["gap"].(float64)
				assert.LessOrEqual(t, gap, tol, "%v", args)
				continue
			}
			requireOneErrorLine(t, res.stderr, "rerun with")
			m := rerunTol.FindStringSubmatch(res.stderr)
			require.NotNil(t, m, "%v: %s", args, res.stderr)
			mt := advisedTol.FindStringSubmatch(m[1])
			require.NotNil(t, mt, "%v: %s", args, res.stderr)
			advised, err := strconv.ParseFloat(mt[1], 64)
			require.NoError(t, err)
			again := withFlag(args, "-strategy", m[1])
			res = runT(t, again...)
			require.Equal(t, cli.ExitOK, res.code, "%v: %s", again, res.stderr)
			assert.LessOrEqual(t, parseJSON(t, res.stdout)["gap"].(float64), advised, "%v", again)
		}
	}
}

// The tol and max-iter settings reach the banded solver under
// min-separation, and are refused with a reason where nothing would read
// them; the removed flags say which spec to write.
func TestBandedTolSettings(t *testing.T) {
	res := runT(t, "-R", "60", "-strategy", "banded:bands=2,tol=1e-3", "-participation", "minsep:2", "-json", "-no-cache")
	require.Equal(t, cli.ExitOK, res.code, res.stderr)
	loose := parseJSON(t, res.stdout)
	assert.LessOrEqual(t, loose["gap"].(float64), 1e-3)
	assert.Greater(t, loose["gap"].(float64), 1e-8, "the default target 1e-8 was used")
	res = runT(t, "-R", "60", "-strategy", "banded:bands=2,tol=1e-3")
	require.Equal(t, cli.ExitUsage, res.code)
	requireOneErrorLine(t, res.stderr, "-strategy banded:bands=2,tol=1e-3: want tol and max-iter only under participation minsep:B")
	res = runT(t, "-R", "60", "-strategy", "bsr:max-iter=9")
	require.Equal(t, cli.ExitUsage, res.code)
	requireOneErrorLine(t, res.stderr, "-strategy bsr:max-iter=9: want a setting that bsr takes (bands), not max-iter")
}
