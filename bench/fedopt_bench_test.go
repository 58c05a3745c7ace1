package bench

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/floats"

	"github.com/dpmf/dpmf/dataset"
	"github.com/dpmf/dpmf/experiment"
	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/internal/procusage"
	"github.com/dpmf/dpmf/model"
	"github.com/dpmf/dpmf/plan"
)

// fig4Run is one curve of the paper's Fig. 4.
type fig4Run struct {
	algo fedopt.Algorithm
	eps  float64
}

// fig4Runs are the curves of Fig. 4: Algorithm 1 and the baseline at
// (5, 1e-3) and (1, 1e-3), and the nonprivate reference once.
var fig4Runs = []fig4Run{
	{fedopt.Correlated, 5}, {fedopt.Correlated, 1},
	{fedopt.Independent, 5}, {fedopt.Independent, 1},
	{fedopt.NonPrivate, 0},
}

// fig4 runs the whole Fig. 4 setting in one process, with the defaults of
// cmd/ofl: n = 10 learners, tau = 10, R = 800, synthetic(0.1, 0.1) with
// d = 60, L2 = 1e-4, eta = 0.003, eta_g = 1, B_g = 5, exact calibration,
// 20 repetitions, loss error evaluated every 20 rounds. The data set, x*,
// the per-round minima and the optimal factorization are computed once and
// shared, as a script looping over cmd/ofl would recompute them per curve.
// It returns the final mean loss errors in the order of fig4Runs.
func fig4(ctx context.Context, seed uint64) ([]float64, error) {
	ds, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1}.Dataset(10, 800, 10, seed)
	if err != nil {
		return nil, err
	}
	p, err := experiment.NewProblem(ctx, ds, model.Logistic{L2: 1e-4}, experiment.ProblemOptions{})
	if err != nil {
		return nil, err
	}
	w, err := factorize.Prefix(800)
	if err != nil {
		return nil, err
	}
	opt, err := factorize.Optimal(ctx, w, factorize.Options{})
	if err != nil {
		return nil, err
	}
	final := make([]float64, len(fig4Runs))
	for k, c := range fig4Runs {
		e := experiment.Experiment{
			Problem:       p,
			Config:        fedopt.Config{Algorithm: c.algo, Eta: 0.003, EtaG: 1, Clip: 5, EvalEvery: 20},
			Factorization: opt,
			Plan:          &plan.Plan{Target: &plan.Target{Eps: c.eps, Delta: 1e-3, Calibration: plan.Exact}},
			Repeat:        experiment.RepeatOptions{Reps: 20},
			Seed:          seed,
			Seeded:        true,
		}
		res, err := e.Run(ctx)
		if err != nil {
			return nil, fmt.Errorf("%v eps=%v: %w", c.algo, c.eps, err)
		}
		final[k], _, _, _ = res.Summary.Final()
	}
	return final, nil
}

// BenchmarkFig4 is the paper's Fig. 4 setting (five curves, 20 repetitions
// each); the target is at most 60 s per iteration on a 2-core machine. Run
// it once:
//
//	go test -run '^$' -bench Fig4 -benchtime 1x ./bench/
func BenchmarkFig4(b *testing.B) {
	var final []float64
	for b.Loop() {
		var err error
		if final, err = fig4(context.Background(), 1); err != nil {
			b.Fatal(err)
		}
	}
	for k, c := range fig4Runs {
		name := c.algo.String()
		if c.algo.Private() {
			name += fmt.Sprintf("-eps%g", c.eps)
		}
		b.ReportMetric(final[k], "loss_error_"+name)
	}
}

// BenchmarkFedoptRun times one repetition of Algorithm 1 in the Fig. 4
// setting (800 rounds, 10 learners x 10 local steps, d = 60, the optimal
// factorization's noise, loss error every 20 rounds), the unit of work of
// BenchmarkFig4.
func BenchmarkFedoptRun(b *testing.B) {
	ctx := context.Background()
	ds, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1}.Dataset(10, 800, 10, 1)
	if err != nil {
		b.Fatal(err)
	}
	p, err := experiment.NewProblem(ctx, ds, model.Logistic{L2: 1e-4}, experiment.ProblemOptions{})
	if err != nil {
		b.Fatal(err)
	}
	w, _ := factorize.Prefix(800)
	f, err := factorize.Optimal(ctx, w, factorize.Options{})
	if err != nil {
		b.Fatal(err)
	}
	cfg := fedopt.Config{Algorithm: fedopt.Correlated, Eta: 0.003, EtaG: 1, Clip: 5, EvalEvery: 20}
	pl := &plan.Plan{Algorithm: plan.AlgoCorrelated, Rounds: 800, Learners: 10, Clip: 5, Target: &plan.Target{Eps: 5, Delta: 1e-3}}
	if err := pl.Calibrate(ctx, f); err != nil {
		b.Fatal(err)
	}
	priv, err := fedopt.PrivacyOf(pl)
	if err != nil {
		b.Fatal(err)
	}
	noise := experiment.FactorizationNoise(f, 60, priv.NoiseStd, 1)
	rep := 0
	for b.Loop() {
		m, err := noise(rep)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := experiment.Run(ctx, p, cfg, m); err != nil {
			b.Fatal(err)
		}
		rep++
	}
}

