package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/accountant"
	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/internal/cli"
)

type result struct {
	code           int
	stdout, stderr string
}

func runOfl(t *testing.T, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, env{
		stdout: &out, stderr: &errb,
		randomSeed: func() (uint64, error) { return 99, nil },
	})
	return result{code, out.String(), errb.String()}
}

// requireOneErrorLine checks that stderr is one line "ofl: ..." containing
// want.
func requireOneErrorLine(t *testing.T, stderr, want string) {
	t.Helper()
	if !strings.HasPrefix(stderr, "ofl: ") || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, want) {
		t.Errorf("stderr %q, want one line \"ofl: ...%s...\"", stderr, want)
	}
}

// small is a fast configuration.
var small = []string{"-learners", "3", "-tau", "2", "-rounds", "30", "-dim", "5", "-reps", "3", "-eval-every", "10", "-seed", "7"}

// smallWith returns small with the flags of kv (name, value, ...) set:
// replaced where small has them (ofl refuses a flag given twice), added
// otherwise.
func smallWith(kv ...string) []string {
	out := slices.Clone(small)
	for i := 0; i+1 < len(kv); i += 2 {
		if j := slices.Index(out, kv[i]); j >= 0 {
			out[j+1] = kv[i+1]
		} else {
			out = append(out, kv[i], kv[i+1])
		}
	}
	return out
}

func TestUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-bogus"}, "flag provided but not defined"},
		{[]string{"-algo", "sgd"}, `-algo "sgd"`},
		{[]string{"-calibration", "rdp"}, `-calibration "rdp"`},
		{[]string{"-strategy", "magic"}, `-strategy magic: want one of identity`},
		{[]string{"-strategy", "blt:bands=2"}, "-strategy blt:bands=2: want a setting that blt takes (buffers), not bands"},
		{[]string{"-strategy", "blt-2"}, "-strategy blt-2: want one of identity"},
		{[]string{"-strategy", "banded:tol=1e-6"}, "-strategy banded:tol=1e-6: want tol and max-iter only under participation minsep:B"},
		{[]string{"-strategy", "optimal:path=dense", "-epochs", "2"}, "-strategy optimal:path=dense: want path only under single participation or minsep:B, not epochs:2"},
		{[]string{"-algo", "independent", "-strategy", "sqrt"}, "-strategy applies to -algo correlated and baseline-correlated only"},
		{[]string{"-eps", "0"}, "-eps 0"},
		{[]string{"-eps", "NaN"}, "-eps NaN"},
		{[]string{"-delta", "1"}, "-delta 1"},
		{[]string{"-algo", "nonprivate", "-eps", "1"}, "private algorithms only"},
		{[]string{"-learners", "0"}, "-learners 0"},
		{[]string{"-rounds", "-3"}, "-rounds -3"},
		{[]string{"-reps", "0"}, "-reps 0"},
		{[]string{"-eval-every", "0"}, "-eval-every 0"},
		{[]string{"-workers", "-1"}, "-workers -1"},
		{[]string{"-eta", "-1"}, "-eta -1: want"},
		{[]string{"-eta-g", "0"}, "-eta-g 0: want"},
		// Each step finite, the product overflows: a runtime error (exit 1)
		// naming no flag, before fedopt.Config.CheckSteps.
		{[]string{"-eta", "1e308"}, "-eta 1e+308: want steps with max(eta, eta eta_g, eta_ind) tau max(B_g, 1) at most"},
		{[]string{"-eta", "1e308", "-tau", "1"}, "-eta 1e+308: want steps"},
		{[]string{"-eta-g", "1e307", "-eta", "1"}, "-eta-g 1e+307: want steps"},
		{[]string{"-algo", "independent", "-eta-ind", "1e308"}, "-eta-ind 1e+308: want steps"},
		{[]string{"-clip", "0"}, "-clip 0: want"},
		{[]string{"-algo", "nonprivate", "-clip", "1e-400"}, `invalid value "1e-400" for flag -clip: nonzero but below the float64 range`},
		// Before, read as 4.9e-324, about twice the target.
		{[]string{"-delta", "2.5e-324"}, `invalid value "2.5e-324" for flag -delta: positive but below the smallest float64 (4.9e-324)`},
		{[]string{"-algo", "independent", "-eta-ind", "1e-400"}, `invalid value "1e-400" for flag -eta-ind: nonzero`},
		{[]string{"-l2", "-1"}, "-l2 -1"},
		{[]string{"-eta-ind", "0.1"}, "-eta-ind applies to -algo independent and baseline-correlated only"},
		{[]string{"-data", "synthetic:alpha=x"}, "synthetic:alpha=A,beta=B"},
		{[]string{"-data", "synthetic:gamma=1"}, "synthetic:alpha=A,beta=B"},
		// Before, the last of a flag given twice silently won.
		{[]string{"-eps", "1", "-eps", "8"}, `invalid value "8" for flag -eps: given twice (first "1"): give each flag once`},
		// Before, 1e-400 was read as alpha = 0, silently other data.
		{[]string{"-data", "synthetic:alpha=1e-400"}, `-data "synthetic:alpha=1e-400": want synthetic:alpha=A,beta=B`},
		// Before, beta = 1e150 (or 1e5) was taken and the reference
		// minimiser failed later, naming the data set, not the flag.
		{[]string{"-data", "synthetic:beta=1e150"}, `-data "synthetic:beta=1e150": beta 1e+150, want 0 <= beta <= 1000`},
		{[]string{"-data", "synthetic:alpha=0.1,beta=1000.5"}, `-data "synthetic:alpha=0.1,beta=1000.5": beta 1000.5, want 0 <= beta <= 1000`},
		{[]string{"-data", ""}, "-data is empty"},
		{[]string{"-data", "x.csv", "-dim", "3"}, "-dim applies to synthetic data only"},
		{[]string{"-split", "label"}, "-split applies to CSV data only"},
		{[]string{"-data", "x.csv", "-split", "random"}, `-split "random"`},
		{[]string{"-dim", "0"}, "-dim 0"},
		{[]string{"out"}, `unknown command "out": want reproduce, server, learner or evaluate, or flags only`},
		{[]string{"serve", "-insecure"}, `unknown command "serve"`},
		{[]string{"-rounds", "5", "out"}, `unexpected argument "out" (flags start with -)`},
	} {
		r := runOfl(t, c.args...)
		if r.code != cli.ExitUsage {
			t.Errorf("%v: exit %d, want %d (stderr %q)", c.args, r.code, cli.ExitUsage, r.stderr)
		}
		requireOneErrorLine(t, r.stderr, c.want)
	}
}

