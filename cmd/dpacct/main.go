// Command dpacct calibrates Gaussian noise for (eps, delta)-differential
// privacy and bounds the privacy of a given noise level, with the methods of
// package accountant.
//
// Usage:
//
//	dpacct sigma   -eps E -delta D [-sensitivity S] [-method M] [-sampling Q -steps T [-relation R]] [-json]
//	dpacct epsilon -sigma S -delta D [-compositions K] [-sensitivity S] [-method M] [-sampling Q -steps T [-relation R]] [-json]
//	dpacct delta   -sigma S -eps E [-compositions K] [-sensitivity S] [-sampling Q -steps T [-relation R]] [-json]
//
// sigma is the noise multiplier, the noise standard deviation per unit of
// L2 sensitivity; noise_std = sigma * sensitivity. Methods: exact (default),
// paper, zcdp, cks, rdp, rdp-mironov, dwork-roth; delta always uses exact.
//
// With -sampling Q the release is T steps (-steps T, required with
// -sampling: a sampled run is almost never one step, so there is no
// default) of the Poisson-subsampled Gaussian mechanism: each step draws every record
// independently with probability Q. -relation add-remove (the default) or
// replace-one names the neighbouring relation, and -sensitivity is that of
// one record under it: the clipping norm C for add-remove, 2 C for
// replace-one. It is accounted with the privacy-loss-distribution
// accountant of package accountant (method "pld"), whose answers are never
// below the true ones (for replace-one an upper bound, not a tight value);
// see docs/privacy.md. -method and -compositions do not apply to it, and
// -relation applies only to it (without sampling the relation enters only
// through the sensitivity). The sigma command's -eps is at most 1000 with
// -sampling (the search's cost grows like eps; docs/privacy.md); the delta
// command takes any eps. SIGINT or SIGTERM stops
// a calibration, and the epsilon and delta commands, at once (within
// milliseconds).
//
// Output is one line of key=value pairs, or with -json one object with the
// fields method, eps, delta, sigma, sensitivity, noise_std, compositions,
// and, with -sampling, sampling, steps and relation. With -sampling the
// epsilon and delta commands also print eps_optimistic or delta_optimistic,
// the accountant's lower bound: the true value lies between it and eps or
// delta, the safe value to state (docs/privacy.md). The delta command without
// -sampling also prints log_delta, an upper bound on the natural logarithm
// of delta with its evaluation error counted: where delta is positive but
// below the smallest float64 it is printed as delta=5e-324 (an upper bound,
// never 0) and log_delta holds the bound (dpacct delta -sigma 40 -eps 1:
// log_delta=-811.4875258384999).
// The exit status is 0 on success, 2 on a usage error (unknown command or
// flag, a value that does not parse or is out of range) and 1 when the
// method cannot answer (Dwork-Roth at eps >= 1, overflow); errors are one
// line on standard error, starting "dpacct: ".
//
// Example:
//
//	$ dpacct sigma -eps 1 -delta 1e-5
//	method=exact eps=1 delta=1e-05 sigma=3.730631634816098 sensitivity=1 noise_std=3.730631634816098 compositions=1
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/dpmf/dpmf/accountant"
	"github.com/dpmf/dpmf/internal/cli"
)

