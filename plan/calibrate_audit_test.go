package plan

import (
	"math"
	"testing"

	"github.com/dpmf/dpmf/factorize"
	"gonum.org/v1/gonum/mat"
)

// agmDelta returns the delta at eps of the Gaussian mechanism with L2
// sensitivity d and noise std s (Balle and Wang 2018, "Improving the
// Gaussian mechanism for differential privacy", Thm. 8):
// Phi(d/(2s) - eps s/d) - e^eps Phi(-d/(2s) - eps s/d).
func agmDelta(eps, d, s float64) float64 {
	phi := func(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
	return phi(d/(2*s)-eps*s/d) - math.Exp(eps)*phi(-d/(2*s)-eps*s/d)
}

// agmStd returns the least noise std at which the Gaussian mechanism with
// sensitivity d is (eps, delta)-DP, by bisection on agmDelta (decreasing
// in s), to the last bit, on the safe side.
func agmStd(eps, delta, d float64) float64 {
	lo, hi := 1e-3*d, d
	for agmDelta(eps, d, hi) > delta {
		lo, hi = hi, 2*hi
	}
	for i := 0; i < 200 && lo < hi; i++ {
		mid := lo + (hi-lo)/2
		if mid == lo || mid == hi {
			break
		}
		if agmDelta(eps, d, mid) > delta {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// bruteUnitSens returns the sensitivity of a C with C^T C >= 0 entrywise
// under the pattern (fixed epochs or min-separation) over its n rounds:
// the largest sum of X = C^T C over S x S for the patterns S, enumerated
// from the definitions (epochs: the residue classes; min-separation: every
// set of at most k rounds pairwise at least b apart, k = 0 for no limit).
func bruteUnitSens(t *testing.T, c mat.Matrix, p factorize.Participation) float64 {
	t.Helper()
	_, n := c.Dims()
	var x mat.Dense
	x.Mul(c.T(), c)
	best := 0.0
	score := func(s []int) {
		v := 0.0
		for _, i := range s {
			for _, j := range s {
				if x.At(i, j) < 0 {
					t.Fatalf("X[%d][%d] = %v < 0: the brute force needs X >= 0", i, j, x.At(i, j))
				}
				v += x.At(i, j)
			}
		}
		best = math.Max(best, v)
	}
	switch p.Kind {
	case factorize.KindEpochs:
		per := n / p.K
		for r := 0; r < per; r++ {
			var s []int
			for i := r; i < n; i += per {
				s = append(s, i)
			}
			score(s)
		}
	case factorize.KindMinSep:
		var rec func(next int, s []int)
		rec = func(next int, s []int) {
			score(s)
			if p.K != 0 && len(s) == p.K {
				return
			}
			for i := next; i < n; i++ {
				rec(i+p.B, append(s, i))
			}
		}
		rec(0, nil)
	default:
		t.Fatalf("pattern %v", p)
	}
	return math.Sqrt(best)
}

// TestCalibrateAgainstAnalyticGaussian pins the plan's noise std end to
// end, from the plan to the std, under multiple participation and both
// relations: it is sigma(eps, delta) x (2 for replace-one, 1 for
// add/remove) x clip / learners x sens, with sigma from the analytic
// Gaussian mechanism solved here by bisection and sens the factorization's
// reported sensitivity, which is checked against the brute-force maximum
// over every pattern of the plan's C: equal where it is exact (sqrt's
// Toeplitz C under min-separation, the tree under epochs), and not below it
// where it is a bound (the optimum's dynamic-programming bound), so that
// the std is never below the one the true sensitivity needs.
func TestCalibrateAgainstAnalyticGaussian(t *testing.T) {
	if s := agmStd(2, 1e-5, 1); math.Abs(s-1.99381245) > 1e-8 {
		t.Fatalf("bisection: sigma(2, 1e-5) = %.10g, want the published 1.99381245", s)
	}
	const rounds, learners, clip, eps, delta = 9, 5, 1.5, 2.0, 1e-5
	for _, c := range []struct {
		strategy, participation, relation string
		factor                            float64
		exact                             bool
	}{
		{factorize.StrategySqrt, "minsep:3,2", "add-remove", 1, true},
		{factorize.StrategyTree, "epochs:3", "replace-one", 2, true},
		{factorize.StrategyOptimal, "minsep:2", "", 2, false},
	} {
		p := &Plan{Algorithm: AlgoCorrelated, Strategy: c.strategy, Participation: c.participation, Rounds: rounds,
			Learners: learners, Clip: clip, Target: &Target{Eps: eps, Delta: delta, Relation: c.relation}}
		f, err := p.Build(t.Context())
		if err != nil {
			t.Fatalf("%s under %s: %v", c.strategy, c.participation, err)
		}
		_, fc, err := f.Factors()
		if err != nil {
			t.Fatal(err)
		}
		part, _ := p.Pattern()
		truth := bruteUnitSens(t, fc, part)
		rec := p.Privacy
		unit := rec.UnitSensitivity
		if unit != f.Metrics.UnitSensitivity.Value || rec.UnitExact != c.exact {
			t.Errorf("%s under %s: record's sensitivity %v (exact %v), factorization's %v, want exact %v", c.strategy, c.participation, unit, rec.UnitExact, f.Metrics.UnitSensitivity, c.exact)
		}
		if unit < truth*(1-1e-12) || (c.exact && unit > truth*(1+1e-12)) {
			t.Errorf("%s under %s: sensitivity %v, brute force %v", c.strategy, c.participation, unit, truth)
		}
		want := agmStd(eps, delta, c.factor*clip/learners*unit)
		if math.Abs(rec.NoiseStd-want) > 1e-9*want || rec.NoiseStd < want*(1-1e-12) {
			t.Errorf("%s under %s: noise std %.15g, want sigma x %g x %g / %d x %.15g = %.15g", c.strategy, c.participation, rec.NoiseStd, c.factor, clip, learners, unit, want)
		}
		if floor := agmStd(eps, delta, c.factor*clip/learners*truth); rec.NoiseStd < floor*(1-1e-12) {
			t.Errorf("%s under %s: noise std %.15g below %.15g, the std the true sensitivity needs", c.strategy, c.participation, rec.NoiseStd, floor)
		}
	}
}