func TestHelp(t *testing.T) {
	r := runOfl(t, "-h")
	if r.code != cli.ExitOK || !strings.Contains(r.stdout, "Example") || !strings.Contains(r.stdout, "-calibration") {
		t.Errorf("-h: exit %d, stdout %q", r.code, r.stdout)
	}
	// A help that cannot be written is a failure (ofl -h > /dev/full
	// exited 0), on every path that prints one.
	for _, args := range [][]string{{"-h"}, {"reproduce", "-h"}, {"evaluate", "-h"}, {"server", "-h"}, {"learner", "-h"}} {
		var errb bytes.Buffer
		code := run(context.Background(), args, env{stdout: failingWriter{}, stderr: &errb})
		if code != cli.ExitFailure || !strings.HasSuffix(errb.String(), ": no space left on device\n") {
			t.Errorf("%q to a full stdout: exit %d, stderr %q; want 1 and the write's error", args, code, errb.String())
		}
	}
}

func TestRuntimeErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(bad, []byte("label,a,b\n1,2,3\n-1,2,Inf\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cancer := filepath.Join("..", "..", "testdata", "breast_cancer.csv")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-data", filepath.Join(dir, "missing.csv")}, "ofl: -data " + filepath.Join(dir, "missing.csv") + ": no such file or directory (want synthetic, synthetic:alpha=A,beta=B or a CSV file)\n"},
		{[]string{"-data", "synthtic"}, "ofl: -data synthtic: no such file or directory (want synthetic, synthetic:alpha=A,beta=B or a CSV file)\n"},
		{[]string{"-data", bad}, "ofl: -data " + bad + ":3: feature 2 (b)"},
		{[]string{"-data", dir}, "ofl: -data " + dir + ": "},
		{[]string{"-data", cancer}, "ofl: -data " + cancer + ": 569 samples, need learners x rounds x tau = 10 x 800 x 10 = 80000"},
		{append([]string{"-out", filepath.Join(bad, "sub")}, small...), "-out"},
	} {
		r := runOfl(t, c.args...)
		if r.code != cli.ExitFailure {
			t.Errorf("%v: exit %d, want %d (stderr %q)", c.args, r.code, cli.ExitFailure, r.stderr)
		}
		requireOneErrorLine(t, r.stderr, c.want)
	}
}