func main() {
	ctx, stop := cli.SignalContext()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usageText = `dpacct calibrates Gaussian noise for (eps, delta)-differential privacy.

Usage:
  dpacct sigma   -eps E -delta D [-sensitivity S] [-method M] [-sampling Q -steps T [-relation R]] [-json]
  dpacct epsilon -sigma S -delta D [-compositions K] [-sensitivity S] [-method M] [-sampling Q -steps T [-relation R]] [-json]
  dpacct delta   -sigma S -eps E [-compositions K] [-sensitivity S] [-sampling Q -steps T [-relation R]] [-json]

sigma is the noise std per unit of L2 sensitivity; noise_std = sigma * sensitivity.
Methods: exact (default), paper, zcdp, cks, rdp, rdp-mironov, dwork-roth.
delta always uses exact. -sampling Q -steps T accounts T Poisson-subsampled
Gaussian steps (sampling probability Q) with the PLD accountant, under
-relation add-remove (default; -sensitivity C, the clipping norm) or
replace-one (-sensitivity 2C; an upper bound).
Run "dpacct <command> -h" for a command's flags.

Example:
  $ dpacct sigma -eps 1 -delta 1e-5
  method=exact eps=1 delta=1e-05 sigma=3.730631634816098 sensitivity=1 noise_std=3.730631634816098 compositions=1
  $ dpacct epsilon -sigma 1 -delta 1e-5 -compositions 100 -json
  {"method":"exact","eps":91.81728962466741,"delta":0.00001,"sigma":1,"sensitivity":1,"noise_std":1,"compositions":100}
  $ dpacct epsilon -sigma 1 -delta 1e-5 -sampling 0.01 -steps 1000
  method=pld eps=1.8282384559595577 delta=1e-05 sigma=1 sensitivity=1 noise_std=1 compositions=1000 sampling=0.01 steps=1000 relation=add-remove eps_optimistic=1.8282356960673947
`

// result is what every command prints.
type result struct {
	Method       string   `json:"method"`
	Eps          float64  `json:"eps"`
	Delta        float64  `json:"delta"`
	Sigma        float64  `json:"sigma"`
	Sensitivity  float64  `json:"sensitivity"`
	NoiseStd     float64  `json:"noise_std"`
	Compositions int      `json:"compositions"`
	Sampling     *float64 `json:"sampling,omitempty"` // Poisson sampling probability, with -sampling
	Steps        int      `json:"steps,omitempty"`    // sampled steps, with -sampling
	Relation     string   `json:"relation,omitempty"` // neighbouring relation, with -sampling
	// EpsOptimistic and DeltaOptimistic, for epsilon and delta with
	// -sampling, are the PLD accountant's optimistic bounds: the true eps
	// (delta) of the accounted pair lies between them and eps (delta),
	// the safe value to state.
	EpsOptimistic   *float64 `json:"eps_optimistic,omitempty"`
	DeltaOptimistic *float64 `json:"delta_optimistic,omitempty"`
	// LogDelta, for the delta command without -sampling, is an upper bound
	// on log delta that holds where delta itself is below the smallest
	// float64 (then delta is printed as that value, 5e-324, an upper bound).
	LogDelta *float64 `json:"log_delta,omitempty"`
	asJSON   bool     // print as JSON (-json); not a field of the output
}

func (r result) text() string {
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	s := fmt.Sprintf("method=%s eps=%s delta=%s sigma=%s sensitivity=%s noise_std=%s compositions=%d",
		r.Method, f(r.Eps), f(r.Delta), f(r.Sigma), f(r.Sensitivity), f(r.NoiseStd), r.Compositions)
	if r.Sampling != nil {
		s += fmt.Sprintf(" sampling=%s steps=%d relation=%s", f(*r.Sampling), r.Steps, r.Relation)
	}
	opt := []*float64{r.EpsOptimistic, r.DeltaOptimistic, r.LogDelta}
	for i, key := range []string{"eps_optimistic", "delta_optimistic", "log_delta"} {
		if opt[i] != nil {
			s += " " + key + "=" + f(*opt[i])
		}
	}
	return s
}

// run is the whole program; main only wires it to the process.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "dpacct: missing command (sigma, epsilon or delta); run \"dpacct -h\" for usage")
		return cli.ExitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		if _, err := fmt.Fprint(stdout, usageText); err != nil {
			// A help that cannot be written is a failure (-h > /dev/full).
			fmt.Fprintf(stderr, "dpacct: %v\n", err)
			return cli.ExitFailure
		}
		return cli.ExitOK
	}
	res, err := command(ctx, args[0], args[1:], stdout)
	if errors.Is(err, flag.ErrHelp) {
		return cli.ExitOK
	}
	if err != nil && ctx.Err() != nil {
		fmt.Fprintln(stderr, "dpacct: interrupted")
		return cli.ExitFailure
	}
	if err != nil {
		msg, code := message(err)
		fmt.Fprintln(stderr, "dpacct: "+cli.OneLine(msg))
		return code
	}
	out := res.text()
	if res.asJSON {
		b, err := json.Marshal(res)
		if err != nil { // non-finite numbers; command rejects them first
			fmt.Fprintln(stderr, "dpacct: "+cli.OneLine(err.Error()))
			return cli.ExitFailure
		}
		out = string(b)
	}
	// The line is the command's only output: one that cannot be written
	// (stdout on a full disk, dpacct ... > /dev/full) is a failure.
	if _, err := fmt.Fprintln(stdout, out); err != nil {
		fmt.Fprintf(stderr, "dpacct: %s\n", cli.OneLine(err.Error()))
		return cli.ExitFailure
	}
	return cli.ExitOK
}

// message words an error for the command line from the fields of the
// accountant's typed errors, and returns the exit status: a parameter
// error names the flag (a usage error), a method error the -method value.
func message(err error) (string, int) {
	var pe *accountant.ParamError
	if errors.As(err, &pe) {
		name := pe.Param
		if name == "q" { // the accountant's sampling probability is the -sampling flag
			name = "sampling"
		}
		return "invalid -" + name + " " + fmt.Sprint(pe.Value) + ": want " + pe.Want, cli.ExitUsage
	}
	var me *accountant.MethodError
	if errors.As(err, &me) {
		return "-method " + me.Method.String() + ": " + me.Reason, cli.ExitCode(err)
	}
	return err.Error(), cli.ExitCode(err)
}

// command parses and runs one command.
func command(ctx context.Context, name string, args []string, stdout io.Writer) (result, error) {
	fs := cli.NewFlagSet("dpacct " + name)
	var (
		eps, sigma   = &floatFlag{}, &floatFlag{}
		delta        = &floatFlag{down: true} // a target: never read larger than written
		sensitivity  = &floatFlag{v: 1}
		compositions = &intFlag{v: 1}
		sampling     = &floatFlag{}
		steps        = &intFlag{} // required with -sampling: no default
		method       = accountant.Exact
		relation     = accountant.AddRemove
		asJSON       bool
	)
	fs.BoolVar(&asJSON, "json", false, "print one JSON object")
	fs.Var(sensitivity, "sensitivity", "L2 `sensitivity` of the release; noise_std = sigma * sensitivity")
	qRange := "[0, 1]"
	if name == "sigma" {
		qRange = "(0, 1]" // q = 0 needs no noise: sigma refuses it
	}
	fs.Var(sampling, "sampling", "Poisson sampling probability `Q` in "+qRange+" of each step (PLD accountant)")
	fs.Func("relation", "neighbouring `RELATION` of -sampling: add-remove (default; -sensitivity is the clipping norm C) or replace-one (-sensitivity 2C; an upper bound)", func(v string) error {
		r, err := accountant.ParseRelation(v)
		if err != nil {
			return errors.New("want add-remove or replace-one")
		}
		relation = r
		return nil
	})
	fs.Var(steps, "steps", "number `T` of sampled steps, required with -sampling (>= 1)")
	var required []string
	switch name {
	case "sigma":
		fs.Var(eps, "eps", "target `eps` (required, finite and > 0)")
		fs.Var(delta, "delta", "target `delta` (required, in (0, 1))")
		fs.Var(methodFlag{&method}, "method", "calibration `method`: exact, paper, zcdp, cks, rdp, rdp-mironov, dwork-roth")
		required = []string{"eps", "delta"}
	case "epsilon":
		fs.Var(sigma, "sigma", "noise multiplier `sigma` = std / sensitivity (required, > 0)")
		fs.Var(delta, "delta", "`delta` (required, in (0, 1))")
		fs.Var(compositions, "compositions", "number `K` of releases composed (>= 1)")
		fs.Var(methodFlag{&method}, "method", "accounting `method`: exact, paper, zcdp, cks, rdp, rdp-mironov, dwork-roth")
		required = []string{"sigma", "delta"}
	case "delta":
		fs.Var(sigma, "sigma", "noise multiplier `sigma` = std / sensitivity (required, > 0)")
		fs.Var(eps, "eps", "`eps` (required, finite and > 0)")
		fs.Var(compositions, "compositions", "number `K` of releases composed (>= 1)")
		required = []string{"sigma", "eps"}
	default:
		return result{}, &cli.UsageError{Msg: fmt.Sprintf("unknown command %q, want sigma, epsilon or delta", name)}
	}
	set, err := cli.ParseFlags(fs, args, stdout, "Usage of dpacct "+name+":\n", name+": ", cli.Once)
	if errors.Is(err, flag.ErrHelp) {
		if _, werr := fmt.Fprintf(stdout, "\nExample:\n  %s\n", examples[name]); werr != nil {
			return result{}, werr
		}
	}
	if err != nil {
		return result{}, err
	}
	for _, r := range required {
		if !set[r] {
			return result{}, &cli.UsageError{Msg: fmt.Sprintf("%s: flag -%s is required", name, r)}
		}
	}

	res := result{Method: method.String(), Eps: eps.v, Delta: delta.v, Sigma: sigma.v, Sensitivity: sensitivity.v, Compositions: compositions.v, asJSON: asJSON}
	if set["steps"] && !set["sampling"] {
		advice := "use -compositions for unsampled releases"
		if name == "sigma" {
			advice = "without it, sigma calibrates one unsampled release"
		}
		return result{}, &cli.UsageError{Msg: name + ": -steps needs -sampling (" + advice + ")"}
	}
	if set["relation"] && !set["sampling"] {
		return result{}, &cli.UsageError{Msg: name + ": -relation applies only with -sampling (without sampling the relation enters only through -sensitivity)"}
	}
	if set["sampling"] && !set["steps"] {
		// Before, -steps defaulted to 1: a sampled run of many steps was
		// silently accounted as a single step (steps=1 in the output).
		return result{}, &cli.UsageError{Msg: name + ": -sampling needs -steps (the number T of sampled steps; -steps 1 for a single one)"}
	}
	if set["sampling"] {
		if set["compositions"] {
			return result{}, &cli.UsageError{Msg: name + ": -compositions does not apply with -sampling; use -steps"}
		}
		if set["method"] && method != accountant.Exact {
			return result{}, &cli.UsageError{Msg: name + ": -method " + method.String() + " does not apply with -sampling (the PLD accountant is used)"}
		}
		q := sampling.v
		res.Method, res.Sampling, res.Steps, res.Compositions = "pld", &q, steps.v, steps.v
		res.Relation = relation.String()
		switch name {
		case "sigma":
			res.Sigma, err = accountant.SampledGaussianSigma(ctx, q, steps.v, eps.v, delta.v, relation)
		case "epsilon":
			var b accountant.Bounds
			floor := 0.0
			b, err = cli.Interruptible(ctx, func() (accountant.Bounds, error) {
				// SampledGaussianEpsilonBounds, keeping the PLD's Floor for
				// the error below.
				p, err := accountant.SampledGaussianContext(ctx, q, sigma.v, steps.v, relation)
				if err != nil {
					return accountant.Bounds{}, err
				}
				floor = p.Floor()
				return p.EpsilonBounds(delta.v)
			})
			if err == nil && math.IsInf(b.Safe, 1) && delta.v <= floor {
				// No finite eps because delta is at or below the mass the
				// accountant counts as infinite loss, not because sigma is
				// small: name -delta and the least it certifies.
				err = &accountant.ParamError{Param: "delta", Value: delta.v, Want: "above " + strconv.FormatFloat(floor, 'g', -1, 64) +
					", the least delta the PLD accountant certifies for this release (the tail mass it cuts plus its rounding bound)"}
			}
			res.Eps, res.EpsOptimistic = b.Safe, &b.Optimistic
		case "delta":
			var b accountant.Bounds
			b, err = cli.Interruptible(ctx, func() (accountant.Bounds, error) {
				// SampledGaussianDeltaBounds, stopped by ctx. Its check of
				// eps first, on the PLD of no privacy loss (instant).
				none, err := accountant.GaussianPLD(math.Inf(1), accountant.PLDOptions{})
				if err == nil {
					_, err = none.DeltaBounds(eps.v)
				}
				if err != nil {
					return accountant.Bounds{}, err
				}
				p, err := accountant.SampledGaussianContext(ctx, q, sigma.v, steps.v, relation)
				if err != nil {
					return accountant.Bounds{}, err
				}
				return p.DeltaBounds(eps.v)
			})
			res.Delta, res.DeltaOptimistic = b.Safe, &b.Optimistic
		}
	} else {
		switch name {
		case "sigma":
			res.Compositions = 1
			res.Sigma, err = accountant.Sigma(eps.v, delta.v, method)
		case "epsilon":
			res.Eps, err = accountant.Epsilon(sigma.v, delta.v, compositions.v, method)
		case "delta":
			res.Method = accountant.Exact.String()
			var mu float64
			if mu, err = accountant.Mu(sigma.v, compositions.v); err == nil {
				res.Delta, err = accountant.Delta(eps.v, mu)
			}
			if err == nil {
				var ld float64
				ld, err = accountant.LogDelta(eps.v, mu)
				if !math.IsInf(ld, -1) { // delta below exp(-1.8e308): delta = 5e-324 says enough
					res.LogDelta = &ld
				}
			}
		}
	}
	if err == nil {
		res.NoiseStd, err = accountant.Scale(res.Sigma, sensitivity.v)
		// Where the product is below the normal range and the user gave
		// -sigma but not -sensitivity (epsilon and delta), the error names
		// -sigma, the input that is too small, not the default
		// -sensitivity 1.
		var pe *accountant.ParamError
		if name != "sigma" && !set["sensitivity"] && errors.As(err, &pe) && pe.Param == "sensitivity" {
			err = &accountant.ParamError{Param: "sigma", Value: res.Sigma, Want: pe.Want}
		}
	}
	if err != nil {
		return result{}, err
	}
	if math.IsInf(res.Eps, 1) {
		msg := "eps is +Inf: sigma is too small for any finite guarantee"
		if set["sampling"] {
			msg += " at this delta"
		}
		return result{}, errors.New(msg)
	}
	return res, nil
}

