package experiment

import (
	"context"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/dpmf/dpmf/dataset"
	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/internal/testutil"
	"github.com/dpmf/dpmf/mechanism"
	"github.com/dpmf/dpmf/model"
	"github.com/dpmf/dpmf/plan"
)

// referenceRun is the optimiser as one loop, the way Run was written before
// it was split into a Learner, a Server and an Evaluator: learners,
// aggregation, noise and metrics interleaved. The split must reproduce it
// bit for bit.
func referenceRun(p *Problem, cfg fedopt.Config, noise mechanism.Mechanism) *Trace {
	data := p.Data
	n, R, tau := data.Learners, data.Rounds, data.Tau
	dim := p.Model.NumParams(data.Dim)
	every := max(cfg.EvalEvery, 1)
	x := make([]float64, dim)
	copy(x, cfg.X0)
	type buffers struct{ z, sum, g []float64 }
	ws := make([]buffers, n)
	for i := range ws {
		ws[i] = buffers{make([]float64, dim), make([]float64, dim), make([]float64, dim)}
	}
	round := func(w *buffers, i, r int) {
		copy(w.z, x)
		clear(w.sum)
		at := w.z
		if !cfg.Algorithm.LocalSteps() {
			at = x
		}
		for t := 0; t < tau; t++ {
			a, y := data.Sample(i, r, t)
			p.Model.Grad(w.g, at, a, y)
			if cfg.Clip > 0 {
				fedopt.Clip(w.g, cfg.Clip)
			}
			for k, v := range w.g {
				w.sum[k] += v
			}
			if cfg.Algorithm.LocalSteps() {
				for k, v := range w.g {
					w.z[k] -= cfg.Eta * v
				}
			}
		}
	}
	dir := make([]float64, dim)
	nz := make([]float64, dim)
	step := cfg.ServerStep(tau)
	scale := 1 / float64(n*tau)
	if !cfg.Algorithm.LocalSteps() {
		scale = 1 / float64(n)
	}
	tr := &Trace{}
	reg, sreg := 0.0, 0.0
	var iterates [][]float64
	record := func(r int) {
		tr.Rounds = append(tr.Rounds, r)
		iterates = append(iterates, slices.Clone(x))
		if p.dynamicAvailable() {
			tr.Regret = append(tr.Regret, reg)
		} else {
			tr.Regret = append(tr.Regret, math.NaN())
		}
		tr.StaticRegret = append(tr.StaticRegret, sreg)
		if cfg.Privacy != nil {
			tr.Privacy = append(tr.Privacy, cfg.Privacy.RecordAt(r))
		}
	}
	var wg sync.WaitGroup
	for r := 0; r < R; r++ {
		if r%every == 0 {
			record(r)
		}
		fr := model.AverageLoss(p.Model, x, data.Round(r))
		if p.dynamicAvailable() {
			reg += float64(tau) * (fr - p.RoundStar[r])
		}
		sreg += float64(tau) * (fr - p.RoundAtXStar[r])
		for i := range ws {
			if cfg.ParallelLearners {
				wg.Go(func() { round(&ws[i], i, r) })
			} else {
				round(&ws[i], i, r)
			}
		}
		wg.Wait()
		clear(dir)
		for i := range ws {
			for k, v := range ws[i].sum {
				dir[k] += v
			}
		}
		for k := range dir {
			dir[k] *= scale
		}
		if noise != nil {
			if err := noise.Next(nz); err != nil {
				panic(err)
			}
			for k := range dir {
				dir[k] += nz[k]
			}
		}
		for k := range x {
			x[k] -= step * dir[k]
		}
	}
	record(R)
	tr.X = x
	tr.LossError, tr.Accuracy = p.Evaluate(iterates)
	return tr
}

