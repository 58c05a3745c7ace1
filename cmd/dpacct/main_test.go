package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/accountant"
	"github.com/dpmf/dpmf/internal/testutil"
)

// runCmd runs dpacct with args and returns its exit status and outputs.
func runCmd(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("output %q is not JSON: %v", s, err)
	}
	return m
}

func TestPublishedValues(t *testing.T) {
	// Published exact sigmas (notes.md section 4) and the published
	// composition eps = 91.8172896246637 for sigma = 1, k = 100, delta = 1e-5.
	for _, c := range []struct {
		eps, delta string
		sigma      float64
	}{{"1", "1e-5", 3.73063163}, {"5", "1e-3", 0.68984233}, {"0.5", "1e-6", 8.05761848}, {"2", "1e-5", 1.99381245}} {
		code, out, errs := runCmd("sigma", "-eps", c.eps, "-delta", c.delta, "-json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		if got := decode(t, out)["sigma"].(float64); math.Abs(got-c.sigma) > 5e-9 {
			t.Errorf("sigma(%s, %s) = %v, want %v", c.eps, c.delta, got, c.sigma)
		}
	}
	code, out, _ := runCmd("epsilon", "-sigma", "1", "-delta", "1e-5", "-compositions", "100", "-json")
	if got := decode(t, out)["eps"].(float64); code != 0 || math.Abs(got-91.8172896246637) > 1e-9 {
		t.Errorf("epsilon = %v (exit %d), want 91.8172896246637", got, code)
	}
	// delta at the root sigma for (1, 1e-5), 3.73063163481594 to 15 digits
	// (bisection on the curve in mpmath at 60 digits), is 1e-5; the 15
	// digits and delta's slope d log delta / d log sigma ~ -16 leave 1e-13.
	code, out, _ = runCmd("delta", "-sigma", "3.73063163481594", "-eps", "1", "-json")
	if got := decode(t, out)["delta"].(float64); code != 0 || math.Abs(got-1e-5) > 1e-12*1e-5 {
		t.Errorf("delta = %v (exit %d), want 1e-5", got, code)
	}
}

