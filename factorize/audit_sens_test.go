package factorize

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dpmf/dpmf/internal/testutil"
)

// This file audits the sensitivity every registered strategy reports
// against brute force over every participation pattern, with no use of the
// package's own sensitivity rules: the patterns are enumerated here from
// the definitions in docs/participation.md, and the truth for a pattern S
// is bracketed by a lower bound (the best contributions found: every sign
// vector, and a locally optimised set of unit vectors in |S| dimensions)
// and an upper bound (the smaller of sum |X_ab| and a dual certificate).

// auditPatterns returns the participation patterns of p over n rounds that
// no round can be added to (the sensitivity only grows with the pattern:
// a round left out is a zero contribution), enumerated from the
// definitions by testutil.SensPatterns (residue classes for epochs, sets
// of rounds pairwise at least b apart for min-separation, single rounds).
func auditPatterns(p Participation, n int) [][]int {
	kind := map[ParticipationKind]string{KindSingle: "single", KindEpochs: "epochs", KindMinSep: "minsep"}[p.Kind]
	return testutil.SensPatterns(kind, n, p.B, p.K)
}

// patternBounds returns lo <= sens_S^2 <= hi for the pattern idx of the
// Gram matrix x, where sens_S^2 = max over g_a with ||g_a|| <= 1 (any
// dimension) of sum_{a,b in S} X_ab <g_a, g_b>. When X is non-negative on
// S x S both are the sum of X over S x S (all g_a equal attain it).
// Otherwise lo is the best of every sign vector (d = 1, for |S| <= 10) and
// of block-coordinate ascent on unit vectors in |S| dimensions from several
// starts, and hi the smaller of sum |X_ab| and the dual bound sum_a lambda_a
// + |S| max(0, -lambda_min(diag(lambda) - X_S)) with lambda_a = X_aa +
// ||h_a|| at the ascent's end (weak duality: g^T X g <= g^T diag(lambda) g
// <= sum lambda when diag(lambda) - X is positive semidefinite).
func patternBounds(x *mat.SymDense, idx []int, rng *rand.Rand) (lo, hi float64) {
	m := len(idx)
	xs := make([]float64, m*m)
	sum, abs, neg := 0.0, 0.0, false
	for a, i := range idx {
		for b, j := range idx {
			v := x.At(i, j)
			xs[a*m+b] = v
			sum += v
			abs += math.Abs(v)
			neg = neg || v < 0
		}
	}
	if !neg {
		return sum, sum
	}
	if m <= 10 {
		for sg := 0; sg < 1<<(m-1); sg++ {
			v := 0.0
			for a := 0; a < m; a++ {
				for b := 0; b < m; b++ {
					s := 1.0
					if (sg>>a)&1 != (sg>>b)&1 {
						s = -1
					}
					v += s * xs[a*m+b]
				}
			}
			lo = math.Max(lo, v)
		}
	}
	hi = abs
	g := make([]float64, m*m) // row a: g_a in m dimensions
	h := make([]float64, m)
	for start := 0; start < 6; start++ {
		for a := range m {
			nrm := 0.0
			for d := range m {
				v := rng.NormFloat64()
				if start == 0 {
					v = 0
					if d == 0 {
						v = 1 // all equal
					}
				}
				g[a*m+d] = v
				nrm += v * v
			}
			nrm = math.Sqrt(nrm)
			for d := range m {
				g[a*m+d] /= nrm
			}
		}
		value := func() float64 {
			v := 0.0
			for a := range m {
				for b := range m {
					v += xs[a*m+b] * dot(g[a*m:a*m+m], g[b*m:b*m+m])
				}
			}
			return v
		}
		prev := math.Inf(-1)
		for sweep := 0; sweep < 5000; sweep++ {
			for a := range m {
				gField(xs, g, m, a, h)
				if nh := math.Sqrt(dot(h, h)); nh > 0 {
					for d := range m {
						g[a*m+d] = h[d] / nh
					}
				}
			}
			v := value()
			if v-prev <= 1e-15*math.Abs(v) {
				break
			}
			prev = v
		}
		lo = math.Max(lo, value())
		// The multipliers at the end point (at a fixed point
		// (X g)_a = lambda_a g_a); the certificate holds for any lambda,
		// only its tightness needs the fixed point.
		lambda := make([]float64, m)
		for a := range m {
			gField(xs, g, m, a, h)
			lambda[a] = xs[a*m+a] + math.Sqrt(dot(h, h))
		}
		dm := mat.NewSymDense(m, nil)
		tr := 0.0
		for a := range m {
			tr += lambda[a]
			for b := a; b < m; b++ {
				v := -xs[a*m+b]
				if a == b {
					v += lambda[a]
				}
				dm.SetSym(a, b, v)
			}
		}
		var eig mat.EigenSym
		if eig.Factorize(dm, false) {
			vals := eig.Values(nil)
			shift := math.Max(0, -vals[0]) + 1e-12*(1+tr)
			hi = math.Min(hi, tr+float64(m)*shift)
		}
	}
	return lo, hi
}