// A small run writes rounds.csv and one JSON object whose noise_std is the
// accountant's for the sensitivity 2 gamma B_g / n.
func TestRunJSONAndRounds(t *testing.T) {
	dir := t.TempDir()
	r := runOfl(t, append([]string{"-out", dir, "-json", "-strategy", "sqrt-normalized"}, small...)...)
	if r.code != cli.ExitOK || r.stderr != "" {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	var js map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &js); err != nil || strings.Count(r.stdout, "\n") != 1 {
		t.Fatalf("stdout %q is not one JSON object: %v", r.stdout, err)
	}
	for _, k := range []string{"algo", "strategy", "eps", "delta", "noise_std", "learners", "tau", "rounds", "reps", "final_loss_error_mean", "final_loss_error_std", "final_regret_mean", "seconds"} {
		if _, ok := js[k]; !ok {
			t.Errorf("JSON has no %q: %s", k, r.stdout)
		}
	}
	w, _ := factorize.Prefix(30)
	f, _ := factorize.SqrtStrategy{Normalized: true}.Factorize(context.Background(), w, factorize.SingleParticipation())
	sens := 2 * f.Metrics.Gamma * 5 / 3 // gamma B_g = 5 (default clip), n = 3
	want, err := accountant.NoiseStd(5, 1e-3, sens, accountant.Exact)
	if err != nil {
		t.Fatal(err)
	}
	if js["algo"] != "correlated" || js["strategy"] != "sqrt-normalized" || js["noise_std"] != want || js["sensitivity"] != sens || js["seed"] != 7.0 {
		t.Errorf("JSON %s, want noise_std %v for sensitivity %v", r.stdout, want, sens)
	}
	data, err := os.ReadFile(filepath.Join(dir, "rounds.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if lines[0]+"\n" != roundsHeader || len(lines) != 1+4 { // rounds 0, 10, 20, 30
		t.Fatalf("rounds.csv:\n%s", data)
	}
	for k, l := range lines[1:] {
		fields := strings.Split(l, ",")
		if fields[0] != strconv.Itoa(10*k) || len(fields) != 8 {
			t.Errorf("row %q", l)
		}
	}
	last := strings.Split(lines[4], ",")
	if v, _ := strconv.ParseFloat(last[1], 64); v != js["final_loss_error_mean"] {
		t.Errorf("final loss error %v in rounds.csv, %v in JSON", v, js["final_loss_error_mean"])
	}
}

// -algo baseline-correlated takes -strategy and -eta-ind and calibrates to
// the baseline's sensitivity times gamma.
func TestBaselineCorrelated(t *testing.T) {
	r := runOfl(t, append([]string{"-json", "-algo", "baseline-correlated", "-strategy", "sqrt", "-eta-ind", "0.01"}, small...)...)
	if r.code != cli.ExitOK || r.stderr != "" {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	var js map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &js); err != nil {
		t.Fatalf("stdout %q: %v", r.stdout, err)
	}
	w, _ := factorize.Prefix(30)
	f, _ := factorize.SqrtStrategy{}.Factorize(context.Background(), w, factorize.SingleParticipation())
	sens := 2 * f.Metrics.Gamma * 5 / 3 // gamma B_g = 5 (default clip), n = 3
	if got, _ := js["sensitivity"].(float64); js["algo"] != "baseline-correlated" || js["strategy"] != "sqrt" || math.Abs(got-sens) > 1e-14*sens {
		t.Errorf("JSON %s, want sensitivity %v", r.stdout, sens)
	}
}

// The same seed gives the same file, with any number of workers; another
// seed gives another.
func TestReproducible(t *testing.T) {
	read := func(extra ...string) string {
		dir := t.TempDir()
		r := runOfl(t, append([]string{"-out", dir, "-quiet", "-algo", "independent"}, smallWith(extra...)...)...)
		if r.code != cli.ExitOK {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		b, err := os.ReadFile(filepath.Join(dir, "rounds.csv"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	a, b := read("-workers", "1"), read("-workers", "3")
	if a != b {
		t.Errorf("-workers 1 and 3 differ:\n%s\n%s", a, b)
	}
	if c := read("-seed", "8"); c == a {
		t.Error("seeds 7 and 8 give the same output")
	}
}

func TestNonPrivateAndCSV(t *testing.T) {
	cancer := filepath.Join("..", "..", "testdata", "breast_cancer.csv")
	r := runOfl(t, "-algo", "nonprivate", "-data", cancer, "-split", "label", "-learners", "2", "-tau", "2", "-rounds", "100", "-reps", "1", "-eta", "0.05", "-json", "-seed", "1")
	if r.code != cli.ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var js map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &js); err != nil {
		t.Fatal(err)
	}
	if js["eps"] != nil || js["strategy"] != "none" || js["noise_std"] != 0.0 || js["dim"] != 30.0 {
		t.Errorf("JSON %s", r.stdout)
	}
	// Without -json, one summary line.
	r = runOfl(t, append([]string{"-algo", "nonprivate"}, small...)...)
	if r.code != cli.ExitOK || !strings.HasPrefix(r.stdout, "algo=nonprivate strategy=none n=3") || strings.Count(r.stdout, "\n") != 1 {
		t.Errorf("summary %q", r.stdout)
	}
}

// The defaults run the paper's Fig. 4 setting (slow: 20 x 800 rounds).
func TestDefaults(t *testing.T) {
	if os.Getenv("DPMF_LONG") == "" {
		t.Skip("set DPMF_LONG=1")
	}
	r := runOfl(t, "-json")
	if r.code != cli.ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var js map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &js); err != nil {
		t.Fatal(err)
	}
	if js["learners"] != 10.0 || js["tau"] != 10.0 || js["rounds"] != 800.0 || js["reps"] != 20.0 || js["dim"] != 60.0 || js["strategy"] != "optimal" || js["eps"] != 5.0 {
		t.Errorf("defaults %s", r.stdout)
	}
	t.Log(r.stdout)
}

// -epochs K replays the data K times and calibrates under K fixed epochs:
// for the baseline (C = I) the release's sensitivity is sqrt(K) 2 B_g / n,
// by hand.
func TestEpochs(t *testing.T) {
	r := runOfl(t, append([]string{"-json", "-algo", "independent", "-epochs", "3"}, small...)...)
	if r.code != cli.ExitOK || r.stderr != "" {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	var js map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &js); err != nil {
		t.Fatalf("stdout %q: %v", r.stdout, err)
	}
	want := math.Sqrt(3) * 2 * 5 / 3 // clip 5, n = 3
	if got, _ := js["sensitivity"].(float64); math.Abs(got-want) > 1e-14*want || js["participation"] != "epochs:3" || js["epochs"] != 3.0 || js["rounds"] != 30.0 {
		t.Errorf("JSON %s, want sensitivity %v under epochs:3", r.stdout, want)
	}
	r = runOfl(t, append([]string{"-epochs", "4"}, small...)...)
	if r.code != cli.ExitUsage || !strings.Contains(r.stderr, "-rounds 30 is not a whole number of epochs") {
		t.Errorf("-epochs 4 with 30 rounds: exit %d, stderr %q", r.code, r.stderr)
	}
}

// The banded-inverse and banded Toeplitz strategies run in ofl with the
// settings of their spec, with the noise calibrated to the sensitivity
// 2 gamma B_g / n of the factorization the library computes for the
// strategy value.
func TestBandedInverseStrategies(t *testing.T) {
	w, _ := factorize.Prefix(30)
	for spec, s := range map[string]factorize.Strategy{
		"bisr":                    factorize.BISRStrategy{},
		"bandinv:bands=5":         factorize.BandInvStrategy{Bands: 5},
		"banded-toeplitz:bands=3": factorize.BandedToeplitzStrategy{Bands: 3},
		"blt:buffers=2":           factorize.BLTStrategy{Buffers: 2},
	} {
		name := s.Name()
		r := runOfl(t, append([]string{"-json", "-strategy", spec}, small...)...)
		if r.code != cli.ExitOK || r.stderr != "" {
			t.Fatalf("%s: exit %d, stderr %q", name, r.code, r.stderr)
		}
		var js map[string]any
		if err := json.Unmarshal([]byte(r.stdout), &js); err != nil {
			t.Fatalf("%s: stdout %q: %v", name, r.stdout, err)
		}
		f, err := s.Factorize(context.Background(), w, factorize.SingleParticipation())
		if err != nil {
			t.Fatal(err)
		}
		sens := 2 * f.Metrics.Gamma * 5 / 3
		if got, _ := js["sensitivity"].(float64); js["strategy"] != name || math.Abs(got-sens) > 1e-14*sens {
			t.Errorf("%s: JSON %s, want sensitivity %v", name, r.stdout, sens)
		}
	}
}

// A -split feature past the -data file's features is a usage error naming
// -split, and nothing is written.
func TestSplitFeatureOutOfRange(t *testing.T) {
	cancer := filepath.Join("..", "..", "testdata", "breast_cancer.csv")
	out := filepath.Join(t.TempDir(), "out")
	r := runOfl(t, "-algo", "nonprivate", "-data", cancer, "-split", "feature:30", "-learners", "2", "-tau", "2", "-rounds", "10", "-reps", "1", "-seed", "1", "-out", out)
	if r.code != cli.ExitUsage || r.stdout != "" {
		t.Errorf("exit %d, stdout %q", r.code, r.stdout)
	}
	requireOneErrorLine(t, r.stderr, "ofl: -split feature:30: want a feature index in [0, 30): -data "+cancer+" has 30 features")
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("-out created: %v", err)
	}
}

// An interrupted command reports "interrupted; nothing written" whatever
// failed, except an error that names outputs already in place (a
// *cli.WrittenError: cli.WriteOutputs's, here from a real rename failing
// after another succeeded, or ofl reproduce's), which it reports as it
// is; the server and the learner report their own error.
func TestFailureNamesWhatWasWritten(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.csv"), filepath.Join(dir, "b.csv")
	outA := cli.Output{File: cli.File{Flag: "-out", Path: a}, Perm: 0o644, Write: func(w io.Writer) error { _, err := io.WriteString(w, "a"); return err }}
	outB := cli.Output{File: cli.File{Flag: "-out", Path: b}, Perm: 0o644, Write: func(w io.Writer) error {
		tmp, err := filepath.Glob(filepath.Join(dir, ".b.csv.tmp-*"))
		if err != nil || len(tmp) != 1 {
			return fmt.Errorf("temporary files %v: %v", tmp, err)
		}
		return os.Remove(tmp[0])
	}}
	written := cli.WriteOutputs(context.Background(), io.Discard, "ofl: ", outA, outB)
	if _, err := os.Stat(a); err != nil {
		t.Fatalf("a.csv not written: %v (%v)", err, written)
	}
	plain := errors.New("some failure")
	for _, c := range []struct {
		interrupted bool
		cmd         string
		err         error
		want        string
	}{
		{true, "ofl", written, written.Error()},
		{true, "ofl", fmt.Errorf("reproduce: %w", written), "reproduce: " + written.Error()},
		{true, "ofl evaluate", plain, "interrupted; nothing written"},
		{true, "ofl", plain, "interrupted; nothing written"},
		{true, "ofl server", plain, "some failure"},
		{false, "ofl", plain, "some failure"},
	} {
		if got := failure(c.interrupted, c.cmd, c.err).Error(); got != c.want {
			t.Errorf("%s (interrupted %v) %q: reports %q, want %q", c.cmd, c.interrupted, c.err, got, c.want)
		}
	}
	if !strings.HasSuffix(written.Error(), "(-out "+a+" already written)") {
		t.Errorf("the error %q does not name -out %s", written, a)
	}
}

// Synthetic data whose margins overflow float64 (alpha = 1e308: w . a + b
// is Inf - Inf) is one error naming -data, exit status 1, and no -out
// directory; it was an error of the minimiser ("Newton step ...
// condition number +Inf") that named no flag. (A beta large enough for
// the features to overflow is refused as a usage error, above 1000.)
func TestSyntheticOverflowNamesData(t *testing.T) {
	out := filepath.Join(t.TempDir(), "o")
	r := runOfl(t, "-data", "synthetic:alpha=1e308,beta=0.1", "-reps", "1", "-rounds", "4", "-learners", "2", "-tau", "1", "-seed", "1", "-out", out)
	if r.code != cli.ExitFailure {
		t.Errorf("exit %d, want %d (stderr %q)", r.code, cli.ExitFailure, r.stderr)
	}
	requireOneErrorLine(t, r.stderr, "-data synthetic:alpha=1e308,beta=0.1: synthetic(1e+308,0.1): learner 0 drew features whose squared norm")
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("-out %s: %v, want no directory", out, err)
	}
}