// TestSampled checks -sampling against the published PLD values (notes.md
// section 7): q = 0.2, sigma = 0.5, 3 steps, delta(1) = 0.15594 (a
// pessimistic published estimate of the true 0.1559327758, see
// accountant's TestPLDPublishedPoisson), and q = 1, sigma = sqrt(3), 3 steps,
// delta(1) = 0.126936.
func TestSampled(t *testing.T) {
	for _, c := range []struct {
		q, sigma   string
		want, tol  float64
		truthBelow float64
	}{{"0.2", "0.5", 0.15594, 1e-5, 0.1559327758}, {"1", "1.7320508075688772", 0.126936, 1e-6, 0.12693673750}} {
		code, out, errs := runCmd("delta", "-sigma", c.sigma, "-eps", "1", "-sampling", c.q, "-steps", "3", "-json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		m := decode(t, out)
		got := m["delta"].(float64)
		if math.Abs(got-c.want) > c.tol || got < c.truthBelow {
			t.Errorf("q = %s: delta = %v, want %v within %v and >= %v", c.q, got, c.want, c.tol, c.truthBelow)
		}
		if m["method"] != "pld" || m["steps"].(float64) != 3 || m["sampling"] == nil {
			t.Errorf("q = %s: fields %v", c.q, m)
		}
	}
	// sigma and epsilon invert each other on the safe side.
	code, out, errs := runCmd("sigma", "-eps", "2", "-delta", "1e-5", "-sampling", "0.1", "-steps", "20", "-json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	sigma := decode(t, out)["sigma"].(float64)
	code, out, _ = runCmd("epsilon", "-sigma", strconv.FormatFloat(sigma, 'g', -1, 64), "-delta", "1e-5", "-sampling", "0.1", "-steps", "20", "-json")
	if eps := decode(t, out)["eps"].(float64); code != 0 || eps > 2 || eps < 1.99 {
		t.Errorf("eps at the calibrated sigma %v = %v, want in [1.99, 2]", sigma, eps)
	}
}

// TestSampledLargeSigmaJSON: at sigma = 4e6, q = 0.01, 100 steps the
// optimistic delta was NaN, which -json cannot encode ("dpacct: json:
// unsupported value: NaN", exit 1). The truth lies in [delta_optimistic,
// delta]; the optimistic side is at most the unsampled Gaussian's delta at
// mu = sqrt(100)/4e6, Phi(-a) - e Phi(-a - mu) with a = 1/mu - mu/2 = 4e5,
// which is 0 in float64.
func TestSampledLargeSigmaJSON(t *testing.T) {
	code, out, errs := runCmd("delta", "-sigma", "4e6", "-eps", "1", "-sampling", "0.01", "-steps", "100", "-json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	m := decode(t, out)
	opt, ok := m["delta_optimistic"].(float64)
	if safe := m["delta"].(float64); !ok || !(0 <= opt && opt <= safe) || opt > 0 {
		t.Errorf("delta = %v, delta_optimistic = %v: want 0 <= optimistic <= safe and optimistic 0", m["delta"], m["delta_optimistic"])
	}
}

func TestJSONFields(t *testing.T) {
	code, out, _ := runCmd("sigma", "-eps", "5", "-delta", "1e-3", "-sensitivity", "0.2", "-method", "paper", "-json")
	if code != 0 {
		t.Fatal(code)
	}
	// Exactly the documented fields, in order, on one line.
	var keys []string
	dec := json.NewDecoder(strings.NewReader(out))
	dec.Token()
	for dec.More() {
		k, _ := dec.Token()
		keys = append(keys, k.(string))
		var v any
		dec.Decode(&v)
	}
	if got := strings.Join(keys, ","); got != "method,eps,delta,sigma,sensitivity,noise_std,compositions" {
		t.Errorf("fields %s", got)
	}
	if strings.Count(out, "\n") != 1 {
		t.Errorf("output is not one line: %q", out)
	}
	m := decode(t, out)
	// Paper at (5, 1e-3): sigma = sqrt(2 ln 1000 + 5)/5, noise_std = 0.2 sigma.
	want := math.Sqrt(2*3*math.Ln10+5) / 5
	if s := m["sigma"].(float64); math.Abs(s-want) > 1e-11*want {
		t.Errorf("sigma = %v, want %v", s, want)
	}
	if v := m["noise_std"].(float64); math.Abs(v-0.2*want) > 1e-11*want {
		t.Errorf("noise_std = %v, want %v", v, 0.2*want)
	}
	if m["method"] != "paper" || m["sensitivity"] != 0.2 || m["compositions"] != 1.0 {
		t.Errorf("fields %v", m)
	}
}

func TestUsageExamples(t *testing.T) {
	testutil.SkipOn386(t, "the usage text quotes amd64's output in full precision; on 386 the sampled PLD's eps differs in the 14th digit (1.828238455959419 against 1.8282384559595577)")
	// Every "$ dpacct ..." line of the usage text is followed by the output
	// the program prints.
	lines := strings.Split(usageText, "\n")
	n := 0
	for i, l := range lines {
		cmd, ok := strings.CutPrefix(strings.TrimSpace(l), "$ dpacct ")
		if !ok {
			continue
		}
		n++
		code, out, errs := runCmd(strings.Fields(cmd)...)
		if want := strings.TrimSpace(lines[i+1]); code != 0 || strings.TrimSpace(out) != want {
			t.Errorf("dpacct %s: exit %d, output %q %s; usage text shows %q", cmd, code, out, errs, want)
		}
	}
	if n < 2 {
		t.Errorf("usage text has %d examples", n)
	}
	code, out, _ := runCmd("-h")
	if code != 0 || out != usageText {
		t.Errorf("dpacct -h: exit %d", code)
	}
	// A help that cannot be written is a failure (dpacct -h > /dev/full
	// exited 0).
	for _, args := range [][]string{{"-h"}, {"help"}, {"sigma", "-h"}} {
		var errb bytes.Buffer
		if code := run(context.Background(), args, fullWriter{}, &errb); code != 1 || errb.String() != "dpacct: no space left on device\n" {
			t.Errorf("dpacct %q to a full stdout: exit %d, stderr %q; want 1 and the write's error", args, code, errb.String())
		}
	}
	for _, c := range []string{"sigma", "epsilon", "delta"} {
		code, out, _ := runCmd(c, "-h")
		if code != 0 || !strings.Contains(out, "Example:\n  dpacct "+c) {
			t.Errorf("dpacct %s -h: exit %d, output %q", c, code, out)
		}
		// -h states the range of -sampling that the command accepts:
		// sigma refuses q = 0 (no noise needed), epsilon and delta take it.
		want, zero := "Q in [0, 1]", []string{c, "-sigma", "1", "-eps", "1", "-delta", "1e-5", "-sampling", "0", "-steps", "1"}
		switch c {
		case "sigma":
			want, zero = "Q in (0, 1]", []string{c, "-eps", "1", "-delta", "1e-5", "-sampling", "0", "-steps", "1"}
		case "epsilon":
			zero = []string{c, "-sigma", "1", "-delta", "1e-5", "-sampling", "0", "-steps", "1"}
		case "delta":
			zero = []string{c, "-sigma", "1", "-eps", "1", "-sampling", "0", "-steps", "1"}
		}
		if !strings.Contains(out, want) {
			t.Errorf("dpacct %s -h: no %q in %q", c, want, out)
		}
		if code, _, errs := runCmd(zero...); (code == 0) != (c != "sigma") {
			t.Errorf("dpacct %v: exit %d (%s), but -h says %s", zero, code, errs, want)
		}
	}
}

func TestErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		msg  string // expected substring of the one-line message
	}{
		{nil, 2, "missing command"},
		{[]string{"frob"}, 2, `unknown command "frob"`},
		{[]string{"sigma", "-delta", "1e-5"}, 2, "flag -eps is required"},
		{[]string{"sigma", "-eps", "1", "-delta", "1e-5", "x"}, 2, `unexpected argument "x"`},
		{[]string{"sigma", "-eps", "abc", "-delta", "1e-5"}, 2, `dpacct: sigma: invalid value "abc" for flag -eps: not a number`},
		// The accountant's error had its package prefix ("accountant:
		// unknown method ...").
		{[]string{"sigma", "-eps", "1", "-delta", "1e-5", "-method", "exat"}, 2, `dpacct: sigma: invalid value "exat" for flag -method: unknown method "exat", want one of exact, paper, zcdp, cks, rdp, rdp-mironov, dwork-roth` + "\n"},
		{[]string{"sigma", "-eps", "1e999", "-delta", "1e-5"}, 2, "out of the float64 range"},
		{[]string{"sigma", "-eps", "1", "-delta", "1e-400"}, 2, "nonzero but below the float64 range"},
		// Before, read as 4.9e-324, about twice the target.
		{[]string{"sigma", "-eps", "1", "-delta", "2.5e-324"}, 2, `dpacct: sigma: invalid value "2.5e-324" for flag -delta: positive but below the smallest float64 (4.9e-324); rounding it up would weaken the target`},
		{[]string{"epsilon", "-sigma", "38", "-delta", "2.5e-324"}, 2, "positive but below the smallest float64"},
		{[]string{"sigma", "-eps", "inf", "-delta", "1e-5"}, 2, "invalid -eps +Inf: want finite and > 0"},
		{[]string{"sigma", "-eps", "NaN", "-delta", "1e-5"}, 2, "invalid -eps NaN: want finite and > 0"},
		{[]string{"sigma", "-eps", "1", "-delta", "0"}, 2, "invalid -delta 0: want 0 < delta < 1"},
		{[]string{"sigma", "-eps", "1", "-delta", "1"}, 2, "invalid -delta 1: want 0 < delta < 1"},
		{[]string{"sigma", "-eps", "1", "-delta", "1e-5", "-sensitivity", "0"}, 2, "invalid -sensitivity 0"},
		{[]string{"sigma", "-eps", "1", "-delta", "1e-5", "-sensitivity", "5e-324"}, 2, "dpacct: invalid -sensitivity 5e-324: want a value for which the noise std sigma * sensitivity = 3.730631634816098 * 5e-324 is at least 2.2e-308"},
		{[]string{"epsilon", "-sigma", "1", "-delta", "1e-5", "-sensitivity", "1e-310", "-sampling", "0.5", "-steps", "3"}, 2, "invalid -sensitivity 1e-310: want a value for which the noise std"},
		// A subnormal -sigma with the default -sensitivity names -sigma
		// (before, "invalid -sensitivity 1", a flag not given).
		{[]string{"epsilon", "-sigma", "1e-320", "-delta", "1e-5"}, 2, "dpacct: invalid -sigma 1e-320: want a value for which the noise std sigma * sensitivity = 1e-320 * 1 is at least 2.2e-308"},
		{[]string{"sigma", "-eps", "1", "-delta", "1e-5", "-method", "gauss"}, 2, `unknown method "gauss"`},
		{[]string{"sigma", "-eps", "1", "-delta", "1e-5", "-nope"}, 2, "flag provided but not defined: -nope"},
		// Before, the last of a flag given twice silently won.
		{[]string{"sigma", "-eps", "1", "-delta", "1e-5", "-eps", "8"}, 2, `dpacct: sigma: invalid value "8" for flag -eps: given twice (first "1"): give each flag once`},
		{[]string{"epsilon", "-sigma", "0", "-delta", "1e-5"}, 2, "invalid -sigma 0"},
		{[]string{"epsilon", "-sigma", "1", "-delta", "1e-5", "-compositions", "0"}, 2, "invalid -compositions 0"},
		{[]string{"epsilon", "-sigma", "1", "-delta", "1e-5", "-compositions", "0x10"}, 2, "not a decimal integer"},
		{[]string{"delta", "-sigma", "1", "-eps", "-2"}, 2, "invalid -eps -2"},
		{[]string{"delta", "-sigma", "1", "-eps", "1", "-method", "exact"}, 2, "dpacct: delta: flag provided but not defined: -method"},
		{[]string{"delta", "-sigma", "1", "-eps", "1", "-sampling", "1.5", "-steps", "3"}, 2, "invalid -sampling 1.5: want a sampling probability in [0, 1]"},
		{[]string{"delta", "-sigma", "1", "-eps", "1", "-sampling", "-0.1", "-steps", "3"}, 2, "invalid -sampling -0.1"},
		{[]string{"delta", "-sigma", "1", "-eps", "1", "-sampling", "0.1", "-steps", "0"}, 2, "invalid -steps 0: want an integer >= 1"},
		{[]string{"delta", "-sigma", "0", "-eps", "1", "-sampling", "0.1", "-steps", "3"}, 2, "invalid -sigma 0"},
		{[]string{"delta", "-sigma", "1", "-eps", "1", "-steps", "3"}, 2, "-steps needs -sampling"},
		{[]string{"epsilon", "-sigma", "1", "-delta", "1e-5", "-sampling", "0.1", "-compositions", "3", "-steps", "3"}, 2, "-compositions does not apply with -sampling"},
		{[]string{"epsilon", "-sigma", "1", "-delta", "1e-5", "-sampling", "0.1", "-method", "rdp", "-steps", "3"}, 2, "-method rdp does not apply with -sampling"},
		{[]string{"epsilon", "-sigma", "1", "-delta", "0", "-sampling", "0.1", "-steps", "3"}, 2, "invalid -delta 0"},
		{[]string{"sigma", "-eps", "1", "-delta", "1e-5", "-sampling", "0", "-steps", "3"}, 2, "invalid -sampling 0: want a sampling probability in (0, 1]"},
		{[]string{"sigma", "-eps", "1", "-delta", "1e-5", "-sampling", "x", "-steps", "3"}, 2, `invalid value "x" for flag -sampling`},
		{[]string{"epsilon", "-sigma", "1", "-delta", "1e-5", "-relation", "replace-one"}, 2, "-relation applies only with -sampling"},
		{[]string{"epsilon", "-sigma", "1", "-delta", "1e-5", "-sampling", "0.1", "-relation", "swap", "-steps", "3"}, 2, `invalid value "swap" for flag -relation: want add-remove or replace-one`},
		{[]string{"sigma", "-eps", "1", "-delta", "1e-5", "-sampling", "1e-300", "-steps", "10"}, 2, "invalid -sampling 1e-300: want q^2 x steps >= 1e-300"},
		// A delta at or below the PLD's floor (its cut tails, about 1e-20)
		// has no finite eps; sigma is not to blame.
		{[]string{"epsilon", "-sigma", "1", "-delta", "1e-300", "-sampling", "0.1", "-steps", "10"}, 2, "invalid -delta 1e-300: want above "},
		// Runtime errors: the method cannot answer.
		{[]string{"epsilon", "-sigma", "1e-5", "-delta", "1e-5", "-sampling", "0.5", "-steps", "10"}, 1, "use a larger sigma or fewer steps"},
		{[]string{"sigma", "-eps", "5", "-delta", "1e-5", "-method", "dwork-roth"}, 1, "proven only for eps < 1"},
		{[]string{"epsilon", "-sigma", "1", "-delta", "1e-5", "-method", "dwork-roth"}, 1, "proven only for eps < 1"},
		{[]string{"sigma", "-eps", "1e-7", "-delta", "1e-300", "-method", "rdp"}, 1, "too small for the Renyi order grid"},
		{[]string{"epsilon", "-sigma", "1e-200", "-delta", "1e-5"}, 1, "eps is +Inf"},
		{[]string{"sigma", "-eps", "1e-310", "-delta", "1e-5", "-method", "paper"}, 1, "overflows float64"},
	} {
		code, out, errs := runCmd(c.args...)
		if code != c.code || out != "" || !strings.HasPrefix(errs, "dpacct: ") || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, c.msg) {
			t.Errorf("dpacct %q: exit %d, stdout %q, stderr %q; want exit %d and one line containing %q", c.args, code, out, errs, c.code, c.msg)
		}
	}
}