// gField sets h to sum_{b != a} X_ab g_b.
func gField(xs, g []float64, m, a int, h []float64) {
	for d := range h {
		h[d] = 0
	}
	for b := range m {
		if b != a {
			for d := range m {
				h[d] += xs[a*m+b] * g[b*m+d]
			}
		}
	}
}

// truthKey identifies a C and a pattern for the brute-force cache.
func truthKey(c mat.Matrix, p Participation) string {
	r, n := c.Dims()
	buf := make([]byte, 0, 8*r*n+32)
	buf = fmt.Appendf(buf, "%v %d %d|", p, r, n)
	for i := 0; i < r; i++ {
		for j := 0; j < n; j++ {
			buf = strconv.AppendUint(buf, math.Float64bits(c.At(i, j)), 16)
			buf = append(buf, ',')
		}
	}
	return string(buf)
}

// bruteSens returns lo <= sens(C, p) <= hi by enumerating every maximal
// pattern of p (auditPatterns) with X = C^T C formed here.
func bruteSens(c mat.Matrix, p Participation, rng *rand.Rand) (lo, hi float64) {
	_, n := c.Dims()
	var cd mat.Dense
	cd.CloneFrom(c)
	x := mat.NewSymDense(n, nil)
	x.SymOuterK(1, cd.T())
	for _, s := range auditPatterns(p, n) {
		l, h := patternBounds(x, s, rng)
		lo, hi = math.Max(lo, l), math.Max(hi, h)
	}
	return math.Sqrt(lo), math.Sqrt(hi)
}

// auditStrategies returns every registered strategy with its default
// settings and with the odd settings of its bands or buffers (1, 2, and
// bands beyond the R rounds), each also loss-only where the registry
// offers a loss-only path (loss is the loss-only twin's index in the list,
// -1 for none).
func auditStrategies(t *testing.T, r int) (specs []Strategy) {
	t.Helper()
	for _, info := range Registry() {
		names := []string{info.Name}
		for _, s := range info.Settings {
			switch s.Name {
			case "bands":
				for _, v := range []int{1, 2, r + 3} {
					names = append(names, info.Name+":bands="+strconv.Itoa(v))
				}
			case "buffers":
				names = append(names, info.Name+":buffers=1")
			}
		}
		for _, name := range names {
			s, err := ParseStrategy(name)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			specs = append(specs, s)
		}
	}
	return specs
}

// auditParticipations returns single participation, every number of
// epochs that divides r, and b-min-separation for b = 1 .. r + 2 with at
// most 0 (as many as fit), 1, 2, 3 and r + 1 participations; with -short,
// only b = 1, 2, 3, r - 1 and r + 2 with 0, 2 and r + 1 participations
// (the BLT strategy refits for every pattern).
func auditParticipations(r int) []Participation {
	ps := []Participation{SingleParticipation()}
	for k := 1; k <= r; k++ {
		if r%k == 0 {
			ps = append(ps, FixedEpochs(k))
		}
	}
	for b := 1; b <= r+2; b++ {
		if testing.Short() && b > 3 && b != r-1 && b != r+2 {
			continue
		}
		for _, k := range []int{0, 1, 2, 3, r + 1} {
			if testing.Short() && (k == 1 || k == 3) {
				continue
			}
			ps = append(ps, MinSeparation(b, k))
		}
	}
	return ps
}

