package fedopt

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/dpmf/dpmf/mechanism"
	"github.com/dpmf/dpmf/plan"
)

// trajModel is a per-sample gradient a + y x: it depends on the point
// (so that one sample of Algorithm 1 moves its learner's later gradients)
// and is as large as the data make it. A sample with a = 0 and y = 0 has
// gradient 0: an absent client (add/remove).
type trajModel struct{}

func (trajModel) NumParams(d int) int                    { return d }
func (trajModel) Loss(x, a []float64, y float64) float64 { return 0 }
func (trajModel) Grad(dst, x, a []float64, y float64) {
	for k := range dst {
		dst[k] = a[k] + y*x[k]
	}
}

// sample is one client.
type sample struct {
	a []float64
	y float64
}

// tableStream serves round 0's clients from a table, with one of them
// (step t0) replaced.
type tableStream struct {
	base []sample
	t0   int
	repl *sample
}

func (s tableStream) Sample(r, t int) ([]float64, float64) {
	if s.repl != nil && t == s.t0 {
		return s.repl.a, s.repl.y
	}
	c := s.base[t%len(s.base)]
	return c.a, c.y
}

// TestNeighbourSensitivityBruteForce checks the sensitivity the record
// states against the released models of neighbouring data sets, by brute
// force over adversarial clients (entries near the float64 maximum, Inf,
// NaN, opposite directions, labels that make the gradient follow the local
// trajectory), for every private algorithm, tau in {1, 2, 3} and n in
// {1, 3}: one round from x^0 != 0 with the same noise key, so that
// (x^1(D) - x^1(D')) / eta~ is the difference of the round's directions.
// The independent bound: every clipped gradient has norm at most B_g, so a
// learner's update moves by at most 2 tau B_g (Algorithm 1, whose whole
// trajectory may move, averaged over n tau) or 2 B_g (the baselines, one
// gradient at x^r, averaged over n): 2 B_g / n per round, and B_g / n for
// add/remove (the client against an absent one, gradient 0) where the
// record may claim it (baselines; Algorithm 1 with tau = 1). The record's
// release sensitivity at R = 1 (C = [1]) must be that bound, and no pair
// may exceed it. Dropping the other learners (nil updates) must not change
// the difference (the aggregate is normalised by the planned n).
func TestNeighbourSensitivityBruteForce(t *testing.T) {
	const d, clip = 2, 0.75
	huge := math.MaxFloat64 / 2
	cands := []sample{
		{[]float64{0, 0}, 0}, // absent
		{[]float64{huge, -huge}, 0},
		{[]float64{-huge, huge}, 0},
		{[]float64{math.Inf(1), 0}, 0},
		{[]float64{0, math.Inf(-1)}, 0},
		{[]float64{math.NaN(), 1}, 0},
		{[]float64{0.3, 0.4}, 0},
		{[]float64{-3, -4}, 1e6},
		{[]float64{0, 0}, -huge},
		{[]float64{0, 0}, huge},
		{[]float64{1e-300, 0}, 0},
	}
	base := []sample{{[]float64{0.2, -0.1}, 50}, {[]float64{-0.4, 0.3}, -80}, {[]float64{1e5, 2}, 0}}
	x0 := []float64{0.5, -1.5}
	for _, algo := range []Algorithm{Correlated, Independent, BaselineCorrelated} {
		for _, n := range []int{1, 3} {
			for _, tau := range []int{1, 2, 3} {
				name := fmt.Sprintf("%v/n=%d/tau=%d", algo, n, tau)
				p := &plan.Plan{Algorithm: algo.String(), Rounds: 1, Learners: n, Tau: tau, Clip: clip, Target: &plan.Target{Eps: 1, Delta: 1e-5}}
				f, err := p.Build(context.Background())
				if err != nil {
					t.Fatal(name, err)
				}
				pr, err := PrivacyOf(p)
				if err != nil {
					t.Fatal(name, err)
				}
				bound := 2 * clip / float64(n)
				if math.Abs(pr.Sensitivity-bound) > 1e-15*bound || pr.UnitSensitivity.Value != 1 {
					t.Fatalf("%s: record sensitivity %v (unit %v), want 2 B_g / n = %v", name, pr.Sensitivity, pr.UnitSensitivity.Value, bound)
				}
				cfg := Config{Algorithm: algo, Eta: 0.01, EtaG: 1.5, Clip: clip, X0: x0, Privacy: pr}
				step := cfg.ServerStep(tau)
				// release runs one round with learner 0's client t0 replaced
				// by c; drop: the other learners send nothing.
				release := func(t0 int, c *sample, drop bool) []float64 {
					noise, err := mechanism.New(f, d, pr.NoiseStd, mechanism.WithSeed(3))
					if err != nil {
						t.Fatal(err)
					}
					srv, err := NewServer(cfg, Shape{Learners: n, Rounds: 1, Tau: tau, Dim: d}, noise)
					if err != nil {
						t.Fatal(name, err)
					}
					ups := make([][]float64, n)
					for i := range ups {
						if drop && i > 0 {
							continue
						}
						s := tableStream{base: base[i%len(base):]}
						if i == 0 {
							s.t0, s.repl = t0, c
						}
						l, err := NewLearner(trajModel{}, s, cfg, tau, d)
						if err != nil {
							t.Fatal(err)
						}
						ups[i] = make([]float64, d)
						if err := l.Update(ups[i], 0, x0); err != nil {
							t.Fatal(err)
						}
					}
					if err := srv.Release(ups); err != nil {
						t.Fatalf("%s: client %d = %v: %v", name, t0, c, err)
					}
					return append([]float64(nil), srv.Model()...)
				}
				dist := func(x, y []float64) float64 { return math.Hypot(x[0]-y[0], x[1]-y[1]) / step }
				addRemove := algo != Correlated || tau == 1
				worst, worstAR := 0.0, 0.0
				for t0 := range tau {
					xs := make([][]float64, len(cands))
					for k := range cands {
						xs[k] = release(t0, &cands[k], false)
					}
					for j := range cands {
						for k := range j {
							dd := dist(xs[j], xs[k])
							worst = math.Max(worst, dd)
							if k == 0 {
								worstAR = math.Max(worstAR, dd)
							}
						}
					}
					if n > 1 {
						a, b := release(t0, &cands[1], true), release(t0, &cands[2], true)
						if got, want := dist(a, b), dist(xs[1], xs[2]); math.Abs(got-want) > 1e-9*want {
							t.Errorf("%s: with the other learners dropped the neighbours' directions differ by %v, with them present %v: the aggregate is not normalised by the planned n", name, got, want)
						}
					}
				}
				tol := 1e-9 * bound
				if worst > bound+tol {
					t.Errorf("%s: neighbouring directions differ by %v, above the record's 2 B_g / n = %v", name, worst, bound)
				}
				if addRemove && worstAR > bound/2+tol {
					t.Errorf("%s: a client against an absent one moves the direction by %v, above the add/remove bound B_g / n = %v", name, worstAR, bound/2)
				}
				// Not vacuous: opposite saturated clients reach the bound in
				// the baselines (one gradient each) and at tau = 1.
				if (algo != Correlated || tau == 1) && worst < bound*(1-1e-9) {
					t.Errorf("%s: the largest difference %v does not reach 2 B_g / n = %v", name, worst, bound)
				}
			}
		}
	}
}