// TestSampledReplaceOne: -relation replace-one with -sampling 1 is the
// Gaussian mechanism at the given sensitivity (2C), so it must agree with
// the exact unsampled accounting of -compositions; with -sampling 0.1 it
// costs more privacy than add-remove at the same noise std (-sigma halved
// because the sensitivity doubled), and a cancelled context stops sigma.
func TestSampledReplaceOne(t *testing.T) {
	code, out, errs := runCmd("epsilon", "-sigma", "2", "-delta", "1e-5", "-compositions", "10", "-json")
	if code != 0 {
		t.Fatal(errs)
	}
	exact := decode(t, out)["eps"].(float64)
	code, out, errs = runCmd("epsilon", "-sigma", "2", "-delta", "1e-5", "-sampling", "1", "-steps", "10", "-relation", "replace-one", "-json")
	if code != 0 {
		t.Fatal(errs)
	}
	m := decode(t, out)
	if got := m["eps"].(float64); got < exact || got > exact*(1+1e-4) || m["relation"] != "replace-one" {
		t.Errorf("replace-one q = 1: eps %v (relation %v), exact %v", got, m["relation"], exact)
	}
	_, out, _ = runCmd("epsilon", "-sigma", "2", "-delta", "1e-5", "-sampling", "0.1", "-steps", "10", "-json")
	ar := decode(t, out)["eps"].(float64)
	_, out, _ = runCmd("epsilon", "-sigma", "1", "-delta", "1e-5", "-sampling", "0.1", "-steps", "10", "-relation", "replace-one", "-json")
	if ro := decode(t, out)["eps"].(float64); !(ro > ar) {
		t.Errorf("q = 0.1: replace-one eps %v, add-remove %v", ro, ar)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var o, e bytes.Buffer
	if code := run(ctx, []string{"sigma", "-eps", "1", "-delta", "1e-5", "-sampling", "0.01", "-steps", "1000"}, &o, &e); code != 1 || e.String() != "dpacct: interrupted\n" {
		t.Errorf("cancelled: exit %d, stderr %q", code, e.String())
	}
}

// TestSampledBoundsInterrupted: a done context (SIGINT or SIGTERM) stops
// the epsilon and delta commands with -sampling too, whose PLD takes
// minutes and gigabytes at 10^9 steps: they once ran on and printed their
// answer (now the PLD itself stops, SampledGaussianContext).
func TestSampledBoundsInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, args := range [][]string{
		{"epsilon", "-sigma", "1", "-delta", "1e-5", "-sampling", "0.01", "-steps", "1000"},
		{"delta", "-sigma", "1", "-eps", "1", "-sampling", "0.01", "-steps", "1000"},
	} {
		var o, e bytes.Buffer
		if code := run(ctx, args, &o, &e); code != 1 || e.String() != "dpacct: interrupted\n" || o.Len() != 0 {
			t.Errorf("%s cancelled: exit %d, stdout %q, stderr %q", args[0], code, o.String(), e.String())
		}
	}
}