// TestAuditSensitivityBruteForce pins, for every registered strategy (with
// its default settings and 1, 2 or more than R bands or 1 buffer) under
// every participation over R = 1..12 rounds (single, every divisor of R as
// epochs, b-min-separation for b up to R + 2 with 0, 1, 2, 3 and R + 1
// participations), that the reported unit sensitivity is never below the
// brute-force truth over every pattern (a privacy bug), and equals it where
// it claims to be exact (BLT under about half of the participations
// without DPMF_LONG=1, see bltEvery). The C audited is the one the noise operator
// streams (C = M^{-1} from the operator's output on unit noise, for square
// factors), checked against the factors' C; the loss-only twin of each
// (where the registry has one) is audited against its own operator's C.
func TestAuditSensitivityBruteForce(t *testing.T) {
	t.Parallel() // its own cache and random source: independent of the other audits
	a := newSensAudit()
	rs := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	if testing.Short() {
		rs = []int{1, 5, 8}
	}
	for _, r := range rs {
		a.workload(t, prefix(t, r))
	}
	t.Logf("%d brute-force cases, %d refusals", len(a.cache), a.refused)
}

// TestAuditSensitivityOtherWorkloads is [TestAuditSensitivityBruteForce]
// for workloads whose factors have signed Gram matrices: momentum, weighted
// prefix sums with weights of both signs, and a random lower-triangular
// workload with signed entries. Strategies that refuse a workload (the
// prefix-only closed forms) are skipped.
func TestAuditSensitivityOtherWorkloads(t *testing.T) {
	t.Parallel() // its own cache and random source: independent of the other audits
	a := newSensAudit()
	rng := rand.New(rand.NewPCG(5, 6))
	rs := []int{4, 7, 9}
	if testing.Short() {
		rs = []int{5}
	}
	for _, r := range rs {
		mom, err := Momentum(r, 0.9)
		if err != nil {
			t.Fatal(err)
		}
		weights := make([]float64, r)
		for i := range weights {
			weights[i] = (0.5 + rng.Float64()) * float64(1-2*(i%2))
		}
		wp, err := WeightedPrefix(weights)
		if err != nil {
			t.Fatal(err)
		}
		dense := mat.NewTriDense(r, mat.Lower, nil)
		for i := 0; i < r; i++ {
			for j := 0; j <= i; j++ {
				dense.SetTri(i, j, rng.NormFloat64())
			}
			dense.SetTri(i, i, 2+rng.Float64())
		}
		gen, err := NewWorkload(dense)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range []*Workload{mom, wp, gen} {
			a.workload(t, w)
		}
	}
	t.Logf("%d brute-force cases, %d refusals", len(a.cache), a.refused)
}

// TestAuditSensitivityLargerR is [TestAuditSensitivityBruteForce] at
// R = 20, past the default of 16 bands: the banded strategies' C then has
// fewer bands than rounds, and under separations below 16 the bsr and
// sqrt-normalized factors take the dynamic-programming bound from X's rows.
// The patterns are those few enough to enumerate: epochs, and
// min-separations with few participations or wide separations.
func TestAuditSensitivityLargerR(t *testing.T) {
	t.Parallel() // its own cache and random source: independent of the other audits
	a := newSensAudit()
	a.parts = []Participation{FixedEpochs(4), MinSeparation(5, 0), MinSeparation(17, 0), MinSeparation(3, 2)}
	if !testing.Short() {
		a.parts = append(a.parts, FixedEpochs(2), FixedEpochs(5), MinSeparation(8, 0), MinSeparation(2, 3), MinSeparation(19, 2))
	}
	a.workload(t, prefix(t, 20))
	t.Logf("%d brute-force cases", len(a.cache))
}