// TestServerNoiseIsCInverseZ recomputes the noise a private server adds
// from the mechanism's documented derivation: round r adds row r of
// std A^{-1} B Z (C^{-1} Z for square factors), Z with independent
// standard entries. Every learner drops out (nil updates), so
// x^{r+1} - x^r = -eta~ w^r. Z is read from a mechanism of the identity
// factorization with the same key (Z depends on the key only) and std 1;
// B and C are the strategy's dense factors, checked first to be causal
// with B C = A (the prefix sums); C^{-1} Z is a forward substitution of
// our own. The std is the record's, which is the published analytic
// Gaussian sigma(1, 1e-5) = 3.73063163 times 2 gamma B_g / n, gamma the
// largest column norm of C computed here.
func TestServerNoiseIsCInverseZ(t *testing.T) {
	const R, d, n, tau, clip, seed = 6, 3, 2, 2, 0.5, 11
	ctx := context.Background()
	zPlan := &plan.Plan{Algorithm: plan.AlgoCorrelated, Strategy: "identity", Rounds: R, Learners: n, Tau: tau, Clip: clip, Target: &plan.Target{Eps: 1, Delta: 1e-5}}
	fz, err := zPlan.Factorize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, strat := range []string{"optimal", "sqrt", "banded:bands=2", "blt:buffers=2", "tree"} {
		p := &plan.Plan{Algorithm: plan.AlgoCorrelated, Strategy: strat, Rounds: R, Learners: n, Tau: tau, Clip: clip, Target: &plan.Target{Eps: 1, Delta: 1e-5}}
		f, err := p.Build(ctx)
		if err != nil {
			t.Fatal(strat, err)
		}
		pr, err := PrivacyOf(p)
		if err != nil {
			t.Fatal(err)
		}
		B, C, err := f.Factors()
		if err != nil {
			t.Fatal(strat, err)
		}
		m, _ := C.Dims()
		square := m == R
		// B C = A, B lower-triangular (causal), gamma = max column norm.
		gamma := 0.0
		for j := range R {
			s := 0.0
			for i := range m {
				s += C.At(i, j) * C.At(i, j)
			}
			gamma = math.Max(gamma, math.Sqrt(s))
			for i := range R {
				bc := 0.0
				for k := range m {
					bc += B.At(i, k) * C.At(k, j)
				}
				want := 0.0
				if j <= i {
					want = 1
				}
				if math.Abs(bc-want) > 1e-9 {
					t.Fatalf("%s: (B C)[%d][%d] = %v, want %v", strat, i, j, bc, want)
				}
			}
		}
		if math.Abs(pr.Gamma-gamma) > 1e-9*gamma {
			t.Errorf("%s: record gamma %v, the largest column norm of C is %v", strat, pr.Gamma, gamma)
		}
		if want := 3.73063163 * 2 * gamma * clip / n; math.Abs(pr.NoiseStd-want) > 1e-7*want {
			t.Errorf("%s: record noise std %v, want sigma(1, 1e-5) 2 gamma B_g / n = %v", strat, pr.NoiseStd, want)
		}
		// Z: m rows from the identity mechanism of m rounds and the same key.
		if m != R {
			q := *zPlan
			q.Rounds = m
			if fz, err = q.Factorize(ctx); err != nil {
				t.Fatal(err)
			}
		}
		zm, err := mechanism.New(fz, d, 1, mechanism.WithSeed(seed))
		if err != nil {
			t.Fatal(err)
		}
		Z := make([][]float64, m)
		for i := range Z {
			Z[i] = make([]float64, d)
			if err := zm.Next(Z[i]); err != nil {
				t.Fatal(err)
			}
		}
		// want[r] = row r of A^{-1} B Z; for square C also C^{-1} Z.
		want := make([][]float64, R)
		prev := make([]float64, d)
		for r := range R {
			want[r] = make([]float64, d)
			for k := range d {
				bz := 0.0
				for j := range m {
					bz += B.At(r, j) * Z[j][k]
				}
				want[r][k] = bz - prev[k]
				prev[k] = bz
			}
		}
		if square {
			w := make([][]float64, R)
			for r := range R {
				w[r] = make([]float64, d)
				for k := range d {
					s := Z[r][k]
					for j := range r {
						s -= C.At(r, j) * w[j][k]
					}
					w[r][k] = s / C.At(r, r)
					if math.Abs(w[r][k]-want[r][k]) > 1e-9 {
						t.Fatalf("%s: C^{-1} Z and A^{-1} B Z differ at (%d, %d): %v, %v", strat, r, k, w[r][k], want[r][k])
					}
				}
			}
		}
		noise, err := mechanism.New(f, d, pr.NoiseStd, mechanism.WithSeed(seed))
		if err != nil {
			t.Fatal(err)
		}
		cfg := Config{Algorithm: Correlated, Eta: 0.25, EtaG: 1, Clip: clip, Privacy: pr}
		srv, err := NewServer(cfg, Shape{Learners: n, Rounds: R, Tau: tau, Dim: d}, noise)
		if err != nil {
			t.Fatal(strat, err)
		}
		step := cfg.ServerStep(tau)
		for r := range R {
			x := append([]float64(nil), srv.Model()...)
			if err := srv.Release(make([][]float64, n)); err != nil {
				t.Fatal(err)
			}
			for k := range d {
				got := (x[k] - srv.Model()[k]) / step
				if w := pr.NoiseStd * want[r][k]; math.Abs(got-w) > 1e-9*(1+math.Abs(w)) {
					t.Errorf("%s: round %d, coordinate %d: noise %v, want std (A^{-1} B Z)[%d] = %v", strat, r, k, got, r, w)
				}
			}
		}
	}
}