// BenchmarkReleaseClipped measures what holding every update to tau B_g
// exactly costs the server (Server.Release's fitNorm): n = 10 learners'
// honest updates (B_g = 1; each the sum of tau seeded Gaussian vectors
// clipped by fedopt.Clip, so with tau = 1 its norm is B_g up to rounding
// and with tau = 4 it is typically near 2 B_g, far within tau B_g),
// released by a nonprivate server with clipping (every update's exact norm
// checked) and by the same server without clipping (B_g = 0: no check),
// alternating, reps = 7 times each. The metrics are the medians of the two
// (process CPU time, ns per Release) and their ratio; on a shared machine
// read the ratio, not the times:
//
//	go test -run '^$' -bench ReleaseClipped -benchtime 1x ./bench/
func BenchmarkReleaseClipped(b *testing.B) {
	const n, reps = 10, 7
	for _, tau := range []int{1, 4} {
		for _, d := range []int{1e4, 1e6} {
			b.Run(fmt.Sprintf("tau=%d/d=%d", tau, d), func(b *testing.B) {
				rng := rand.New(rand.NewPCG(1, uint64(d)))
				updates := make([][]float64, n)
				g := make([]float64, d)
				for i := range updates {
					u := make([]float64, d)
					for range tau {
						for k := range g {
							g[k] = rng.NormFloat64()
						}
						fedopt.Clip(g, 1)
						floats.Add(u, g)
					}
					updates[i] = u
				}
				shape := fedopt.Shape{Learners: n, Rounds: reps * b.N, Tau: tau, Dim: d}
				on, err := fedopt.NewServer(fedopt.Config{Algorithm: fedopt.NonPrivate, Eta: 0.1, EtaG: 1, Clip: 1}, shape, nil)
				if err != nil {
					b.Fatal(err)
				}
				off, err := fedopt.NewServer(fedopt.Config{Algorithm: fedopt.NonPrivate, Eta: 0.1, EtaG: 1}, shape, nil)
				if err != nil {
					b.Fatal(err)
				}
				var tOn, tOff []float64
				for range b.N {
					for range reps {
						for _, c := range []struct {
							srv *fedopt.Server
							t   *[]float64
						}{{on, &tOn}, {off, &tOff}} {
							start := procusage.SelfCPU()
							if err := c.srv.Release(updates); err != nil {
								b.Fatal(err)
							}
							*c.t = append(*c.t, (procusage.SelfCPU()-start)*1e9)
						}
					}
				}
				mOn, mOff := median(tOn), median(tOff)
				b.ReportMetric(mOn, "ns/clipped")
				b.ReportMetric(mOff, "ns/unclipped")
				b.ReportMetric(mOn/mOff, "ratio")
			})
		}
	}
}

// median returns the median of x (x is sorted in place).
func median(x []float64) float64 {
	slices.Sort(x)
	k := len(x)
	if k%2 == 1 {
		return x[k/2]
	}
	return (x[k/2-1] + x[k/2]) / 2
}

// plainClip is the clip that fedopt.Clip replaced: g scaled by
// bound/||g|| where the float64 norm exceeds bound, with no exact check.
func plainClip(g []float64, bound float64) {
	ss := 0.0
	for _, v := range g {
		ss += v * v
	}
	if n := math.Sqrt(ss); n > bound {
		floats.Scale(bound/n, g)
	}
}

// BenchmarkClip measures what the exact clip (fedopt.Clip: the result's
// norm at most the bound in exact arithmetic) costs against a plain clip
// (plainClip), on seeded Gaussian gradients of dimension d: "scale" clips
// them to half their norm (every call scales and checks the result),
// "within" to twice it (the float64 norm decides, nothing is scaled). Each
// sample clips fresh copies of the same 16 gradients, max(1, 2 10^5 / d)
// times over, with one clip, the next with the other, reps = 9 samples
// each; the metrics are the medians (process CPU time, ns per clip,
// copying included) and their ratio.
// On a shared machine read the ratio, not the times:
//
//	go test -run '^$' -bench 'Clip$' -benchtime 1x ./bench/
func BenchmarkClip(b *testing.B) {
	const m, reps = 16, 9
	for _, d := range []int{10, 1e3, 1e5} {
		for _, c := range []struct {
			name string
			f    float64
		}{{"scale", 0.5}, {"within", 2}} {
			b.Run(fmt.Sprintf("d=%d/%s", d, c.name), func(b *testing.B) {
				rng := rand.New(rand.NewPCG(2, uint64(d)))
				gs, bounds := make([][]float64, m), make([]float64, m)
				for i := range gs {
					gs[i] = make([]float64, d)
					for k := range gs[i] {
						gs[i][k] = rng.NormFloat64()
					}
					bounds[i] = c.f * floats.Norm(gs[i], 2)
				}
				work := make([]float64, d)
				loops := max(1, 200000/d)
				var tExact, tPlain []float64
				for range b.N {
					for range reps {
						for _, exact := range []bool{true, false} {
							start := procusage.SelfCPU()
							for range loops {
								for i, g := range gs {
									copy(work, g)
									if exact {
										fedopt.Clip(work, bounds[i])
									} else {
										plainClip(work, bounds[i])
									}
								}
							}
							t := (procusage.SelfCPU() - start) * 1e9 / float64(m*loops)
							if exact {
								tExact = append(tExact, t)
							} else {
								tPlain = append(tPlain, t)
							}
						}
					}
				}
				mE, mP := median(tExact), median(tPlain)
				b.ReportMetric(mE, "ns/exact")
				b.ReportMetric(mP, "ns/plain")
				b.ReportMetric(mE/mP, "ratio")
			})
		}
	}
}
