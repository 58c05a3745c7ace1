package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dpmf/dpmf/audit"
	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/internal/cli"
	"github.com/dpmf/dpmf/internal/testutil"
)

func runCmd(t *testing.T, args ...string) (int, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	code, err := run(context.Background(), args, &out, &errb)
	return code, out.String(), err
}

func TestReplayCommand(t *testing.T) {
	code, out, err := runCmd(t, "replay", "-rounds", "24", "-learners", "4", "-tau", "2", "-dim", "3", "-dropout", "0.2", "-strategy", "blt", "-participation", "epochs:2", "-json")
	if err != nil || code != 0 {
		t.Fatalf("code %d, err %v, out %s", code, err, out)
	}
	var rep struct {
		OK    bool    `json:"ok"`
		Ratio float64 `json:"ratio"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || !rep.OK || rep.Ratio > 1+1e-12 {
		t.Fatalf("report %+v, %v", rep, err)
	}
}

func TestCanaryCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	code, out, err := runCmd(t, "canary", "-rounds", "50", "-tau", "2", "-canaries", "300", "-strategy", "tree", "-out", dir)
	if err != nil || code != 0 {
		t.Fatalf("code %d, err %v, out %s", code, err, out)
	}
	if !strings.Contains(out, "consistent with the claim") {
		t.Errorf("output %q", out)
	}
	for _, f := range []string{"canary.json", "canary.png", "canary.svg"} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// dpaudit replay -network adds the check that the networked run of D
// releases the in-process models.
func TestReplayNetworkCommand(t *testing.T) {
	code, out, err := runCmd(t, "replay", "-rounds", "24", "-learners", "4", "-tau", "2", "-dim", "3", "-strategy", "blt", "-network")
	if err != nil || code != 0 {
		t.Fatalf("code %d, err %v, out %s", code, err, out)
	}
	if !strings.Contains(out, "ok   networked release") {
		t.Errorf("output %q", out)
	}
}

// dpaudit canary -network runs the audit over gRPC and reports it; its
// scores are those of the in-process audit of the same plan.
func TestCanaryNetworkCommand(t *testing.T) {
	args := []string{"canary", "-rounds", "40", "-tau", "2", "-canaries", "200", "-json"}
	var reps [2]struct {
		Network     bool `json:"network"`
		Violation   bool `json:"violation"`
		AllIterates struct {
			Mu struct {
				Mu float64 `json:"mu"`
			} `json:"mu"`
		} `json:"all_iterates"`
	}
	for k, extra := range [][]string{nil, {"-network"}} {
		code, out, err := runCmd(t, append(args, extra...)...)
		if err != nil || code != 0 {
			t.Fatalf("%v: code %d, err %v, out %s", extra, code, err, out)
		}
		if err := json.Unmarshal([]byte(out), &reps[k]); err != nil {
			t.Fatal(err)
		}
	}
	if reps[0].Network || !reps[1].Network || reps[1].Violation {
		t.Errorf("reports %+v", reps)
	}
	if reps[0].AllIterates.Mu.Mu != reps[1].AllIterates.Mu.Mu {
		t.Errorf("mu-hat %v over gRPC, %v in process", reps[1].AllIterates.Mu.Mu, reps[0].AllIterates.Mu.Mu)
	}
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"audit"},
		{"replay", "-strategy", "nope"},
		{"replay", "-rounds", "0"},
		{"replay", "-participation", "epochs:x"},
		{"canary", "-dropout", "0.1", "-rounds", "10"},
		{"replay", "extra"},
		{"replay", "-network", "-dropout", "0.1", "-rounds", "10"},
	} {
		_, _, err := runCmd(t, args...)
		if cli.ExitCode(err) != cli.ExitUsage {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
}

// A missing or misspelt command is one usage error naming what was given
// and the two commands (it was "usage: dpaudit replay|canary [flags]",
// whatever was given).
func TestUnknownCommand(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "missing command: want replay or canary, as in dpaudit replay [flags] (dpaudit -h for usage)"},
		{[]string{"replya"}, `unknown command "replya": want replay or canary, as in dpaudit replay [flags] (dpaudit -h for usage)`},
		{[]string{"-seed", "1"}, `unknown command "-seed": want replay or canary, as in dpaudit replay [flags] (dpaudit -h for usage)`},
	} {
		_, _, err := runCmd(t, tc.args...)
		if cli.ExitCode(err) != cli.ExitUsage || err.Error() != tc.want {
			t.Errorf("dpaudit %q: %v, want the usage error %q", tc.args, err, tc.want)
		}
	}
}

// -h lists the flags on stdout, as mfsolve, ofl and dpacct do, and
// succeeds (dpaudit -h alone: the usage, also on stdout); a bad flag is
// one usage error, with nothing on stderr.
func TestHelp(t *testing.T) {
	var out, errb bytes.Buffer
	code, err := run(context.Background(), []string{"canary", "-h"}, &out, &errb)
	if code != 0 || err != nil || !strings.HasPrefix(out.String(), "Usage of dpaudit canary:\n") || !strings.Contains(out.String(), "-canaries") || errb.Len() != 0 {
		t.Errorf("-h: code %d, err %v, stdout %q, stderr %q; want the flags on stdout and nothing on stderr", code, err, out.String(), errb.String())
	}
	for _, h := range []string{"-h", "-help", "--help", "help"} {
		out.Reset()
		code, err := run(context.Background(), []string{h}, &out, &errb)
		if code != 0 || err != nil || !strings.HasPrefix(out.String(), "Usage: dpaudit replay ") || !strings.Contains(out.String(), "dpaudit canary -h") {
			t.Errorf("dpaudit %s: code %d, err %v, stdout %q; want the usage on stdout and status 0", h, code, err, out.String())
		}
	}
	errb.Reset()
	if _, err := run(context.Background(), []string{"replay", "-bogus"}, &out, &errb); cli.ExitCode(err) != cli.ExitUsage || errb.Len() != 0 {
		t.Errorf("-bogus: err %v, stderr %q", err, errb.String())
	}
}

// Every bad flag value is refused before any work with one usage error
// (exit status 2) that names the flag: a zero budget, clip or step is not
// replaced by the audit's default, and a nonprivate or ill-fitting plan is
// refused where it enters. No -out directory is created.
func TestBadFlags(t *testing.T) {
	small := []string{"-rounds", "10", "-learners", "2", "-tau", "2", "-dim", "3"}
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"replay", "-eps", "0"}, "-eps 0:"},
		{[]string{"replay", "-eps", "1e-400"}, `invalid value "1e-400" for flag -eps: nonzero but below the float64 range`},
		{[]string{"replay", "-eps", "NaN"}, "-eps NaN:"},
		{[]string{"replay", "-eps", "Inf"}, "-eps +Inf:"},
		{[]string{"replay", "-delta", "0"}, "-delta 0:"},
		{[]string{"replay", "-delta", "1"}, "-delta 1:"},
		// Before, read as 4.9e-324, about twice the target.
		{[]string{"replay", "-delta", "2.5e-324"}, `invalid value "2.5e-324" for flag -delta: positive but below the smallest float64 (4.9e-324)`},
		{[]string{"replay", "-clip", "0"}, "-clip 0:"},
		{[]string{"replay", "-clip", "-1"}, "-clip -1:"},
		{[]string{"replay", "-clip", "1e308"}, "-clip 1e+308 with -learners 2:"},
		{[]string{"replay", "-clip", "1e-310"}, "-clip 1e-310 with -learners 2: the release sensitivity 1e-310"},
		// A normal release sensitivity whose noise std is subnormal
		// (sigma 0.024 at eps 1000), refused by accountant.Scale.
		{[]string{"replay", "-clip", "1e-307", "-learners", "1", "-eps", "1000"}, "-clip 1e-307 with -learners 1 and -eps 1000: the noise std sigma x release sensitivity is below 2.2e-308"},
		{[]string{"replay", "-eta", "0"}, "-eta 0:"},
		{[]string{"replay", "-eta-g", "NaN"}, "-eta-g NaN:"},
		// Each step finite, the product overflows (exit 1 naming no flag
		// before fedopt.Config.CheckSteps).
		{[]string{"replay", "-eta", "1e308"}, "-eta 1e+308: want steps with max(eta, eta eta_g, eta_ind) tau max(B_g, 1) at most"},
		{[]string{"canary", "-eta", "1e308", "-tau", "1"}, "-eta 1e+308: want steps"},
		{[]string{"replay", "-dropout", "1"}, "-dropout 1:"},
		{[]string{"replay", "-dropout", "-0.1"}, "-dropout -0.1:"},
		{[]string{"replay", "-algo", "nonprivate"}, `-algo "nonprivate":`},
		{[]string{"replay", "-strategy", "banded:bands="}, "-strategy banded:bands=: want bands"},
		{[]string{"replay", "-participation", "epochs:3"}, "-participation epochs:3: want a number of epochs"},
		{[]string{"replay", "-participation", "minsep:0"}, "-participation minsep:0: want"},
		{[]string{"replay", "-strategy", "banded:tol=1e-3"}, "-strategy banded:tol=1e-3: want"},
		{[]string{"replay", "-calibration", "nope"}, `-calibration "nope":`},
		// The independent baseline's noise is the identity's: a -strategy
		// given with it was ignored, and the audit reported the identity
		// (ofl refuses the same flags).
		{[]string{"replay", "-algo", "independent", "-strategy", "banded:bands=2"}, "-strategy applies to -algo correlated and baseline-correlated only"},
		{[]string{"canary", "-algo", "independent", "-strategy", "optimal"}, "-strategy applies to -algo correlated and baseline-correlated only"},
		{[]string{"canary", "-canaries", "-1"}, "-canaries -1:"},
		{[]string{"canary", "-canaries", "2"}, "-canaries 2: want 3 to 20"},
		{[]string{"canary", "-canaries", "21"}, "-canaries 21: want 3 to 20"},
		// Fewer slots than n R under the participation: n b = 2 x 4 (the
		// audit's own count, after the calibration; exit 1 before).
		{[]string{"canary", "-rounds", "8", "-participation", "epochs:2", "-canaries", "10"}, "-canaries 10 with -participation epochs:2: want 3 to 8 "},
		{[]string{"canary", "-participation", "minsep:4", "-canaries", "9"}, "-canaries 9 with -participation minsep:4: want 3 to 8 "},
		{[]string{"canary", "-rounds", "1"}, "-learners 2 and -rounds 1: the canary audit needs at least 3 learner-round slots"},
		{[]string{"canary", "-level", "0"}, "-level 0:"},
		{[]string{"canary", "-confidence", "1"}, "-confidence 1:"},
		// A level below 1/2 made a correct run a violation (-level 1e-300).
		{[]string{"canary", "-level", "1e-300"}, "-level 1e-300: want a number in [0.5, 1)"},
		{[]string{"canary", "-confidence", "0.4"}, "-confidence 0.4: want a number in [0.5, 1)"},
		{[]string{"canary", "-out", ""}, "-out is empty"},
		// Above factorize.MaxRounds: refused as a usage error naming the
		// flag's range, not by the memory estimate (exit 1; -rounds
		// 9999999999999 printed "4800000000.0 EB").
		{[]string{"replay", "-rounds", fmt.Sprint(factorize.MaxRounds + 1)}, fmt.Sprintf("-rounds %d: want 1 to %d", factorize.MaxRounds+1, factorize.MaxRounds)},
		{[]string{"canary", "-rounds", fmt.Sprint(factorize.MaxRounds + 1)}, fmt.Sprintf("-rounds %d: want 1 to %d", factorize.MaxRounds+1, factorize.MaxRounds)},
		{[]string{"replay", "-eps", "1", "-eps", "8"}, `invalid value "8" for flag -eps: given twice (first "1")`},
		// Go's integer literals were read: -rounds 0x10 as 16 rounds,
		// -learners 1_0 as 10 (and -tau 010 as octal 8).
		{[]string{"replay", "-rounds", "0x10"}, `invalid value "0x10" for flag -rounds: want a decimal integer`},
		{[]string{"canary", "-learners", "1_0"}, `invalid value "1_0" for flag -learners: want a decimal integer`},
		{[]string{"replay", "-seed", "0o7"}, `invalid value "0o7" for flag -seed: want a decimal integer`},
	} {
		dir := t.TempDir()
		// The case's flags replace the small run's (a flag given twice is
		// an error).
		args := []string{tc.args[0]}
		for i := 0; i < len(small); i += 2 {
			if !slices.Contains(tc.args[1:], small[i]) {
				args = append(args, small[i], small[i+1])
			}
		}
		args = append(args, tc.args[1:]...)
		if tc.args[0] == "canary" && tc.args[1] != "-out" {
			args = append(args, "-out", filepath.Join(dir, "out"))
		}
		code, out, err := runCmd(t, args...)
		if code != 0 || cli.ExitCode(err) != cli.ExitUsage || !strings.HasPrefix(errText(err), tc.flag) || strings.Contains(errText(err), "\n") || out != "" {
			t.Errorf("%q: code %d, err %q, out %q; want a one-line usage error starting %q", tc.args, code, errText(err), out, tc.flag)
		}
		if _, err := os.Stat(filepath.Join(dir, "out")); !os.IsNotExist(err) {
			t.Errorf("%q: -out created (%v)", tc.args, err)
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// An audit too large for the machine's memory is refused before any
// allocation, with one line naming the flags that set its size.
func TestMemoryCheck(t *testing.T) {
	old := memAvailable
	t.Cleanup(func() { memAvailable = old })
	memAvailable = func() (uint64, error) { return 1 << 30, nil } // 1 GiB
	hugeR := "2000000000"
	if strconv.IntSize == 32 {
		hugeR = "100000000"
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		// SolveBytes at R = 2e9 alone is about 1e20 bytes (R = 10^8, 8e16,
		// where int has 32 bits: factorize.MaxRounds is 2^27 - 1 there).
		{[]string{"replay", "-rounds", hugeR, "-learners", "2", "-tau", "2", "-dim", "3"}, "-rounds " + hugeR + ", -learners 2, -dim 3 need about "},
		// 2 R n float64 of dropout schedule and weights: 16 GB.
		{[]string{"replay", "-rounds", "10", "-learners", "100000000", "-tau", "2", "-dim", "3"}, "-rounds 10, -learners 100000000, -dim 3 need about "},
		// 2 R d float64 of released increments and 4 n d of the learners: 22 GB.
		{[]string{"canary", "-rounds", "10", "-learners", "2", "-tau", "2", "-dim", "100000000", "-canaries", "5"}, "-rounds 10, -learners 2, -dim 100000000, -canaries 5 need about "},
	} {
		code, _, err := runCmd(t, tc.args...)
		if code != 0 || cli.ExitCode(err) != cli.ExitFailure || !strings.HasPrefix(errText(err), tc.want) || !strings.HasSuffix(errText(err), "this machine has 1.1 GB available; use smaller values") {
			t.Errorf("%q: code %d, err %q", tc.args, code, errText(err))
		}
	}
}

// canary -out refuses, before the audit, a directory where one of its
// three files may not be replaced, and then writes none of them.
func TestCanaryOutRefused(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "canary.svg"), []byte("old"), 0o444); err != nil {
		t.Fatal(err)
	}
	code, out, err := runCmd(t, "canary", "-rounds", "10", "-learners", "2", "-tau", "2", "-dim", "3", "-out", dir)
	if code != 0 || cli.ExitCode(err) != cli.ExitFailure || !strings.HasPrefix(errText(err), "-out "+filepath.Join(dir, "canary.svg")) || out != "" {
		t.Errorf("code %d, err %q, out %q", code, errText(err), out)
	}
	for _, name := range []string{"canary.json", "canary.png"} {
		if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Errorf("%s written (%v)", name, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "canary.svg")); string(b) != "old" {
		t.Errorf("canary.svg replaced: %q", b)
	}
}

// A cancelled audit (SIGINT, SIGTERM) says so in one line and writes
// nothing.
func TestInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir := filepath.Join(t.TempDir(), "out")
	var out, errb bytes.Buffer
	code, err := run(ctx, []string{"canary", "-rounds", "10", "-learners", "2", "-tau", "2", "-dim", "3", "-out", dir}, &out, &errb)
	if code != 0 || cli.ExitCode(err) != cli.ExitFailure || errText(err) != "interrupted; nothing written" || out.Len() != 0 {
		t.Errorf("code %d, err %v, stdout %q", code, err, out.String())
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("-out created: %v", err)
	}
}

// With -canaries 0 the number of canaries, and with it the canary
// audit's model dimension, is known only once the plan is calibrated: at
// eps = 0.05 the interval needs millions, so the audit plants all n R =
// 4000 slots, and its 2 R m float64 of released increments alone are
// 25.6 MB (30.1 MB in all once the factorization is made; measured 30.8 MB
// at the peak). With 24 MiB available the audit is refused, naming that
// number (before the fix the check assumed 1000 canaries, 16.2 MB with
// the factorization, and the audit ran).
func TestMemoryCheckDefaultCanaries(t *testing.T) {
	old := memAvailable
	t.Cleanup(func() { memAvailable = old })
	memAvailable = func() (uint64, error) { return 24 << 20, nil }
	code, out, err := runCmd(t, "canary", "-rounds", "400", "-learners", "10", "-tau", "1", "-dim", "3", "-eps", "0.05")
	want := "-rounds 400, -learners 10, -dim 3 with -canaries 0 (4000 canaries at this calibration) need about "
	if code != 0 || cli.ExitCode(err) != cli.ExitFailure || !strings.HasPrefix(errText(err), want) || out != "" {
		t.Errorf("code %d, err %q, out %q", code, errText(err), out)
	}
}

// -level accepts every number below 1; at 1 - 2^-53 the interval was
// [-Inf, +Inf] and -json failed ("json: unsupported value: -Inf") after
// the audit had run. Now its ends are finite: z = sqrt 2 erfinv(level),
// about 8.29 standard errors.
func TestCanaryLevelNearOne(t *testing.T) {
	code, out, err := runCmd(t, "canary", "-rounds", "50", "-tau", "1", "-level", "0.9999999999999999", "-json")
	if err != nil || code != 0 {
		t.Fatalf("code %d, err %v", code, err)
	}
	var rep struct {
		All struct {
			Mu struct {
				Mu float64 `json:"mu_hat"`
				Lo float64 `json:"mu_lo"`
				Hi float64 `json:"mu_hi"`
			} `json:"mu"`
		} `json:"all_iterates"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if !(rep.All.Mu.Lo < rep.All.Mu.Mu && rep.All.Mu.Mu < rep.All.Mu.Hi) {
		t.Errorf("interval [%v, %v]", rep.All.Mu.Lo, rep.All.Mu.Hi)
	}
}

// The check made once the plan is solved counts the run, not the
// factorization again: it is already in memory, so what remains available
// no longer includes it. With exactly what the two checks need available
// (the one before the solve with 1000 canaries, the one after with the
// 1595 of (5, 1e-3)), the audit runs; counting the factorization twice
// would refuse it.
func TestMemoryCheckAfterSolve(t *testing.T) {
	args := []string{"canary", "-rounds", "400", "-learners", "10", "-tau", "1", "-dim", "3"}
	before := &options{}
	before.plan = audit.Plan{Learners: 10, Rounds: 400, Tau: 1, Dim: 3}
	var err error
	if before.plan.Strategy, err = factorize.ParseStrategy("optimal"); err != nil {
		t.Fatal(err)
	}
	after := *before
	after.defaultCanaries = 1595
	solve := factorize.SolveBytes(before.plan.Strategy, 400, factorize.SingleParticipation(), true)
	avail := max(memoryNeed("canary", before, false), memoryNeed("canary", &after, false)-solve)
	if memoryNeed("canary", &after, false) <= avail {
		t.Fatalf("no window: the factorization is %v bytes", solve)
	}
	old := memAvailable
	t.Cleanup(func() { memAvailable = old })
	memAvailable = func() (uint64, error) { return uint64(avail), nil }
	code, out, err := runCmd(t, args...)
	if err != nil || code != 0 || !strings.Contains(out, "m=1595 canaries") {
		t.Errorf("code %d, err %v, out %q", code, err, out)
	}
}

// A canary audit with fewer canaries than a mu-hat interval within 10% of
// mu needs says so on stderr (it printed only "consistent with the
// claim", whatever the interval's width): at (5, 1e-3) the number is 1595
// (docs/audit.md), so 1595 canaries give no note and 1594 do; and the
// note's predicted width agrees with the interval the audit reports at 300
// canaries (its half-width is z times an estimated spread, whose relative
// error is about 1/sqrt(2m) = 4%: a 25% tolerance is 6 of those).
func TestCanaryPowerNote(t *testing.T) {
	base := []string{"canary", "-rounds", "200", "-learners", "10", "-tau", "1", "-dim", "3", "-json"}
	note := func(m string) (string, float64) {
		var out, errb bytes.Buffer
		code, err := run(context.Background(), append(base, "-canaries", m), &out, &errb)
		if err != nil || code != 0 {
			t.Fatalf("-canaries %s: code %d, err %v", m, code, err)
		}
		var rep struct {
			AllIterates struct {
				Mu struct {
					Lo float64 `json:"mu_lo"`
					Hi float64 `json:"mu_hi"`
				} `json:"mu"`
			} `json:"all_iterates"`
		}
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatal(err)
		}
		return errb.String(), (rep.AllIterates.Mu.Hi - rep.AllIterates.Mu.Lo) / 2
	}
	if s, _ := note("1595"); s != "" {
		t.Errorf("1595 canaries: stderr %q, want no note", s)
	}
	if s, _ := note("1594"); !strings.HasPrefix(s, "dpaudit: note: 1594 canaries give a mu-hat interval of about +-0.145 at 0.99, 10% of the analytic mu 1.4496 (one within 10% needs 1595 canaries") || strings.Count(s, "\n") != 1 {
		t.Errorf("1594 canaries: stderr %q, want one line noting the 1595 a 10%% interval needs", s)
	}
	s, hw := note("300")
	m := regexp.MustCompile(`about \+-([0-9.]+) at`).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("300 canaries: stderr %q, want the note", s)
	}
	predicted, _ := strconv.ParseFloat(m[1], 64)
	if !(math.Abs(hw/predicted-1) < 0.25) {
		t.Errorf("300 canaries: the note predicts a half-width of %v, the audit's interval has %v", predicted, hw)
	}
}

// A rename of canary -out's files that fails after others are in place
// (here canary.svg's temporary file vanished, and SIGINT came during the
// renames) is reported with the files already written, not as "nothing
// written": the test finds canary.json and canary.png on disk, and the
// error names exactly those. Before, any error of an interrupted run
// read "interrupted; nothing written".
func TestInterruptedAfterSomeWritten(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	old := writeOutputs
	t.Cleanup(func() { writeOutputs = old })
	writeOutputs = func(ctx context.Context, stderr io.Writer, prefix string, outs ...cli.Output) error {
		svg := outs[2]
		write := svg.Write
		outs[2].Write = func(w io.Writer) error {
			tmp, err := filepath.Glob(filepath.Join(filepath.Dir(svg.Path), ".canary.svg.tmp-*"))
			if err != nil || len(tmp) != 1 {
				return fmt.Errorf("temporary files %v: %v", tmp, err)
			}
			if err := os.Remove(tmp[0]); err != nil {
				return err
			}
			return write(w)
		}
		err := old(ctx, stderr, prefix, outs...)
		cancel() // the signal arrives during the renames
		return err
	}
	dir := t.TempDir()
	var out, errb bytes.Buffer
	code, err := run(ctx, []string{"canary", "-rounds", "10", "-learners", "2", "-tau", "2", "-dim", "3", "-canaries", "5", "-out", dir}, &out, &errb)
	for _, name := range []string{"canary.json", "canary.png"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Fatalf("%s not in place: %v", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "canary.svg")); !os.IsNotExist(err) {
		t.Fatalf("canary.svg: %v, want it missing", err)
	}
	want := "(-out " + filepath.Join(dir, "canary.json") + ", -out " + filepath.Join(dir, "canary.png") + " already written)"
	if code != 0 || cli.ExitCode(err) != cli.ExitFailure || !strings.HasPrefix(errText(err), "-out "+filepath.Join(dir, "canary.svg")+": ") || !strings.HasSuffix(errText(err), want) {
		t.Errorf("code %d, err %q; want exit status 1 and an error on canary.svg ending %q", code, errText(err), want)
	}
}

// An audit estimated at more than 10^14 operations is refused before any
// work, as a usage error (exit status 2) of one line naming the flags and
// the estimate, and creates no -out directory; -force runs it (here until
// the deadline cancels it). Before, dpaudit canary -tau 1000000000000 ran
// for years without a word. The estimates, worked by hand from the
// formula of workNeed: canary with m = 1000 canaries (so d = 1000):
// R n tau (d + 32) = 800 * 10 * 1e12 * 1032 = 8.256e18, the rest
// negligible; replay with n = 1e6 learners, R = 10, tau = 1, d = 60: the
// weight probes 2 R n^2 d = 1.2e15 dominate; replay with d = 1e11, R = 10,
// n = 2, tau = 1000: 2 R n tau (d + 32) = 4e15, and the checks'
// (1.5 R + m) R d = 2.5e13, 4.03e15 in all (46.7 days).
func TestWorkCheck(t *testing.T) {
	old := memAvailable
	t.Cleanup(func() { memAvailable = old })
	memAvailable = func() (uint64, error) { return 1 << 50, nil } // the memory check passes
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"canary", "-tau", "1000000000000"}, "-rounds 800, -learners 10, -tau 1000000000000, -dim 60 need about 8.3e+18 operations, 262 years at 10^9 a second"},
		{[]string{"replay", "-learners", "1000000", "-rounds", "10", "-tau", "1"}, "-rounds 10, -learners 1000000, -tau 1, -dim 60 need about 1.2e+15 operations, 13.9 days at 10^9 a second"},
		{[]string{"replay", "-rounds", "10", "-learners", "2", "-dim", "100000000000", "-tau", "1000"}, "-rounds 10, -learners 2, -tau 1000, -dim 100000000000 need about 4e+15 operations, 46.7 days"},
	} {
		dir := filepath.Join(t.TempDir(), "out")
		args := tc.args
		if args[0] == "canary" {
			args = append(args, "-out", dir)
		}
		code, out, err := runCmd(t, args...)
		if r, ok := testutil.IntFlagRefusal(args); ok {
			// -tau 10^12 and -dim 10^11 are no ints on a 32-bit
			// platform: the flag package refuses them, exit 2.
			if code != 0 || cli.ExitCode(err) != cli.ExitUsage || !strings.Contains(errText(err), r) || strings.Contains(errText(err), "\n") || out != "" {
				t.Errorf("%q: code %d, exit %d, err %q; want exit 2 and %q", tc.args, code, cli.ExitCode(err), errText(err), r)
			}
		} else if code != 0 || cli.ExitCode(err) != cli.ExitUsage || !strings.HasPrefix(errText(err), tc.want) || !strings.HasSuffix(errText(err), "use smaller values, or -force to run it all the same") || strings.Contains(errText(err), "\n") || out != "" {
			t.Errorf("%q: code %d, exit %d, err %q; want exit 2 and one line starting %q", tc.args, code, cli.ExitCode(err), errText(err), tc.want)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%q: -out created (%v)", tc.args, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var out, errb bytes.Buffer
	hugeTau := strconv.Itoa(int(min(1_000_000_000_000, int64(math.MaxInt))))
	if _, err := run(ctx, []string{"replay", "-rounds", "10", "-learners", "2", "-dim", "3", "-tau", hugeTau, "-force"}, &out, &errb); errText(err) != "interrupted; nothing written" {
		t.Errorf("-force: err %q, want the audit to run until interrupted", errText(err))
	}
}