// bltEvery reports whether the audit fits BLT under the i-th participation
// of its list: BLT refits for every pattern (by L-BFGS, most of the
// audits' CPU when it ran them all), so -short fits it under a quarter of
// them (i = 1 mod 4), go test under about half (the first, single
// participation in auditParticipations' list, and every odd i, the
// quarter included), and DPMF_LONG=1 (without -short) under all. The
// single-participation fit moved to each pattern (WithParticipation) is
// audited under every one, and every other strategy runs every pattern.
func bltEvery(i int) bool {
	switch {
	case testing.Short():
		return i%4 == 1
	case longTests():
		return true
	}
	return i == 0 || i%2 == 1
}

// sensAudit holds the brute-force results by C and pattern, and counts the
// refused (workload, strategy) pairs.
type sensAudit struct {
	rng     *rand.Rand
	cache   map[string][2]float64
	refused int
	// parts replaces auditParticipations where set.
	parts []Participation
}

func newSensAudit() *sensAudit {
	return &sensAudit{rng: rand.New(rand.NewPCG(7, 11)), cache: map[string][2]float64{}}
}

// truth returns the brute-force interval of sens(c, p), cached.
func (a *sensAudit) truth(c mat.Matrix, p Participation) (float64, float64) {
	key := truthKey(c, p)
	bounds, ok := a.cache[key]
	if !ok {
		lo, hi := bruteSens(c, p, a.rng)
		bounds = [2]float64{lo, hi}
		a.cache[key] = bounds
	}
	return bounds[0], bounds[1]
}

// workload audits every strategy of auditStrategies on w under every
// participation of auditParticipations, by three paths: the factors'
// (Factorize with B and C formed), the loss-only twin's wherever it
// factorizes (also where the registry lists no loss-only path, as for the
// multi-epoch optimum), and the default strategy's single-participation
// result moved to p by WithParticipation (the cache's path). Each path's
// metrics are checked against B and C (checkAuditMetrics): the loss-only
// ones against B = A M from the operator M they stream. A strategy that refuses w
// under single participation is skipped for a non-prefix w (and an error
// for the prefix sums, but for the semiseparable strategy at R = 1, which
// documents R >= 2).
func (a *sensAudit) workload(t *testing.T, w *Workload) {
	t.Helper()
	ctx := t.Context()
	r := w.R()
	for _, s := range auditStrategies(t, r) {
		info, _ := Lookup(s.Name())
		full, err := WithLossOnly(s, false)
		if err != nil {
			t.Fatalf("%s: %v", s.Spec(), err)
		}
		single, err := s.Factorize(ctx, w, SingleParticipation())
		if err != nil {
			if !w.IsPrefix() || (s.Name() == StrategySemisep && r == 1) {
				a.refused++
				continue
			}
			t.Errorf("R=%d %s %s: %v", r, w.Name(), s.Spec(), err)
			continue
		}
		parts := auditParticipations(r)
		if a.parts != nil {
			parts = a.parts
		}
		for i, p := range parts {
			what := fmt.Sprintf("R=%d %s %s under %v", r, w.Name(), s.Spec(), p)
			// The single-participation result moved to p.
			if g, err := single.WithParticipation(p); err == nil {
				sc := operatorC(g.Operator)
				if sc == nil {
					_, sc, err = single.Factors()
				}
				if err == nil {
					lo, hi := a.truth(sc, p)
					checkAuditSens(t, what+" (WithParticipation)", g.Metrics.UnitSensitivity, lo, hi)
				}
			}
			if s.Name() == StrategyBLT && !bltEvery(i) {
				continue // BLT refits for every pattern (see bltEvery)
			}
			f, err := full.Factorize(ctx, w, p)
			if err != nil {
				t.Errorf("%s: %v", what, err)
				continue
			}
			_, c, err := f.Factors()
			if err != nil {
				t.Errorf("%s: %v", what, err)
				continue
			}
			if cop := operatorC(f.Operator); cop != nil {
				if d := maxRelDiff(cop, c); d > 1e-9 {
					t.Errorf("%s: the operator streams a C %.3g away from the factors' C", what, d)
				}
				c = cop
			}
			lo, hi := a.truth(c, p)
			checkAuditSens(t, what, f.Metrics.UnitSensitivity, lo, hi)
			checkAuditBands(t, what, f.Operator, c)
			fb, fc, _ := f.Factors()
			checkAuditMetrics(t, what, f.Metrics, w, fb, fc)

			if !info.HasLossOnly() {
				continue
			}
			ls, err := WithLossOnly(s, true)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			lf, err := ls.Factorize(ctx, w, p)
			if err != nil {
				continue // loss-only paths refuse some patterns
			}
			lc := operatorC(lf.Operator)
			if lc == nil {
				// The tree's tall C is fixed; optimal's loss-only
				// result has no operator: the factors' path's C.
				lc = c
			} else {
				// B = A M from the operator, independent of the
				// loss-only path's closed forms.
				var lb mat.Dense
				lb.Mul(w.Matrix(), operatorM(lf.Operator))
				checkAuditMetrics(t, what+" (loss-only)", lf.Metrics, w, &lb, lc)
			}
			lo, hi = a.truth(lc, p)
			checkAuditSens(t, what+" (loss-only)", lf.Metrics.UnitSensitivity, lo, hi)
			checkAuditBands(t, what+" (loss-only)", lf.Operator, lc)
		}
	}
}