var examples = map[string]string{
	"sigma":   "dpacct sigma -eps 1 -delta 1e-5 -sensitivity 0.2 -method exact",
	"epsilon": "dpacct epsilon -sigma 1 -delta 1e-5 -compositions 100",
	"delta":   "dpacct delta -sigma 3.73 -eps 1",
}

// floatFlag is a float64 flag parsed by cli.ParseFloat, which refuses
// values out of the float64 range and a nonzero value that would silently
// underflow to 0 (such as 1e-400); with down, by cli.ParseFloatDown, which
// also never reads a subnormal as larger than written (-delta 8e-324 is
// 4.9e-324, not 9.9e-324, and -delta 2.5e-324 an error).
type floatFlag struct {
	v    float64
	down bool
}

func (f *floatFlag) String() string { return strconv.FormatFloat(f.v, 'g', -1, 64) }

func (f *floatFlag) Set(s string) (err error) {
	if f.down {
		f.v, err = cli.ParseFloatDown(s)
	} else {
		f.v, err = cli.ParseFloat(s)
	}
	return err
}

// intFlag is a decimal integer flag (no octal or hex, unlike flag.Int).
type intFlag struct{ v int }

func (f *intFlag) String() string { return strconv.Itoa(f.v) }

func (f *intFlag) Set(s string) (err error) {
	if f.v, err = strconv.Atoi(s); err != nil {
		return errors.New("not a decimal integer in range")
	}
	return nil
}

// methodFlag is the -method flag: a name that [accountant.ParseMethod]
// takes, refused with its error less the package's prefix (the flag
// package names the flag and the value already). Its help prints the
// default as fs.TextVar's did.
type methodFlag struct{ m *accountant.Method }

// String implements flag.Value.
func (f methodFlag) String() string {
	if f.m == nil {
		return ""
	}
	return f.m.String()
}

// Set implements flag.Value.
func (f methodFlag) Set(s string) error {
	m, err := accountant.ParseMethod(s)
	if err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), "accountant: "))
	}
	*f.m = m
	return nil
}