// FuzzParseFlags feeds arbitrary strings to the numeric and method flags of
// the three commands. Whatever the input, dpacct must not panic, must exit
// 0, 1 or 2, and either print one JSON line whose numbers are exactly the
// values strconv.ParseFloat reads from the input (and whose sigma meets the
// target) or print nothing on standard output and one "dpacct: " line on
// standard error. The seeds run in every plain go test.
func FuzzParseFlags(f *testing.F) {
	for _, s := range []struct {
		cmd        uint8
		x, y, z, m string
	}{
		{0, "1", "1e-5", "1", "exact"},
		{0, "0.5", "1e-6", "2.5", "cks"},
		{0, "100", "1e-300", "1e-3", "rdp"},
		{0, "5", "1e-3", "1", "dwork-roth"},
		{0, "0x1p-3", "0.5", "1_000", "paper"},
		{0, "1e-400", "1e-5", "1", "exact"},
		{0, "inf", "nan", "-0", "zcdp"},
		{0, " 1", "1e-5", "1", "Exact"},
		{1, "1", "1e-5", "100", "exact"},
		{1, "1e-200", "1e-5", "1", "rdp-mironov"},
		{1, "3", "0.999999", "9223372036854775807", "cks"},
		{1, "1", "1e-5", "-1", "exact"},
		{1, "1", "1e-5", "010", "exact"},
		{2, "3.73063163", "1", "1", ""},
		{2, "1e300", "1e-300", "1", ""},
		{2, "0.001", "100", "3", ""},
	} {
		f.Add(s.cmd, s.x, s.y, s.z, s.m)
	}
	f.Fuzz(func(t *testing.T, cmd uint8, x, y, z, m string) {
		var args []string
		switch cmd % 3 {
		case 0:
			args = []string{"sigma", "-eps", x, "-delta", y, "-sensitivity", z, "-method", m, "-json"}
		case 1:
			args = []string{"epsilon", "-sigma", x, "-delta", y, "-compositions", z, "-method", m, "-json"}
		default:
			args = []string{"delta", "-sigma", x, "-eps", y, "-compositions", z, "-json"}
		}
		code, out, errs := runCmd(args...)
		if code != 0 {
			if (code != 1 && code != 2) || out != "" || !strings.HasPrefix(errs, "dpacct: ") || strings.Count(errs, "\n") != 1 {
				t.Fatalf("%q: exit %d, stdout %q, stderr %q", args, code, out, errs)
			}
			return
		}
		if errs != "" || strings.Count(out, "\n") != 1 {
			t.Fatalf("%q: exit 0 with stdout %q, stderr %q", args, out, errs)
		}
		var r result
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		parsed := func(s string) float64 {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				t.Fatalf("%q: accepted %q, which strconv.ParseFloat rejects: %v", args, s, err)
			}
			return v
		}
		finitePos := func(name string, v float64) {
			if !(v > 0) || math.IsInf(v, 0) {
				t.Fatalf("%q: %s = %v accepted", args, name, v)
			}
		}
		finitePos("sigma", r.Sigma)
		finitePos("sensitivity", r.Sensitivity)
		finitePos("noise_std", r.NoiseStd)
		if !(r.Eps >= 0) || math.IsInf(r.Eps, 0) || !(r.Delta >= 0 && r.Delta <= 1) {
			t.Fatalf("%q: eps %v, delta %v", args, r.Eps, r.Delta)
		}
		// noise_std is sigma * sensitivity rounded up.
		if new(big.Float).SetPrec(200).Mul(big.NewFloat(r.Sigma), big.NewFloat(r.Sensitivity)).Cmp(big.NewFloat(r.NoiseStd)) > 0 {
			t.Fatalf("%q: noise_std %v below sigma * sensitivity", args, r.NoiseStd)
		}
		switch cmd % 3 {
		case 0:
			if r.Eps != parsed(x) || r.Delta != parsed(y) || r.Sensitivity != parsed(z) || r.Method != m {
				t.Fatalf("%q: echoed %+v", args, r)
			}
			// Safe side, by the exact curve (whatever the method).
			if d, err := accountant.Delta(r.Eps, 1/r.Sigma); err != nil || d > r.Delta*(1+1e-9) {
				t.Fatalf("%q: sigma %v gives delta %v > %v (%v)", args, r.Sigma, d, r.Delta, err)
			}
		case 1:
			if k, err := strconv.Atoi(z); err != nil || r.Sigma != parsed(x) || r.Delta != parsed(y) || r.Compositions != k || k < 1 {
				t.Fatalf("%q: echoed %+v", args, r)
			}
		default:
			if k, err := strconv.Atoi(z); err != nil || r.Sigma != parsed(x) || r.Eps != parsed(y) || r.Compositions != k || k < 1 {
				t.Fatalf("%q: echoed %+v", args, r)
			}
		}
	})
}