// unitNoise is a NoiseSource whose noise row j is the unit vector e_j, so
// that a stream of dimension m writes the rows of its operator M.
type unitNoise struct{}

// Fill writes entries [lo, lo+len(dst)) of e_j.
func (unitNoise) Fill(j, lo int, dst []float64) {
	for i := range dst {
		dst[i] = 0
		if lo+i == j {
			dst[i] = 1
		}
	}
}

// Past returns entries [lo, lo+n) of e_j.
func (u unitNoise) Past(j, lo, n int) []float64 {
	d := make([]float64, n)
	u.Fill(j, lo, d)
	return d
}

// Scratch returns n float64s.
func (unitNoise) Scratch(n int) []float64 { return make([]float64, n) }

// operatorC returns the C = M^{-1} whose noise the square operator op
// streams (M formed from its output on unit noise), or nil for a nil or
// non-square operator.
func operatorC(op Operator) *mat.Dense {
	m := operatorM(op)
	if m == nil {
		return nil
	}
	var c mat.Dense
	if err := c.Inverse(m); err != nil {
		return nil
	}
	return &c
}

// operatorM returns the R x R noise operator M of a square operator op
// from its output on unit noise, or nil for a nil or non-square operator.
func operatorM(op Operator) *mat.Dense {
	if op == nil || op.Rounds() != op.NoiseRows() {
		return nil
	}
	r := op.Rounds()
	st := op.NewState(r)
	m := mat.NewDense(r, r, nil)
	for i := 0; i < r; i++ {
		st.Prepare(i)
		st.Block(unitNoise{}, i, 0, m.RawRowView(i))
	}
	return m
}

// maxRelDiff returns max |a - b| over max |b|.
func maxRelDiff(a, b mat.Matrix) float64 {
	r, n := b.Dims()
	d, s := 0.0, 0.0
	for i := 0; i < r; i++ {
		for j := 0; j < n; j++ {
			d = math.Max(d, math.Abs(a.At(i, j)-b.At(i, j)))
			s = math.Max(s, math.Abs(b.At(i, j)))
		}
	}
	return d / s
}

// checkAuditBands checks that an operator that declares C banded (BandsOf,
// which the amplified accounting trusts: at most b bands under
// minsep:b) streams a C with C[i][j] = 0 for i - j >= bands, to rounding.
func checkAuditBands(t *testing.T, what string, op Operator, c *mat.Dense) {
	t.Helper()
	bands, ok := BandsOf(op)
	if !ok {
		return
	}
	r, n := c.Dims()
	scale := mat.Norm(c, math.Inf(1))
	for i := 0; i < r; i++ {
		for j := 0; j < n; j++ {
			if (i-j >= bands || j > i) && math.Abs(c.At(i, j)) > 1e-12*scale {
				t.Errorf("%s: %v declares %d bands, C[%d][%d] = %v", what, op, bands, i, j, c.At(i, j))
				return
			}
		}
	}
}

// checkAuditMetrics checks the metrics m against a direct computation from
// the dense factors b and c of w (B C = A to rounding, and for a square C,
// B = A C^{-1} solved here): gamma the largest column norm of C, the
// squared norms of B, and loss = sens^2 ||B||_F^2, RMSE = sqrt(loss / R),
// MaxSE = sens^2 max_i ||B[i, :]||^2 with the reported sensitivity (which
// checkAuditSens audits).
func checkAuditMetrics(t *testing.T, what string, m Metrics, w *Workload, b, c *mat.Dense) {
	t.Helper()
	a := w.Matrix()
	r := w.R()
	var bc mat.Dense
	bc.Mul(b, c)
	if d := maxRelDiff(&bc, a); d > 1e-9 {
		t.Errorf("%s: B C differs from A by %.3g", what, d)
	}
	if rows, cols := c.Dims(); rows == cols {
		var ci mat.Dense
		if err := ci.Inverse(c); err == nil {
			var ab mat.Dense
			ab.Mul(a, &ci)
			if d := maxRelDiff(&ab, b); d > 1e-9 {
				t.Errorf("%s: B differs from A C^{-1} by %.3g", what, d)
			}
		}
	}
	rows, cols := c.Dims()
	gamma := 0.0
	for j := 0; j < cols; j++ {
		s := 0.0
		for i := 0; i < rows; i++ {
			s += c.At(i, j) * c.At(i, j)
		}
		gamma = math.Max(gamma, s)
	}
	gamma = math.Sqrt(gamma)
	frob, maxRow := 0.0, 0.0
	br, bcols := b.Dims()
	for i := 0; i < br; i++ {
		s := 0.0
		for j := 0; j < bcols; j++ {
			s += b.At(i, j) * b.At(i, j)
		}
		frob += s
		maxRow = math.Max(maxRow, s)
	}
	s2 := m.UnitSensitivity.Value * m.UnitSensitivity.Value
	if loss := strings.HasSuffix(what, "(loss-only)"); loss && m.MaxRowBSq == 0 && m.MaxSE == 0 {
		// Not computed (Metrics.MaxRowBSq): both 0, never one of them.
		maxRow = 0
	}
	for _, x := range []struct {
		name      string
		got, want float64
	}{
		{"gamma", m.Gamma, gamma},
		{"||B||_F^2", m.FrobBSq, frob},
		{"max row of B", m.MaxRowBSq, maxRow},
		{"loss", m.Loss, s2 * frob},
		{"RMSE", m.RMSE, math.Sqrt(s2 * frob / float64(r))},
		{"MaxSE", m.MaxSE, s2 * maxRow},
	} {
		if math.Abs(x.got-x.want) > 1e-9*math.Abs(x.want) {
			t.Errorf("%s: %s %.15g, direct %.15g", what, x.name, x.got, x.want)
		}
	}
}

// checkAuditSens checks a reported sensitivity against the brute-force
// interval [lo, hi] of the truth.
func checkAuditSens(t *testing.T, what string, got Sensitivity, lo, hi float64) {
	t.Helper()
	tol := 1e-12 * (1 + hi)
	if got.Value < lo-tol {
		t.Errorf("%s: PRIVACY: reported %v below the brute-force truth %.17g", what, got, lo)
	}
	if got.Exact && got.Value > hi+tol {
		t.Errorf("%s: reported %v claims exact, the truth is at most %.17g", what, got, hi)
	}
	if got.Exact && hi-lo > tol {
		t.Logf("%s: exact claim %v, brute force brackets only [%.17g, %.17g]", what, got, lo, hi)
	}
}

