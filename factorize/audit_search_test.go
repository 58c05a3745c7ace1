package factorize

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dpmf/dpmf/internal/testutil"
)

// This file extends the brute-force audit (audit_sens_test.go) past the
// sizes whose patterns can all be enumerated: an achievable participation
// pattern S with contributions of signs s gives the lower bound
// s^T X_S s on the squared sensitivity, so a reported sensitivity below
// the best pattern found is a privacy bug, whatever rule computed it.

// searchPatternValue returns max over sign vectors s (by single flips from
// all +1, which is the maximum when X >= 0 on S x S) of s^T X_S s.
func searchPatternValue(x *mat.SymDense, s []int) float64 {
	m := len(s)
	sg := make([]float64, m)
	neg := false
	for a := range m {
		sg[a] = 1
		for b := range m {
			neg = neg || x.At(s[a], s[b]) < 0
		}
	}
	val := func() float64 {
		v := 0.0
		for a := range m {
			for b := range m {
				v += sg[a] * sg[b] * x.At(s[a], s[b])
			}
		}
		return v
	}
	best := val()
	for improved := neg; improved; {
		improved = false
		for a := range m {
			sg[a] = -sg[a]
			if v := val(); v > best*(1+1e-15) {
				best, improved = v, true
			} else {
				sg[a] = -sg[a]
			}
		}
	}
	return best
}

// searchAdmissible reports whether the rounds of s lie in [0, n) and are
// pairwise at least b apart.
func searchAdmissible(s []int, b, n int) bool {
	for i, v := range s {
		if v < 0 || v >= n {
			return false
		}
		for _, u := range s[:i] {
			if d := v - u; d < b && d > -b {
				return false
			}
		}
	}
	return true
}

// searchPatterns returns the best value of searchPatternValue over
// patterns of p found by local search: every residue class for fixed
// epochs; for min-separation the lattices {s, s+b, ...} from every start
// (and from the end), random admissible sets, and, for at most 5
// participations, moves of one round at a time (and additions) while they
// gain. The pattern found is returned with it.
func searchPatterns(x *mat.SymDense, p Participation, rng *rand.Rand) (float64, []int) {
	n := x.SymmetricDim()
	best, arg := 0.0, []int(nil)
	try := func(s []int) float64 {
		v := searchPatternValue(x, s)
		if v > best {
			best, arg = v, append([]int(nil), s...)
		}
		return v
	}
	switch p.Kind {
	case KindSingle:
		for i := range n {
			try([]int{i})
		}
		return best, arg
	case KindEpochs:
		per := n / p.K
		for r := range per {
			var s []int
			for i := r; i < n; i += per {
				s = append(s, i)
			}
			try(s)
		}
		return best, arg
	}
	k, b := p.Participations(n), min(p.B, n)
	var starts [][]int
	for s0 := range n {
		var s, e []int
		for i := s0; i < n && len(s) < k; i += b {
			s = append(s, i)
		}
		for i := n - 1 - s0; i >= 0 && len(e) < k; i -= b {
			e = append(e, i)
		}
		starts = append(starts, s, e)
	}
	for range 20 {
		var s []int
		for t := 0; t < 50 && len(s) < k; t++ {
			if c := append(s, rng.IntN(n)); searchAdmissible(c, b, n) {
				s = c
			}
		}
		starts = append(starts, s)
	}
	for _, s := range starts {
		v := try(s)
		if k > 5 {
			continue
		}
		for improved := true; improved; {
			improved = false
			for a := range s {
				old := s[a]
				for pos := range n {
					s[a] = pos
					if searchAdmissible(s, b, n) {
						if u := try(s); u > v*(1+1e-14) {
							v, old, improved = u, pos, true
						}
					}
				}
				s[a] = old
			}
			for pos := 0; pos < n && len(s) < k; pos++ {
				if c := append(append([]int(nil), s...), pos); searchAdmissible(c, b, n) {
					if u := try(c); u > v {
						s, v, improved = c, u, true
					}
				}
			}
		}
	}
	return best, arg
}

// TestAuditSensitivityPatternSearch checks, at R = 36 and 64 (past the
// sizes of the brute-force audit), that no registered strategy (default
// settings, 3 and 7 bands or coefficients, 2 buffers; with and without
// its loss-only path) reports under any of several participations (fixed
// epochs, min-separation with few or as many participations as fit) a
// sensitivity below what an admissible pattern found by local search
// attains on the C it streams, for prefix sums and momentum 0.9. The C is
// the factors' (to rounding), or for a loss-only result the inverse of the
// operator's output on unit noise (to 1e-8, the accuracy of that inverse).
func TestAuditSensitivityPatternSearch(t *testing.T) {
	testutil.SkipOn386Short(t, "local search of patterns at R = 36: float64, far from int's bounds")
	t.Parallel() // its own cache and random source: independent of the other audits
	rng := rand.New(rand.NewPCG(3, 4))
	rs := []int{36, 64}
	if testing.Short() {
		rs = []int{36}
	}
	for _, r := range rs {
		mom, err := Momentum(r, 0.9)
		if err != nil {
			t.Fatal(err)
		}
		var parts []Participation
		for _, k := range []int{2, 3, 4} {
			if r%k == 0 {
				parts = append(parts, FixedEpochs(k))
			}
		}
		for _, b := range []int{2, 5, 16, r / 3} {
			parts = append(parts, MinSeparation(b, 0), MinSeparation(b, 3))
		}
		for _, w := range []*Workload{prefix(t, r), mom} {
			for _, info := range Registry() {
				specs := []string{info.Name}
				for _, st := range info.Settings {
					switch st.Name {
					case "bands":
						specs = append(specs, info.Name+":bands=3", info.Name+":bands=7")
					case "buffers":
						specs = append(specs, info.Name+":buffers=2")
					}
				}
				for _, spec := range specs {
					s0, err := ParseStrategy(spec)
					if err != nil {
						t.Fatal(err)
					}
					variants := []Strategy{s0}
					if info.HasLossOnly() {
						full, _ := WithLossOnly(s0, false)
						lossOnly, _ := WithLossOnly(s0, true)
						variants = []Strategy{full, lossOnly}
					}
					for _, s := range variants {
						for _, p := range parts {
							f, err := s.Factorize(t.Context(), w, p)
							if err != nil {
								continue // refusals are audited elsewhere
							}
							tol := 1e-12
							_, c, err := f.Factors()
							if err != nil {
								if c, tol = operatorC(f.Operator), 1e-8; c == nil {
									continue
								}
							}
							_, n := c.Dims()
							x := mat.NewSymDense(n, nil)
							x.SymOuterK(1, c.T())
							lb, arg := searchPatterns(x, p, rng)
							got := f.Metrics.UnitSensitivity
							if got.Value*got.Value < lb*(1-tol) {
								t.Errorf("PRIVACY: R=%d %s %s (loss-only %t) under %v: reported %v, the pattern %v attains %.12g",
									r, w.Name(), spec, IsLossOnly(s), p, got, arg, math.Sqrt(lb))
							}
						}
					}
				}
			}
		}
	}
}

// TestAuditSearchTools pins the pattern search on values by hand: the
// published C = [[1,0,0,0],[2,1,0,0],[0,1,1,0],[0,0,1,-6]] under
// min-separation 2 reaches 41 (the pattern {1, 3}), and under separation 1
// 63 (all four rounds, the last with sign -1); the identity of size 12
// under 3 epochs reaches 3.
func TestAuditSearchTools(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	c := mat.NewDense(4, 4, []float64{1, 0, 0, 0, 2, 1, 0, 0, 0, 1, 1, 0, 0, 0, 1, -6})
	x := mat.NewSymDense(4, nil)
	x.SymOuterK(1, c.T())
	for _, tc := range []struct {
		p    Participation
		want float64
	}{{MinSeparation(2, 0), 41}, {MinSeparation(1, 0), 63}, {SingleParticipation(), 36}} {
		if got, arg := searchPatterns(x, tc.p, rng); got != tc.want {
			t.Errorf("published C under %v: %v (pattern %v), want %v", tc.p, got, arg, tc.want)
		}
	}
	id := mat.NewSymDense(12, nil)
	for i := range 12 {
		id.SetSym(i, i, 1)
	}
	if got, _ := searchPatterns(id, FixedEpochs(3), rng); got != 3 {
		t.Errorf("identity of 12 under 3 epochs: %v, want 3", got)
	}
}