// privacyTableCases are the targets of the comparison table in
// docs/privacy.md.
var privacyTableCases = [][2]string{{"1", "1e-5"}, {"5", "1e-3"}, {"0.5", "1e-6"}}

// privacyTable returns the Markdown table of sigma by method, computed by
// running dpacct sigma -json for each cell.
func privacyTable(t *testing.T) string {
	var b strings.Builder
	b.WriteString("| method |")
	for _, c := range privacyTableCases {
		b.WriteString(" (" + c[0] + ", " + c[1] + ") |")
	}
	b.WriteString("\n|---|")
	b.WriteString(strings.Repeat("---:|", len(privacyTableCases)))
	b.WriteString("\n")
	exact := map[int]float64{}
	for _, m := range accountant.Methods() {
		b.WriteString("| " + m.String() + " |")
		for i, c := range privacyTableCases {
			code, out, errs := runCmd("sigma", "-eps", c[0], "-delta", c[1], "-method", m.String(), "-json")
			switch {
			case code == 1:
				b.WriteString(" refused (eps >= 1) |")
				if m != accountant.DworkRoth {
					t.Fatalf("%v at %v: %s", m, c, errs)
				}
			case code != 0:
				t.Fatalf("%v at %v: exit %d: %s", m, c, code, errs)
			default:
				s := decode(t, out)["sigma"].(float64)
				if m == accountant.Exact {
					exact[i] = s
					b.WriteString(" " + strconv.FormatFloat(s, 'f', 4, 64) + " |")
				} else {
					b.WriteString(" " + strconv.FormatFloat(s, 'f', 4, 64) + " (+" + strconv.FormatFloat(100*(s/exact[i]-1), 'f', 1, 64) + "%) |")
				}
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// TestPrivacyTable keeps the table in docs/privacy.md equal to what dpacct
// computes. To regenerate it:
//
//	DPMF_PRIVACY_TABLE=1 go test ./cmd/dpacct -run TestPrivacyTable -v
func TestPrivacyTable(t *testing.T) {
	table := privacyTable(t)
	if os.Getenv("DPMF_PRIVACY_TABLE") != "" {
		t.Log("\n" + table)
		return
	}
	doc, err := os.ReadFile("../../docs/privacy.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), table) {
		t.Errorf("docs/privacy.md does not contain the current table; regenerate it with\n\tDPMF_PRIVACY_TABLE=1 go test ./cmd/dpacct -run TestPrivacyTable -v\n%s", table)
	}
}

// Where delta is positive but below the smallest float64, dpacct prints the
// bounds it can prove, never delta = 0: delta = 5e-324 and log_delta, an
// upper bound on log delta (mpmath at 50 digits: log delta(1) at sigma = 40
// is -811.48752583850227571...).
func TestDeltaBelowFloat64(t *testing.T) {
	code, out, errs := runCmd("delta", "-sigma", "40", "-eps", "1", "-json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	m := decode(t, out)
	if d := m["delta"].(float64); d != math.SmallestNonzeroFloat64 {
		t.Errorf("delta = %v, want 5e-324 (an upper bound, not 0)", d)
	}
	ld, ok := m["log_delta"].(float64)
	const want = -811.48752583850227571
	if !ok || ld < want || ld > want+1e-9 {
		t.Errorf("log_delta = %v, want an upper bound within 1e-9 of %v", m["log_delta"], want)
	}
	code, out, _ = runCmd("delta", "-sigma", "40", "-eps", "1")
	if code != 0 || !strings.Contains(out, "delta=5e-324") || !strings.Contains(out, "log_delta=-811.48752583") {
		t.Errorf("text output %q, want delta=5e-324 and log_delta=-811.48752583...", out)
	}
}

// TestDeltaTargetExtremes: a target delta at the ends of the float64 range
// gives the least sigma (mpmath 1.3 at 60 digits: 0.059870169234091369 at
// the largest float64 below 1, where dpacct printed 0.0671; 38.290557503963609
// at 2^-1074), and a subnormal target is never read larger than written
// (8e-324, whose nearest float64 is 9.9e-324, is met at 4.9e-324).
func TestDeltaTargetExtremes(t *testing.T) {
	for _, c := range []struct {
		delta     string
		wantDelta float64
		wantSigma float64
	}{
		{"0.9999999999999999", 0.9999999999999999, 0.059870169234091369},
		{"4.9406564584124655e-324", 0x1p-1074, 38.290557503963609},
		{"8e-324", 0x1p-1074, 38.290557503963609},
	} {
		code, out, errs := runCmd("sigma", "-eps", "1", "-delta", c.delta, "-json")
		if code != 0 {
			t.Fatalf("-delta %s: exit %d: %s", c.delta, code, errs)
		}
		m := decode(t, out)
		d, s := m["delta"].(float64), m["sigma"].(float64)
		if d != c.wantDelta || s < c.wantSigma || s > c.wantSigma*(1+1e-12) {
			t.Errorf("-delta %s: delta %v sigma %.17g, want delta %v and sigma within 1e-12 above %.17g", c.delta, d, s, c.wantDelta, c.wantSigma)
		}
	}
}

// TestStepsWithoutSamplingAdvice: the usage error for -steps without
// -sampling names only flags that the subcommand defines, as its -h lists
// them (before, dpacct sigma advised -compositions, which sigma does not
// take).
func TestStepsWithoutSamplingAdvice(t *testing.T) {
	flagName := regexp.MustCompile(`-[a-z][a-z-]*`)
	for _, c := range [][]string{
		{"sigma", "-eps", "1", "-delta", "1e-5", "-steps", "3"},
		{"epsilon", "-sigma", "1", "-delta", "1e-5", "-steps", "3"},
		{"delta", "-sigma", "1", "-eps", "1", "-steps", "3"},
	} {
		code, _, errs := runCmd(c...)
		if code != 2 || !strings.Contains(errs, "-steps needs -sampling") {
			t.Fatalf("dpacct %q: exit %d, stderr %q; want exit 2 and -steps needs -sampling", c, code, errs)
		}
		_, help, _ := runCmd(c[0], "-h")
		for _, f := range flagName.FindAllString(errs, -1) {
			if !strings.Contains(help, "  "+f+" ") {
				t.Errorf("dpacct %q: the error %q names %s, which dpacct %s -h does not list", c, strings.TrimSpace(errs), f, c[0])
			}
		}
	}
}

// TestSamplingNeedsSteps: -sampling without -steps is a usage error that
// names -steps, for each command, and prints nothing on stdout. Before,
// -steps defaulted to 1, so "dpacct epsilon -sigma 1 -delta 1e-5
// -sampling 0.01" accounted a single sampled step (steps=1) where a
// sampled run means many; -h no longer shows a default for -steps.
func TestSamplingNeedsSteps(t *testing.T) {
	for _, c := range [][]string{
		{"sigma", "-eps", "1", "-delta", "1e-5", "-sampling", "0.01"},
		{"epsilon", "-sigma", "1", "-delta", "1e-5", "-sampling", "0.01"},
		{"delta", "-sigma", "1", "-eps", "1", "-sampling", "0.01", "-json"},
	} {
		code, out, errs := runCmd(c...)
		if code != 2 || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "-sampling needs -steps") {
			t.Errorf("dpacct %q: exit %d, stdout %q, stderr %q; want exit 2, no output and one line saying -sampling needs -steps", c, code, out, errs)
		}
		// With -steps 1 given, the single step is what was asked for.
		code, out, errs = runCmd(append(c, "-steps", "1")...)
		if code != 0 || !strings.Contains(out, "steps") {
			t.Errorf("dpacct %q -steps 1: exit %d, stdout %q, stderr %q", c, code, out, errs)
		}
		_, help, _ := runCmd(c[0], "-h")
		entry, ok := "", false
		if i := strings.Index(help, "  -steps T"); i >= 0 {
			entry, ok = help[i+2:], true
			if j := strings.Index(entry, "\n  -"); j >= 0 {
				entry = entry[:j]
			}
		}
		if !ok || strings.Contains(entry, "default") {
			t.Errorf("dpacct %s -h: -steps listed with a default (or not at all): %q", c[0], help)
		}
	}
}

// fullWriter fails every write, as stdout redirected to /dev/full does.
type fullWriter struct{}

func (fullWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }
