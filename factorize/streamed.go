package factorize

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"

	"github.com/dpmf/dpmf/linalg"
	"gonum.org/v1/gonum/mat"
)

// ErrNotRecomputed is wrapped by the error of [StreamedSensitivity] when
// the sensitivity of the C a factorization streams cannot be computed
// again within [MaxRecomputeWork] (a rule whose cost grows as R^2 or
// faster at a large R), so that a caller can say that it relies on the
// factorization's own metrics instead.
var ErrNotRecomputed = errors.New("sensitivity not recomputed from the operator")

// MaxRecomputeWork is the most multiply-adds (about 4.3e9, seconds on one
// core) that [StreamedSensitivity] spends on a rule whose cost grows
// faster than R times the operator's size: the dynamic-programming bound
// under min-separation (R^2, R^2 K for a quasiseparable C, R^2 m for
// dense factors), the multi-epoch rule (R k entries of X for k epochs, R^2
// K for a quasiseparable C), the Toeplitz operator of coefficients other
// than the square root's (R^2 to invert them).
const MaxRecomputeWork = 1 << 32

// StreamedSensitivity returns gamma, the largest column norm, and the
// sensitivity under p of the encoder C whose noise f streams, computed
// again from what streams it, never read from f.Metrics: from f.Operator's
// coefficients by the structured rule of its kind (the identity, the
// tree's dyadic nodes, banded C's columns, the Toeplitz C = T_c
// diag(scale)^{-1} of the BLT, banded-inverse and square-root operators,
// a quasiseparable C's generators), or from f's dense factors C when its
// operator is the dense operator of its own factors, or when it has none
// (factors assembled by hand, which only mechanism.WithDense streams, and
// only when B C is the workload).
//
// The rules are those of [SensitivityOf] for the same C: the largest
// column norm for single participation; the epoch residue classes of
// X = C^T C; under min-separation the tree's rule, the banded rule (C
// with at most b bands), the Toeplitz rule (non-negative non-increasing
// coefficients, unscaled), else the dynamic-programming bound over X's
// rows. A rule that costs more than [MaxRecomputeWork] is not run: the
// error then wraps [ErrNotRecomputed] and says which rule and why, and
// gamma is still returned (every participation lets a sample take part in
// one round, so the sensitivity is at least gamma). Costs
// otherwise: O(R b) for a banded C, O(R K) for a BLT, O(R log R) for the
// tree, O(R K^2) for a quasiseparable C under single participation, and
// O(R k) more for k epochs or participations.
//
// It is an error if f is nil or has no workload; if f has neither an
// operator nor dense factors (a loss-only result: nothing streams); if
// its operator is of another package, or the dense operator of other
// factors than f's (no rule can read it: mechanism.New reports no
// factorization for such a stream); if the operator's rounds are not the
// workload's; for BLT parameters that their stored form would refuse
// (see mechanism.New); if p is invalid for R rounds; or if the
// recomputed gamma is not finite and > 0 (coefficients whose column norms
// overflow or underflow).
func StreamedSensitivity(f *Factorization, p Participation) (gamma float64, sens Sensitivity, err error) {
	if f == nil || f.Workload == nil {
		return 0, Sensitivity{}, &ParamError{Param: "factorization", Want: "a factorization computed by this package"}
	}
	r := f.Workload.R()
	if err := p.Validate(r); err != nil {
		return 0, Sensitivity{}, err
	}
	c, err := streamedEncoder(f)
	if err != nil {
		return 0, Sensitivity{}, err
	}
	g2, err := c.gammaSq()
	if err != nil {
		return 0, Sensitivity{}, err
	}
	gamma = math.Sqrt(g2)
	if !(gamma > 0) || math.IsInf(gamma, 1) {
		return 0, Sensitivity{}, fmt.Errorf("factorize: the largest column norm of %s's C, recomputed from %s, is %v: out of the range the rules compute in", f.Strategy, c.name, gamma)
	}
	switch k := p.Participations(r); {
	case p.Kind == KindEpochs:
		sens, err = c.epochs(r, p.K)
	case k <= 1:
		sens = Sensitivity{Value: gamma, Exact: true, Rule: RuleColumnNorm}
	default:
		sens, err = c.minSep(r, min(p.B, r), k)
	}
	if errors.Is(err, ErrNotRecomputed) {
		return gamma, Sensitivity{}, err // gamma bounds the sensitivity below
	}
	if err != nil {
		return 0, Sensitivity{}, err
	}
	if !(sens.Value > 0) || math.IsInf(sens.Value, 1) {
		return 0, Sensitivity{}, fmt.Errorf("factorize: the sensitivity of %s's C under %v, recomputed from %s, is %v: out of the range the rules compute in", f.Strategy, p, c.name, sens.Value)
	}
	return gamma, sens, nil
}

// encoder is the C that a factorization streams, in the form its operator
// (or its dense factors) gives it: exactly one of the fields is set.
type encoder struct {
	name   string // what it was read from, for messages
	banded *bandedOp
	tree   int // R, for the tree
	toep   *scaledToeplitz
	quasi  *linalg.QuasiSep
	dense  *mat.Dense
}

// streamedEncoder returns the C that f streams (see StreamedSensitivity).
func streamedEncoder(f *Factorization) (encoder, error) {
	op, r := f.Operator, f.Workload.R()
	if op == nil {
		if f.B == nil || f.C == nil {
			return encoder{}, fmt.Errorf("factorize: %s has neither an operator nor dense factors (a loss-only result): no C streams", f.Strategy)
		}
		return denseEncoder(f, "its dense factors (assembled by hand)")
	}
	if bp, ok := op.(*BLTParams); ok {
		// The one operator a caller can assemble: the checks of its
		// stored form first (lengths, finite coefficients, nonzero
		// scales), as mechanism.New makes them.
		if bp == nil {
			return encoder{}, fmt.Errorf("factorize: %s with nil BLT parameters", f.Strategy)
		}
		form, _ := FormOf(bp)
		if _, err := form.Operator(bp.Rounds()); err != nil {
			return encoder{}, fmt.Errorf("factorize: %s with BLT parameters its stored form refuses: %s", f.Strategy, strings.TrimPrefix(err.Error(), "factorize: "))
		}
	}
	if op.Rounds() != r {
		return encoder{}, fmt.Errorf("factorize: %s with an operator of %d rounds, want its workload's %d", f.Strategy, op.Rounds(), r)
	}
	name := "its operator " + op.String()
	switch o := op.(type) {
	case identityOp:
		id := bandedToeplitzOp([]float64{1}, r)
		return encoder{name: name, banded: &id}, nil
	case treeOp:
		return encoder{name: name, tree: o.r}, nil
	case bandedOp:
		return encoder{name: name, banded: &o}, nil
	case quasiSepOp:
		q := o.c
		return encoder{name: name, quasi: &q}, nil
	case *denseOp:
		if !StreamsOwnFactors(f) {
			return encoder{}, fmt.Errorf("factorize: %s streams the dense operator of other factors than its own: its C is not known", f.Strategy)
		}
		return denseEncoder(f, "its dense factors")
	case toeplitzOp:
		if st, ok := toeplitzOfOp(o); ok {
			return encoder{name: name, toep: st}, nil
		}
		// C = T_u^{-1} diag(s): inverting u costs R^2.
		if float64(r)*float64(r) > MaxRecomputeWork {
			return encoder{}, fmt.Errorf("factorize: %w: %s's Toeplitz operator has coefficients other than the square root's, and inverting them costs R^2 at R = %d", ErrNotRecomputed, f.Strategy, r)
		}
		scale := make([]float64, r)
		for i, v := range o.s {
			scale[i] = 1 / v
		}
		return encoder{name: name, toep: &scaledToeplitz{c: linalg.SeriesInverse(o.u, r), scale: scale}}, nil
	}
	if st, ok := toeplitzOfOp(op); ok { // the BLT and banded-inverse operators
		return encoder{name: name, toep: st}, nil
	}
	return encoder{}, fmt.Errorf("factorize: %s streams an operator of type %T, which no sensitivity rule reads", f.Strategy, op)
}

// denseEncoder is f's dense C, checked finite and of R columns.
func denseEncoder(f *Factorization, name string) (encoder, error) {
	if _, n := f.C.Dims(); n != f.Workload.R() {
		return encoder{}, fmt.Errorf("factorize: %s with a C of %d columns, want its workload's %d", f.Strategy, n, f.Workload.R())
	}
	if _, err := checkFinite("C", f.C); err != nil {
		return encoder{}, err
	}
	return encoder{name: name, dense: f.C}, nil
}

// gammaSq returns the largest squared column norm of C.
func (c encoder) gammaSq() (float64, error) {
	switch {
	case c.banded != nil:
		return slices.Max(bandedColSq(*c.banded)), nil
	case c.tree > 0:
		return float64(bits.Len(uint(c.tree))), nil
	case c.toep != nil:
		return slices.Max(c.toep.colSq()), nil
	case c.quasi != nil:
		col := make([]float64, c.quasi.N)
		c.quasi.ColNormsSq(col)
		return slices.Max(col), nil
	}
	g := Gamma(c.dense)
	return g * g, nil
}

// minSep returns the sensitivity under b-min-separation with k >= 2
// participations (b <= r).
func (c encoder) minSep(r, b, k int) (Sensitivity, error) {
	quadratic := float64(r) * float64(r)
	tooCostly := func(what string, work float64) error {
		return fmt.Errorf("factorize: %w: %s under minsep:%d with %d participations needs %s, about %.3g multiply-adds at R = %d (at most %.3g)",
			ErrNotRecomputed, c.name, b, k, what, work, r, float64(MaxRecomputeWork))
	}
	switch {
	case c.tree > 0:
		return treeMinSep(r, b, k), nil
	case c.banded != nil:
		if c.banded.bands <= b {
			return Sensitivity{Value: math.Sqrt(bestSeparated(bandedColSq(*c.banded), b, k)), Exact: true, Rule: RuleMinSepBanded}, nil
		}
		if st, ok := toeplitzOfOp(*c.banded); ok {
			return c.toeplitzMinSep(st, r, b, k)
		}
		if quadratic > MaxRecomputeWork {
			return Sensitivity{}, tooCostly("the dynamic-programming bound over the rows of X = C^T C (C has more bands than the separation)", quadratic)
		}
		return Sensitivity{Value: minSepBoundRows(r, b, k, bandedGramRows(*c.banded)), Rule: RuleMinSepBound}, nil
	case c.toep != nil:
		return c.toeplitzMinSep(c.toep, r, b, k)
	case c.quasi != nil:
		if w := quadratic * float64(c.quasi.K); w > MaxRecomputeWork {
			return Sensitivity{}, tooCostly("the dynamic-programming bound over the rows of X = C^T C", w)
		}
		return quasiSepMinSep(*c.quasi, MinSeparation(b, k)), nil
	}
	m, _ := c.dense.Dims()
	if w := quadratic * float64(m); w > MaxRecomputeWork {
		return Sensitivity{}, tooCostly("X = C^T C formed from the dense factors", w)
	}
	return SensitivityOf(c.dense, MinSeparation(b, k))
}

// toeplitzMinSep is scaledToeplitz.minSep within the work limit (its
// dynamic-programming bound costs R^2).
func (c encoder) toeplitzMinSep(st *scaledToeplitz, r, b, k int) (Sensitivity, error) {
	mono, bands := st.plain(), 0
	for i, v := range st.c {
		mono = mono && !(v < 0 || (i > 0 && v > st.c[i-1]))
		if v != 0 {
			bands = i + 1
		}
	}
	if !mono && bands > b && float64(r)*float64(r) > MaxRecomputeWork {
		return Sensitivity{}, fmt.Errorf("factorize: %w: %s under minsep:%d with %d participations needs the dynamic-programming bound over the rows of X = C^T C (a scaled or signed Toeplitz C of %d bands), about %.3g multiply-adds at R = %d (at most %.3g)",
			ErrNotRecomputed, c.name, b, k, bands, float64(r)*float64(r), r, float64(MaxRecomputeWork))
	}
	return st.minSep(b, k, st.colSq())
}

// epochs returns the sensitivity under k fixed epochs (period r / k): the
// residue classes of X = C^T C, each entry from C's structure.
func (c encoder) epochs(r, k int) (Sensitivity, error) {
	// The classes hold r k entries of X, each a dot product of columns:
	// of at most b entries (banded), log2 R (tree), one lag sum (Toeplitz,
	// r k to form), m (dense).
	per := 1.0
	switch {
	case c.banded != nil:
		per = float64(c.banded.bands)
	case c.tree > 0:
		per = float64(bits.Len(uint(c.tree)))
	case c.dense != nil:
		m, _ := c.dense.Dims()
		per = float64(m)
	}
	if w := float64(r) * float64(k) * per; c.quasi == nil && w > MaxRecomputeWork {
		return Sensitivity{}, fmt.Errorf("factorize: %w: %s under epochs:%d needs %d entries of X = C^T C, about %.3g multiply-adds at R = %d (at most %.3g)",
			ErrNotRecomputed, c.name, k, r*k, w, r, float64(MaxRecomputeWork))
	}
	switch {
	case c.banded != nil:
		o := *c.banded
		return epochSensitivity(r, k, func(i, j int) float64 { return bandedGram(o, i, j) })
	case c.tree > 0:
		return epochSensitivity(r, k, func(i, j int) float64 { return treeGram(c.tree, i, j) })
	case c.toep != nil:
		return epochSensitivity(r, k, toeplitzClassGram(c.toep, r/k))
	case c.quasi != nil:
		if w := float64(r) * float64(r) * float64(c.quasi.K); w > MaxRecomputeWork {
			return Sensitivity{}, fmt.Errorf("factorize: %w: %s under epochs:%d needs the rows of X = C^T C, about %.3g multiply-adds at R = %d (at most %.3g)",
				ErrNotRecomputed, c.name, k, w, r, float64(MaxRecomputeWork))
		}
		return epochsFromRows(r, k, quasiSepGramRows(*c.quasi))
	}
	return SensitivityOf(c.dense, FixedEpochs(k))
}

// bandedGram returns X_ij = <C e_i, C e_j> for the banded C of o: column
// j holds C[j+d][j] = o.sub[j+d][d-1] (d >= 1) below its diagonal.
func bandedGram(o bandedOp, i, j int) float64 {
	if i > j {
		i, j = j, i
	}
	n := len(o.diag)
	if j-i >= o.bands {
		return 0
	}
	at := func(row, col int) float64 { // C[row][col], row >= col
		if row == col {
			return o.diag[row]
		}
		if d := row - col; d <= len(o.sub[row]) {
			return o.sub[row][d-1]
		}
		return 0
	}
	s := 0.0
	for t := j; t < n && t-i < o.bands; t++ {
		s += at(t, i) * at(t, j)
	}
	return s
}

// bandedGramRows produces the rows of X = C^T C for the banded C of o,
// O(R b^2) in all besides the rows' O(R) each.
func bandedGramRows(o bandedOp) gramRows {
	return func(visit func(i int, row []float64)) {
		n := len(o.diag)
		row := make([]float64, n)
		for i := 0; i < n; i++ {
			lo, hi := max(0, i-o.bands+1), min(n, i+o.bands)
			for j := lo; j < hi; j++ {
				row[j] = bandedGram(o, i, j)
			}
			visit(i, row)
			clear(row[lo:hi])
		}
	}
}

// treeGram returns X_ij for the tree's C on r rounds: the number of
// complete dyadic nodes [q 2^l, (q+1) 2^l) (inside [0, r)) that hold both
// i and j.
func treeGram(r, i, j int) float64 {
	n := 0
	for l := 0; l < bits.Len(uint(r)); l++ {
		if i>>l == j>>l && (i>>l+1)<<l <= r {
			n++
		}
	}
	return float64(n)
}

// toeplitzClassGram returns X_ij for i, j in one residue class of period
// p (j - i a multiple of p) of C = T_c diag(scale)^{-1}: for i <= j,
// X_ij = G_{j-i}(R-1-j) / (scale_i scale_j) with the lag prefix sums
// G_d(L) = sum_{u <= L} c_{u+d} c_u, O(R^2 / p) to form (O(R k) for k
// epochs of period p = R / k).
func toeplitzClassGram(st *scaledToeplitz, p int) func(i, j int) float64 {
	r := len(st.c)
	g := make([][]float64, (r-1)/p+1) // g[m][L] = G_{m p}(L)
	for m := range g {
		d := m * p
		g[m] = make([]float64, max(0, r-d))
		s := 0.0
		for u := 0; u+d < r; u++ {
			s += st.c[u+d] * st.c[u]
			g[m][u] = s
		}
	}
	return func(i, j int) float64 {
		if i > j {
			i, j = j, i
		}
		return g[(j-i)/p][r-1-j] / (st.scale[i] * st.scale[j])
	}
}

// epochsFromRows is epochSensitivity (k epochs of n rounds) with X's
// entries read from its rows, in any order.
func epochsFromRows(n, k int, rows gramRows) (Sensitivity, error) {
	p := n / k
	s, neg := make([]float64, p), make([]float64, p)
	var bad *ParamError
	rows(func(i int, row []float64) {
		cl := i % p
		for j := cl; j < n; j += p {
			v := row[j]
			if math.IsNaN(v) || math.IsInf(v, 0) {
				if bad == nil {
					bad = &ParamError{Param: fmt.Sprintf("X[%d][%d]", i, j), Value: v, Want: "a finite number"}
				}
				continue
			}
			if v < 0 {
				neg[cl] -= v
			}
			s[cl] += math.Abs(v)
		}
	})
	if bad != nil {
		return Sensitivity{}, bad
	}
	// As epochSensitivity: exact where a class's negative entries are
	// within the rounding of its sum.
	roundoff := 4 * float64(k) * float64(k) * 0x1p-52
	best, exact := 0.0, true
	for cl := range s {
		nonneg := neg[cl] <= roundoff*s[cl]
		switch {
		case s[cl] > best:
			best, exact = s[cl], nonneg
		case s[cl] == best:
			exact = exact || nonneg
		}
	}
	return Sensitivity{Value: math.Sqrt(best), Exact: exact, Rule: RuleEpochs}, nil
}