// Run, now the simulation of a Server, Learners and an Evaluator, gives the
// traces of the single loop bit for bit, for every algorithm, with real
// mechanisms, clipping on and off, an initial model and parallel learners.
func TestRunMatchesReferenceLoop(t *testing.T) {
	const n, R, tau, d = 4, 12, 3, 5
	ds, err := dataset.Synthetic{Alpha: 0.3, Beta: 0.3, Dim: d}.Dataset(n, R, tau, 21)
	if err != nil {
		t.Fatal(err)
	}
	p := mustProblem(t, ds, model.Logistic{L2: 1e-2})
	w, err := factorize.Prefix(R)
	if err != nil {
		t.Fatal(err)
	}
	f, err := factorize.OptimalStrategy{}.Factorize(context.Background(), w, factorize.Participation{})
	if err != nil {
		t.Fatal(err)
	}
	ident, err := factorize.IdentityStrategy{}.Factorize(context.Background(), w, factorize.SingleParticipation())
	if err != nil {
		t.Fatal(err)
	}
	mech := func(fz *factorize.Factorization, seed uint64) func() mechanism.Mechanism {
		return func() mechanism.Mechanism {
			m, err := mechanism.New(fz, d, 0.05, mechanism.WithSeed(seed))
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
	}
	pl := &plan.Plan{Algorithm: plan.AlgoCorrelated, Rounds: R, Learners: n, Clip: 0.5, Target: &plan.Target{Eps: 5, Delta: 1e-3}}
	if err := pl.Calibrate(t.Context(), f); err != nil {
		t.Fatal(err)
	}
	priv, err := fedopt.PrivacyOf(pl)
	if err != nil {
		t.Fatal(err)
	}
	privMech := func() mechanism.Mechanism {
		m, err := mechanism.New(f, d, priv.NoiseStd, mechanism.WithSeed(3))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	cases := []struct {
		name  string
		cfg   fedopt.Config
		noise func() mechanism.Mechanism
	}{
		{"nonprivate", fedopt.Config{Algorithm: fedopt.NonPrivate, Eta: 0.2, EtaG: 1.5, EvalEvery: 5}, nil},
		{"nonprivate-clip-x0", fedopt.Config{Algorithm: fedopt.NonPrivate, Eta: 0.2, EtaG: 1, Clip: 0.3, X0: []float64{0.1, -0.2, 0.3, 0, 1}}, nil},
		{"correlated", fedopt.Config{Algorithm: fedopt.Correlated, Eta: 0.1, EtaG: 1, Clip: 0.5, EvalEvery: 4}, mech(f, 7)},
		{"correlated-parallel", fedopt.Config{Algorithm: fedopt.Correlated, Eta: 0.1, EtaG: 2, Clip: 0.5, EvalEvery: 7, ParallelLearners: true}, mech(f, 8)},
		{"correlated-privacy", fedopt.Config{Algorithm: fedopt.Correlated, Eta: 0.1, EtaG: 1, Clip: 0.5, EvalEvery: 3, Privacy: priv}, privMech},
		{"independent", fedopt.Config{Algorithm: fedopt.Independent, Eta: 0.1, EtaG: 1, EtaInd: 0.05, Clip: 0.5}, mech(ident, 9)},
		{"baseline-correlated", fedopt.Config{Algorithm: fedopt.BaselineCorrelated, Eta: 0.1, EtaG: 1, Clip: 0.5, EvalEvery: 2}, mech(f, 10)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var m1, m2 mechanism.Mechanism
			if c.noise != nil {
				m1, m2 = c.noise(), c.noise()
			}
			want := referenceRun(p, c.cfg, m1)
			got := mustRun(t, p, c.cfg, m2)
			if !slices.Equal(got.Rounds, want.Rounds) {
				t.Fatalf("rounds %v, want %v", got.Rounds, want.Rounds)
			}
			for _, fld := range []struct {
				name      string
				got, want []float64
			}{
				{"X", got.X, want.X}, {"LossError", got.LossError, want.LossError},
				{"Accuracy", got.Accuracy, want.Accuracy}, {"Regret", got.Regret, want.Regret},
				{"StaticRegret", got.StaticRegret, want.StaticRegret},
			} {
				if !testutil.SameBits(fld.got, fld.want) {
					t.Errorf("%s = %v, want %v bit for bit", fld.name, fld.got, fld.want)
				}
			}
			if !slices.Equal(got.Privacy, want.Privacy) {
				t.Errorf("privacy records differ")
			}
		})
	}
}

// The server treats a missing update as zero, divides by the planned n, and
// rejects bad updates without changing its model.
func TestServerRelease(t *testing.T) {
	cfg := fedopt.Config{Algorithm: fedopt.NonPrivate, Eta: 0.5, EtaG: 1, Clip: 1}
	srv, err := fedopt.NewServer(cfg, fedopt.Shape{Learners: 2, Rounds: 2, Tau: 2, Dim: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Server step eta eta_g tau = 1, scale 1/(n tau) = 1/4: x^1 = -(1/4)(u_0).
	if err := srv.Release([][]float64{{1, 0.5}, nil}); err != nil {
		t.Fatal(err)
	}
	if x := srv.Model(); x[0] != -0.25 || x[1] != -0.125 || srv.Round() != 1 {
		t.Fatalf("x^1 = %v at round %d, want [-0.25 -0.125] at round 1", x, srv.Round())
	}
	bad := []struct {
		u    []float64
		want string
	}{
		{[]float64{1}, "dimension 1, want 2"},
		{[]float64{math.NaN(), 0}, "entry 0 is NaN"},
		{[]float64{0, math.Inf(-1)}, "entry 1 is -Inf"},
		{[]float64{2, 0.1}, "norm"}, // tau B_g = 2
	}
	for _, b := range bad {
		err := srv.Release([][]float64{{0, 0}, b.u})
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("update %v: error %v, want one containing %q", b.u, err, b.want)
		}
	}
	if x := srv.Model(); x[0] != -0.25 || x[1] != -0.125 || srv.Round() != 1 {
		t.Fatalf("after rejected updates x = %v at round %d, want unchanged", x, srv.Round())
	}
	// Without clipping, finite updates whose step overflows are refused:
	// their mean MaxFloat64 is finite (a sum past MaxFloat64 is taken
	// again scaled), the step 2 MaxFloat64 along it is not.
	open, err := fedopt.NewServer(fedopt.Config{Algorithm: fedopt.NonPrivate, Eta: 2, EtaG: 1}, fedopt.Shape{Learners: 2, Rounds: 1, Tau: 1, Dim: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := open.Release([][]float64{{math.MaxFloat64}, {math.MaxFloat64}}); err == nil || !strings.Contains(err.Error(), "entry 0 is -Inf") || open.Round() != 0 || open.Model()[0] != 0 {
		t.Errorf("overflowing updates: %v, round %d, x %v; want an error and nothing released", err, open.Round(), open.Model())
	}
	if err := srv.Release([][]float64{nil}); err == nil {
		t.Error("one update slot for two learners accepted")
	}
	if err := srv.Release([][]float64{nil, nil}); err != nil {
		t.Fatal(err)
	}
	if err := srv.Release([][]float64{nil, nil}); err == nil {
		t.Error("release after the last round accepted")
	}
}

// A server resumed at round r with x^r and a mechanism started at round r
// releases the same models as an uninterrupted one.
func TestServerResume(t *testing.T) {
	const n, R, tau, d = 3, 9, 2, 4
	ds, err := dataset.Synthetic{Alpha: 0.3, Beta: 0.3, Dim: d}.Dataset(n, R, tau, 4)
	if err != nil {
		t.Fatal(err)
	}
	w, _ := factorize.Prefix(R)
	f, err := factorize.OptimalStrategy{}.Factorize(context.Background(), w, factorize.Participation{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := fedopt.Config{Algorithm: fedopt.Correlated, Eta: 0.1, EtaG: 1, Clip: 0.5}
	shape := fedopt.Shape{Learners: n, Rounds: R, Tau: tau, Dim: d}
	learners := make([]*fedopt.Learner, n)
	for i := range learners {
		if learners[i], err = fedopt.NewLearner(model.Logistic{}, ds.Stream(i), cfg, tau, d); err != nil {
			t.Fatal(err)
		}
	}
	run := func(start int, x []float64) [][]float64 {
		m, err := mechanism.New(f, d, 0.1, mechanism.WithSeed(1), mechanism.WithStartRound(start))
		if err != nil {
			t.Fatal(err)
		}
		srv, err := fedopt.NewServerAt(cfg, shape, m, start, x)
		if err != nil {
			t.Fatal(err)
		}
		var xs [][]float64
		err = fedopt.Simulate(context.Background(), srv, learners, fedopt.SimOptions{Observe: func(r int, x []float64) error {
			xs = append(xs, slices.Clone(x))
			return nil
		}})
		if err != nil {
			t.Fatal(err)
		}
		return xs
	}
	full := run(0, nil)
	for _, start := range []int{1, 4, R} {
		part := run(start, full[start])
		for k, x := range part {
			if !testutil.SameBits(x, full[start+k]) {
				t.Errorf("resumed at %d: x^%d = %v, want %v", start, start+k, x, full[start+k])
			}
		}
	}
}