// TestAuditBruteForceTools pins the audit's own tools on values obtained by
// hand: the maximal min-separation patterns of 4 rounds with b = 2, the
// published C = [[1,0,0,0],[2,1,0,0],[0,1,1,0],[0,0,1,-6]] (sqrt(41) for
// b = 2, sqrt(63) for b = 1, where contributions (1,1,1,-1) reach
// sum |X|), and three unit columns at 120 degrees, whose pattern needs
// contributions in two dimensions: every sign vector gives at most 4, unit
// vectors at 120 degrees give the truth 4.5, below sum |X| = 6.
func TestAuditBruteForceTools(t *testing.T) {
	got := auditPatterns(MinSeparation(2, 0), 4)
	want := [][]int{{0, 2}, {0, 3}, {1, 3}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("maximal patterns of minsep:2 over 4 rounds: %v, want %v", got, want)
	}
	if got := auditPatterns(MinSeparation(1, 2), 3); len(got) != 3 {
		t.Errorf("maximal patterns of minsep:1,2 over 3 rounds: %v, want the 3 pairs", got)
	}
	if got := auditPatterns(FixedEpochs(2), 6); fmt.Sprint(got) != "[[0 3] [1 4] [2 5]]" {
		t.Errorf("epochs:2 over 6 rounds: %v", got)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	c := mat.NewDense(4, 4, []float64{1, 0, 0, 0, 2, 1, 0, 0, 0, 1, 1, 0, 0, 0, 1, -6})
	for _, tc := range []struct {
		p    Participation
		want float64
	}{{SingleParticipation(), 6}, {MinSeparation(2, 0), math.Sqrt(41)}, {MinSeparation(3, 2), math.Sqrt(41)}, {MinSeparation(1, 0), math.Sqrt(63)}} {
		lo, hi := bruteSens(c, tc.p, rng)
		if math.Abs(lo-tc.want) > 1e-12 || math.Abs(hi-tc.want) > 1e-12 {
			t.Errorf("published C under %v: [%v, %v], want %v", tc.p, lo, hi, tc.want)
		}
	}
	s3 := math.Sqrt(3) / 2
	tri := mat.NewDense(2, 3, []float64{1, -0.5, -0.5, 0, s3, -s3})
	lo, hi := bruteSens(tri, MinSeparation(1, 0), rng)
	if math.Abs(lo*lo-4.5) > 1e-9 || math.Abs(hi*hi-4.5) > 1e-8 {
		t.Errorf("three columns at 120 degrees: [%v, %v]^2, want 4.5", lo*lo, hi*hi)
	}
}

// TestAuditBadParticipationRefused pins that every registered strategy,
// with and without its loss-only path, refuses a participation that is not
// valid for its rounds (epochs that do not divide R, a separation or a
// count below the allowed range) with a *ParamError naming
// "participation", before any work and without a panic.
func TestAuditBadParticipationRefused(t *testing.T) {
	const r = 6
	w := prefix(t, r)
	for _, info := range Registry() {
		s, err := ParseStrategy(info.Name)
		if err != nil {
			t.Fatal(err)
		}
		variants := []Strategy{s}
		if info.HasLossOnly() {
			ls, err := WithLossOnly(s, true)
			if err != nil {
				t.Fatal(err)
			}
			full, _ := WithLossOnly(s, false)
			variants = []Strategy{full, ls}
		}
		for _, v := range variants {
			for _, p := range []Participation{FixedEpochs(4), FixedEpochs(0), FixedEpochs(-2), MinSeparation(0, 2), MinSeparation(-1, 0), MinSeparation(2, -1), {Kind: 7}} {
				_, err := v.Factorize(t.Context(), w, p)
				var pe *ParamError
				if !errors.As(err, &pe) || pe.Param != "participation" {
					t.Errorf("%s (loss-only %v) under %v: %v, want a *ParamError naming participation", v.Spec(), IsLossOnly(v), p, err)
				}
			}
		}
	}
}
