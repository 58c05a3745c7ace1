package factorize

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// encoderByStreaming returns the C an operator streams, found without its
// coefficients: M from streaming unit noise rows (unitNoise), C = M^{-1} (square
// operators), or for the tree its dyadic nodes as rows (its M is not
// square).
func encoderByStreaming(t *testing.T, op Operator) *mat.Dense {
	t.Helper()
	r := op.Rounds()
	if _, isTree := op.(treeOp); isTree {
		var rows [][]float64
		for l := 0; 1<<l <= r; l++ {
			for q := 0; (q+1)<<l <= r; q++ {
				row := make([]float64, r)
				for i := q << l; i < (q+1)<<l; i++ {
					row[i] = 1
				}
				rows = append(rows, row)
			}
		}
		c := mat.NewDense(len(rows), r, nil)
		for i, row := range rows {
			c.SetRow(i, row)
		}
		return c
	}
	st := op.NewState(r)
	m := mat.NewDense(r, r, nil)
	for i := 0; i < r; i++ {
		st.Prepare(i)
		st.Block(unitNoise{}, i, 0, m.RawRowView(i))
	}
	var c mat.Dense
	if err := c.Inverse(m); err != nil {
		t.Fatalf("%v: M is singular: %v", op, err)
	}
	return &c
}

// bruteSensitivity returns max over the patterns S that p allows of
// sqrt(sum_{a,b in S} |X_ab|), X = C^T C, by enumerating them: the
// sensitivity when X >= 0 on the worst S, an upper bound on it otherwise.
func bruteSensitivity(c *mat.Dense, p Participation) float64 {
	_, n := c.Dims()
	var x mat.Dense
	x.Mul(c.T(), c)
	sum := func(s []int) float64 {
		v := 0.0
		for _, a := range s {
			for _, b := range s {
				v += math.Abs(x.At(a, b))
			}
		}
		return v
	}
	best := 0.0
	switch p.Kind {
	case KindSingle:
		for i := 0; i < n; i++ {
			best = math.Max(best, x.At(i, i))
		}
	case KindEpochs:
		per := n / p.K
		for r := 0; r < per; r++ {
			var s []int
			for i := r; i < n; i += per {
				s = append(s, i)
			}
			best = math.Max(best, sum(s))
		}
	case KindMinSep:
		k := p.Participations(n)
		var rec func(s []int, next int)
		rec = func(s []int, next int) {
			best = math.Max(best, sum(s))
			if len(s) == k {
				return
			}
			for i := next; i < n; i++ {
				rec(append(s, i), i+p.B)
			}
		}
		rec(nil, 0)
	}
	return math.Sqrt(best)
}

// TestStreamedSensitivityAgainstBruteForce checks StreamedSensitivity of
// every strategy's factorization under single participation, fixed
// epochs and min-separation against the C recovered by streaming its
// operator and the patterns enumerated; it must also agree with the
// metrics the strategy computed (1e-9), and never be below the
// enumeration.
func TestStreamedSensitivityAgainstBruteForce(t *testing.T) {
	const r = 12
	w, err := Prefix(r)
	if err != nil {
		t.Fatal(err)
	}
	parts := []Participation{SingleParticipation(), FixedEpochs(3), FixedEpochs(4), MinSeparation(3, 3), MinSeparation(5, 0), MinSeparation(2, 4)}
	checked := 0
	for _, name := range Strategies() {
		for _, p := range parts {
			s, err := ParseStrategy(name)
			if err != nil {
				t.Fatal(err)
			}
			if CheckUnder(s, p) != nil {
				continue
			}
			if i, _ := Lookup(name); !i.LossOnlyUnder(p) {
				if s, err = WithLossOnly(s, false); err != nil {
					continue
				}
			}
			f, err := s.Factorize(context.Background(), w, p)
			if err != nil || f.Operator == nil {
				continue
			}
			t.Run(fmt.Sprintf("%s/%v", name, p), func(t *testing.T) {
				gamma, sens, err := StreamedSensitivity(f, p)
				if err != nil {
					t.Fatal(err)
				}
				c := encoderByStreaming(t, f.Operator)
				if want := bruteSensitivity(c, SingleParticipation()); math.Abs(gamma-want) > 1e-9*want {
					t.Errorf("gamma %v, want %v (C recovered from the stream)", gamma, want)
				}
				want := bruteSensitivity(c, p)
				if sens.Value < want*(1-1e-9) || (sens.Exact && sens.Value > want*(1+1e-9)) {
					t.Errorf("sensitivity %v, enumeration over the streamed C %v", sens, want)
				}
				if m := f.Metrics.UnitSensitivity.Value; math.Abs(sens.Value-m) > 1e-9*m {
					t.Errorf("sensitivity %v, the strategy's metrics %v", sens, f.Metrics.UnitSensitivity)
				}
			})
			checked++
		}
	}
	if checked < 20 {
		t.Fatalf("only %d strategy/participation pairs checked", checked)
	}
}

// TestStreamedSensitivityHandBuilt checks the forms a caller can assemble:
// BLT parameters (C = T_d^{-1} diag(Scale)^{-1}, whose column norms come
// from the impulse response), and dense factors without an operator.
func TestStreamedSensitivityHandBuilt(t *testing.T) {
	const r = 10
	w, _ := Prefix(r)
	scale := make([]float64, r)
	for i := range scale {
		scale[i] = 0.5 + float64(i)/10
	}
	p := &BLTParams{Weights: []float64{-0.4, -0.1}, Lambdas: []float64{0.5, 0.9}, Scale: scale}
	f := &Factorization{Strategy: "hand", Operator: p, Workload: w}
	c := encoderByStreaming(t, p)
	for _, part := range []Participation{SingleParticipation(), FixedEpochs(2), MinSeparation(3, 0)} {
		_, sens, err := StreamedSensitivity(f, part)
		if err != nil {
			t.Fatal(err)
		}
		if want := bruteSensitivity(c, part); sens.Value < want*(1-1e-12) || (sens.Exact && sens.Value > want*(1+1e-12)) {
			t.Errorf("%v: %v, enumeration %v", part, sens, want)
		}
	}
	// Dense factors: C = 2 I, B = A / 2.
	cd := mat.NewDense(r, r, nil)
	b := mat.NewDense(r, r, nil)
	for i := 0; i < r; i++ {
		cd.Set(i, i, 2)
		for j := 0; j <= i; j++ {
			b.Set(i, j, 0.5)
		}
	}
	g, sens, err := StreamedSensitivity(&Factorization{Strategy: "hand", Workload: w, B: b, C: cd, Available: squareAvailable(r)}, MinSeparation(2, 3))
	if err != nil || g != 2 || math.Abs(sens.Value-2*math.Sqrt(3)) > 1e-15 {
		t.Errorf("dense 2I under minsep:2 k=3: gamma %v, %v, %v; want 2, 2 sqrt(3)", g, sens, err)
	}
	// Refused: BLT parameters of unequal lengths, a loss-only result, an
	// operator of another round count.
	for _, bad := range []*Factorization{
		{Strategy: "hand", Workload: w, Operator: &BLTParams{Weights: []float64{1, 2}, Lambdas: []float64{0.5}, Scale: scale}},
		{Strategy: "hand", Workload: w},
		{Strategy: "hand", Workload: w, Operator: identityOp{r + 1}},
	} {
		if _, _, err := StreamedSensitivity(bad, SingleParticipation()); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

// TestStreamedSensitivityWorkLimit checks that a rule beyond
// MaxRecomputeWork is not run but reported (ErrNotRecomputed), and that
// the linear rules run at large R: the tree's min-separation rule against
// its closed form at R = 2^17 (participations b apart from round 0 meet
// every level's node: 18 nodes hold round 0, and k = 2 adds the nodes of
// [0, 2^17) that hold round b too).
func TestStreamedSensitivityWorkLimit(t *testing.T) {
	r := 1 << 17
	w, _ := Prefix(r)
	f := &Factorization{Strategy: "tree", Operator: newTreeOp(r), Workload: w}
	_, sens, err := StreamedSensitivity(f, MinSeparation(1<<16, 2))
	if err != nil {
		t.Fatal(err)
	}
	// Rounds 0 and 2^16: X_00 = X_bb = 18, X_0b = 1 (only the root).
	if want := math.Sqrt(18 + 18 + 2); sens.Value != want {
		t.Errorf("tree at R = 2^17 under minsep:2^16: %v, want sqrt(38) = %v", sens, want)
	}
	if got := bits.Len(uint(r)); got != 18 {
		t.Fatalf("levels %d", got)
	}
	big, _ := Prefix(100_000)
	u := make([]float64, 100_000)
	u[0], u[1] = 1, 0.3 // not the square root's inverse series
	s := make([]float64, 100_000)
	for i := range s {
		s[i] = 1
	}
	_, _, err = StreamedSensitivity(&Factorization{Strategy: "hand", Operator: toeplitzOp{u: u, s: s}, Workload: big}, SingleParticipation())
	if !errors.Is(err, ErrNotRecomputed) {
		t.Errorf("a Toeplitz operator of other coefficients at R = 1e5: %v, want ErrNotRecomputed", err)
	}
}

// TestBestSeparatedUnlimited checks bestSeparated's count-free path (k at
// least the entries that fit) against the counted dynamic program
// (atMostPicks) bit for bit, and both against enumeration at small n.
func TestBestSeparatedUnlimited(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := 0; trial < 300; trial++ {
		n, b := 1+rng.IntN(40), 1+rng.IntN(6)
		w := make([]float64, n)
		for i := range w {
			w[i] = rng.NormFloat64() + 0.3
		}
		fit := (n-1)/b + 1
		for _, k := range []int{fit, fit + 1, fit + 7} {
			if got, want := bestSeparated(w, b, k), atMostPicks(w, b, k)[k]; math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("n %d b %d k %d: %v, counted %v", n, b, k, got, want)
			}
		}
		if n <= 16 {
			best := 0.0
			for mask := 0; mask < 1<<n; mask++ {
				s, last, ok := 0.0, -b, true
				for i := 0; i < n && ok; i++ {
					if mask>>i&1 == 1 {
						ok = i-last >= b
						s, last = s+w[i], i
					}
				}
				if ok {
					best = math.Max(best, s)
				}
			}
			if got := bestSeparated(w, b, fit); math.Abs(got-best) > 1e-12*math.Max(1, best) {
				t.Fatalf("n %d b %d: %v, enumeration %v", n, b, got, best)
			}
		}
	}
}
