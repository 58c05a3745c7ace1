package factorize

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/dpmf/dpmf/linalg"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// Rule names the rule that computed a [Sensitivity].
type Rule string

// The sensitivity rules of [SensitivityOf].
const (
	// RuleColumnNorm: single participation, the largest column norm of C
	// (exact).
	RuleColumnNorm Rule = "largest column norm"
	// RuleEpochs: fixed epochs, the largest sum of |X| over a residue
	// class (exact when that class's entries of X are non-negative).
	RuleEpochs Rule = "epoch residue classes"
	// RuleMinSepBanded: min-separation with X banded within the
	// separation, the largest sum of k diagonal entries b apart (exact).
	RuleMinSepBanded Rule = "banded min-separation"
	// RuleMinSepToeplitz: min-separation for a lower-triangular Toeplitz C
	// with non-negative non-increasing coefficients, participations exactly
	// b apart from round 0 (exact).
	RuleMinSepToeplitz Rule = "Toeplitz min-separation"
	// RuleMinSepBound: min-separation for any C, the dynamic-programming
	// bound (an upper bound).
	RuleMinSepBound Rule = "min-separation bound"
)

// Sensitivity is the L2 sensitivity of C G under a [Participation] when
// every row of G that one sample takes part in changes by a vector of norm
// at most 1 (and the other rows do not change):
//
//	sens = max over participation patterns S, over g_j with ||g_j|| <= 1,
//	       of ||sum_{j in S} C[:, j] g_j^T||_F.
//
// With X = C^T C, sens^2 = max_S max_g sum_{a,b in S} X_ab <g_a, g_b>,
// which is max_S sum_{a,b in S} X_ab when X >= 0 on S x S and at most
// max_S sum |X_ab| otherwise. The release's sensitivity is this times the
// per-round bound of one sample's change (see accountant.ReleaseSensitivity).
// Value is never below the true sensitivity; Exact reports that it equals
// it up to the rounding of the floating-point sums that compute it.
type Sensitivity struct {
	// Value is the sensitivity, or an upper bound on it.
	Value float64
	// Exact reports that Value is the sensitivity, not only a bound.
	Exact bool
	// Rule is the rule that computed Value.
	Rule Rule
}

// String returns for example "6 (exact, largest column norm)".
func (s Sensitivity) String() string {
	kind := "upper bound"
	if s.Exact {
		kind = "exact"
	}
	return fmt.Sprintf("%.6g (%s, %s)", s.Value, kind, s.Rule)
}

// SensitivityOf returns the sensitivity of the factor c (m x n: one column
// per round) under p, with the best rule that applies:
//
//	single          largest column norm                       exact
//	epochs          residue classes of X = C^T C, Eq. 5 of    exact if X >= 0 on the
//	                Choquette-Choo et al. 2023 (multi-epoch)  worst class, else a bound
//	minsep          Toeplitz C, c_0 >= c_1 >= ... >= 0        exact
//	                X banded within b                          exact
//	                otherwise the dynamic-programming bound   upper bound
//
// It is an error if p is invalid for n rounds or an entry of c is NaN or
// infinite (a *[ParamError] naming "C[i][j]"). The epoch rule reads only
// the class blocks of X (O(n k m)); min-separation checks the Toeplitz form
// (O(n^2)) and whether columns b apart have disjoint supports (then X is
// banded within b, O(n m)), and only otherwise forms X (O(m n^2)) for the
// bound (O(n^2 k)).
func SensitivityOf(c mat.Matrix, p Participation) (Sensitivity, error) {
	if isNilMatrix(c) {
		return Sensitivity{}, &ParamError{Param: "C", Want: "an m x R matrix"}
	}
	maxAbs, err := checkFinite("C", c)
	if err != nil {
		return Sensitivity{}, err
	}
	_, n := c.Dims()
	if err := p.Validate(n); err != nil {
		return Sensitivity{}, err
	}
	if e := scaleExponent(maxAbs); e != 0 {
		// Entries so small that their squares underflow (a non-zero C
		// with a sensitivity of 0) or so large that they overflow:
		// compute for C 2^-e, exactly scaled, and scale back, rounding
		// up.
		cs := mat.DenseCopyOf(c)
		cs.Scale(math.Ldexp(1, -e), cs)
		s, err := SensitivityOf(cs, p)
		if err != nil {
			return Sensitivity{}, err
		}
		s.Value = ldexpUp(s.Value, e)
		return s, nil
	}
	if p.Kind == KindEpochs {
		// Only the class blocks of X are needed: O(n k m) from the columns.
		ct := mat.DenseCopyOf(c.T())
		return epochSensitivity(n, p.K, func(i, j int) float64 {
			return dot(ct.RawRowView(i), ct.RawRowView(j))
		})
	}
	k := p.Participations(n) // 1 for single participation
	if k == 1 {
		return Sensitivity{Value: gammaOfFinite(c, maxAbs), Exact: true, Rule: RuleColumnNorm}, nil
	}
	if col, ok := monotoneToeplitz(c); ok {
		v, err := ToeplitzMinSepSensitivity(col, p.B, k)
		if err != nil {
			return Sensitivity{}, err
		}
		return Sensitivity{Value: v, Exact: true, Rule: RuleMinSepToeplitz}, nil
	}
	ct := mat.DenseCopyOf(c.T())
	if supportsApart(ct, p.B) {
		// Columns b or more apart have disjoint supports, so X is banded
		// within b without forming it: the diagonal is all that counts.
		d := make([]float64, n)
		for j := range d {
			d[j] = dot(ct.RawRowView(j), ct.RawRowView(j))
		}
		return Sensitivity{Value: math.Sqrt(bestSeparated(d, p.B, k)), Exact: true, Rule: RuleMinSepBanded}, nil
	}
	x := mat.NewSymDense(n, nil)
	x.SymOuterK(1, ct)
	return MinSepSensitivity(x, p.B, k)
}

// checkFinite returns a *ParamError naming the first entry of a (name[i][j])
// that is NaN or infinite: such an entry has no sensitivity, and left in it
// makes a maximum skip its class (NaN compares false) or report NaN.
// Otherwise it returns the largest magnitude of an entry.
func checkFinite(name string, a mat.Matrix) (float64, error) {
	m, _ := a.Dims()
	row := rowReader(a)
	var maxBits uint64
	for i := 0; i < m; i++ {
		r := row(i)
		rowMax := maxAbsBits(r)
		if rowMax >= infBits {
			for j, v := range r {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return 0, &ParamError{Param: fmt.Sprintf("%s[%d][%d]", name, i, j), Value: v, Want: "a finite number"}
				}
			}
		}
		maxBits = max(maxBits, rowMax)
	}
	return math.Float64frombits(maxBits), nil
}

// scaleExponent returns 0 when the squares and sums of squares of entries
// up to maxAbs (> 0) neither underflow to 0 nor overflow, and otherwise e
// with maxAbs 2^-e in [1/2, 1).
func scaleExponent(maxAbs float64) int {
	if maxAbs == 0 || (maxAbs >= 0x1p-400 && maxAbs <= 0x1p400) {
		return 0
	}
	_, e := math.Frexp(maxAbs)
	return e
}

// ldexpUp returns the smallest float64 >= v 2^e for v > 0 (+Inf on
// overflow): a subnormal result is rounded up, never to 0.
func ldexpUp(v float64, e int) float64 {
	r := math.Ldexp(v, e)
	if !math.IsInf(r, 1) && math.Ldexp(r, -e) < v {
		r = math.Nextafter(r, math.Inf(1))
	}
	return r
}

// supportsApart reports whether the columns of C (the rows of ct) that are
// b or more apart have disjoint row supports, so that X = C^T C is banded
// within b: with [lo_j, hi_j] the rows where column j is nonzero,
// max_{i <= j-b} hi_i < lo_j for every j.
func supportsApart(ct *mat.Dense, b int) bool {
	n, _ := ct.Dims()
	lo, hi := make([]int, n), make([]int, n)
	for j := 0; j < n; j++ {
		lo[j], hi[j] = math.MaxInt, -1
		for i, v := range ct.RawRowView(j) {
			if v != 0 {
				lo[j] = min(lo[j], i)
				hi[j] = i
			}
		}
	}
	reach := -1 // max hi over the columns at least b before j
	for j := b; j < n; j++ {
		reach = max(reach, hi[j-b])
		if hi[j] >= 0 && reach >= lo[j] {
			return false
		}
	}
	return true
}

// Gamma returns the largest column norm of c: its sensitivity under single
// participation (exact). A nil matrix has no sensitivity: NaN, which every
// check of a privacy parameter refuses; so has a NaN entry. Entries whose
// squares would underflow or overflow are scaled by a power of two first,
// so that a non-zero c never has gamma 0.
func Gamma(c mat.Matrix) float64 {
	if isNilMatrix(c) {
		return math.NaN()
	}
	m, _ := c.Dims()
	row := rowReader(c)
	var maxBits uint64
	for i := 0; i < m; i++ {
		maxBits = max(maxBits, maxAbsBits(row(i)))
	}
	switch {
	case maxBits > infBits:
		return math.NaN()
	case maxBits == infBits:
		return math.Inf(1)
	}
	return gammaOfFinite(c, math.Float64frombits(maxBits))
}

// gammaOfFinite is Gamma for a C whose entries are finite with largest
// magnitude maxAbs.
func gammaOfFinite(c mat.Matrix, maxAbs float64) float64 {
	m, n := c.Dims()
	row := rowReader(c)
	e := scaleExponent(maxAbs)
	scale := math.Ldexp(1, -e)
	// The squares are summed down each column (row by row, so that C is
	// read in memory order: each column's sum is the same).
	colSq := make([]float64, n)
	for i := 0; i < m; i++ {
		for j, v := range row(i) {
			v *= scale
			colSq[j] += v * v
		}
	}
	g2 := 0.0
	for _, s := range colSq {
		g2 = math.Max(g2, s)
	}
	return ldexpUp(math.Sqrt(g2), e) // exactly math.Sqrt(g2) for e = 0
}

// infBits is the bit pattern of +Inf: the absolute value of a float64,
// as an unsigned integer of its bits, is at least infBits exactly for
// +-Inf and NaN (above it), and orders the finite values as their
// magnitudes.
const infBits = 0x7ff0_0000_0000_0000

// maxAbsBits returns the largest absolute value of r's entries as the
// bits of a float64 (0 for an empty r): the magnitudes compared as
// integers, four at a time, which orders NaN above every number and +Inf.
func maxAbsBits(r []float64) uint64 {
	const mask = 1<<63 - 1
	var m0, m1, m2, m3 uint64
	for ; len(r) >= 4; r = r[4:] {
		m0 = max(m0, math.Float64bits(r[0])&mask)
		m1 = max(m1, math.Float64bits(r[1])&mask)
		m2 = max(m2, math.Float64bits(r[2])&mask)
		m3 = max(m3, math.Float64bits(r[3])&mask)
	}
	for _, v := range r {
		m0 = max(m0, math.Float64bits(v)&mask)
	}
	return max(m0, m1, m2, m3)
}

// rowReader returns a function that gives row i of a (valid until the
// next call): a view of a *mat.Dense's data, else the entries copied by
// At.
func rowReader(a mat.Matrix) func(i int) []float64 {
	if d, ok := a.(*mat.Dense); ok {
		return d.RawRowView
	}
	_, n := a.Dims()
	buf := make([]float64, n)
	return func(i int) []float64 {
		for j := range buf {
			buf[j] = a.At(i, j)
		}
		return buf
	}
}

// EpochSensitivity returns the sensitivity of a factor with Gram matrix x
// (n x n, X = C^T C) under k fixed epochs of period b = n / k: the square
// root of the largest sum of |X_ij| over i, j in one residue class
// {r, r+b, ..., r+(k-1)b} (Choquette-Choo, McMahan, Rush, Thakurta 2023,
// "Multi-Epoch Matrix Factorization Mechanisms for Private Machine
// Learning", Eq. 5, with absolute values so that it holds for any X). It
// is exact when the worst class's entries of X are non-negative (then
// equal gradients in all k rounds attain it), or negative only at the level
// of rounding (at most 4 k^2 2^-52 of the class sum, as for the in-class
// zeros of the multi-epoch optimum), and an upper bound otherwise. A
// negative or non-finite diagonal entry, or a non-finite entry of a class
// block, is a *[ParamError] naming "X[i][j]".
// Entries up to the float64 maximum are fine (X is scaled by a power of
// two first); an X that is no Gram matrix whose sensitivity overflows is a
// *[ParamError] naming "X".
func EpochSensitivity(x mat.Symmetric, k int) (Sensitivity, error) {
	if err := checkGram(x); err != nil {
		return Sensitivity{}, err
	}
	n := x.SymmetricDim()
	if err := FixedEpochs(k).Validate(n); err != nil {
		return Sensitivity{}, err
	}
	xs, h := scaleGram(x)
	s, err := epochSensitivity(n, k, xs.At)
	if err != nil {
		return Sensitivity{}, err
	}
	s.Value, err = unscaleGram(s.Value, h)
	return s, err
}

// scaleGram returns x scaled exactly by 4^-h, and h, where h > 0 makes
// X's largest diagonal entry at most 2^800: then the sums of entries that
// the sensitivity rules form cannot overflow for a Gram matrix (|X_ij| <=
// max(X_ii, X_jj)), whose sensitivity (at most n times the largest column
// norm) is finite for any finite C. The sensitivity of x is that of the
// result times 2^h (unscaleGram). Entries scaled below the subnormal range
// are at most 2^-1700 of the largest, below the rounding of any sum.
func scaleGram(x mat.Symmetric) (mat.Symmetric, int) {
	d := 0.0
	for i := 0; i < x.SymmetricDim(); i++ {
		d = math.Max(d, x.At(i, i))
	}
	if d <= 0x1p800 {
		return x, 0
	}
	_, e := math.Frexp(d)
	h := (e - 800 + 1) / 2
	return gramScaled{x, math.Ldexp(1, -2*h)}, h
}

// unscaleGram returns v 2^h rounded up, and a *ParamError naming X when
// it is not finite: a symmetric X that is no Gram matrix (off-diagonal
// entries far above its diagonal) can have sums that overflow.
func unscaleGram(v float64, h int) (float64, error) {
	if v = ldexpUp(v, h); math.IsInf(v, 1) {
		return 0, &ParamError{Param: "X", Value: "entries whose sums overflow", Want: "a Gram matrix C^T C (|X_ij| <= max(X_ii, X_jj)), whose sensitivity is a finite float64"}
	}
	return v, nil
}

// gramScaled is a symmetric matrix times a constant s.
type gramScaled struct {
	mat.Symmetric
	s float64
}

func (x gramScaled) At(i, j int) float64 { return x.Symmetric.At(i, j) * x.s }
func (x gramScaled) T() mat.Matrix       { return x }

// epochSensitivity is [EpochSensitivity] with X's entries from x(i, j). A
// NaN or infinite entry is a *ParamError naming X[i][j].
func epochSensitivity(n, k int, x func(i, j int) float64) (Sensitivity, error) {
	b := n / k
	// A class's negative entries may be rounding-level (the multi-epoch
	// optimum has exact zeros there): when their total is below the
	// rounding of the class sum, sum |X| equals the attained sum X to
	// rounding, and the value is exact in the same sense as for X >= 0.
	roundoff := 4 * float64(k) * float64(k) * 0x1p-52
	best, exact := 0.0, true
	for r := 0; r < b; r++ {
		s, neg := 0.0, 0.0
		for i := r; i < n; i += b {
			for j := r; j < n; j += b {
				v := x(i, j)
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return Sensitivity{}, &ParamError{Param: fmt.Sprintf("X[%d][%d]", i, j), Value: v, Want: "a finite number"}
				}
				if v < 0 {
					neg -= v
				}
				s += math.Abs(v)
			}
		}
		nonneg := neg <= roundoff*s
		switch {
		case s > best:
			best, exact = s, nonneg
		case s == best:
			exact = exact || nonneg
		}
	}
	return Sensitivity{Value: math.Sqrt(best), Exact: exact, Rule: RuleEpochs}, nil
}

// MinSepSensitivity returns the sensitivity of a factor with Gram matrix x
// under b-min-separation with at most k participations: the largest column
// norm when k = 1 (exact), by [MinSepBanded] (exact) when X is banded within
// b (X_ij = 0 for |i - j| >= b), else by [MinSepBound] (an upper bound).
// As for the other min-separation rules, a separation b >= n counts as n
// (one participation) and k as at most the ceil(n / b) participations
// that fit, so counts up to MaxInt are fine; b, k < 1, a non-finite entry
// of x or a negative diagonal entry are a *[ParamError].
// Entries up to the float64 maximum are fine, as for [EpochSensitivity].
func MinSepSensitivity(x mat.Symmetric, b, k int) (Sensitivity, error) {
	b, k, err := checkMinSep(x, b, k)
	if err != nil {
		return Sensitivity{}, err
	}
	if k == 1 {
		d := 0.0
		for i := 0; i < x.SymmetricDim(); i++ {
			d = math.Max(d, x.At(i, i))
		}
		return Sensitivity{Value: math.Sqrt(d), Exact: true, Rule: RuleColumnNorm}, nil
	}
	if bandedWithin(x, b) {
		v, err := MinSepBanded(x, b, k)
		return Sensitivity{Value: v, Exact: true, Rule: RuleMinSepBanded}, err
	}
	v, err := MinSepBound(x, b, k)
	return Sensitivity{Value: v, Exact: false, Rule: RuleMinSepBound}, err
}

// checkGram returns a *ParamError for a nil or empty Gram matrix, or one
// whose diagonal (the squared column norms of C) is not finite and >= 0:
// no C has it, and a negative diagonal would make the maxima below 0.
func checkGram(x mat.Symmetric) error {
	if isNilMatrix(x) || x.SymmetricDim() < 1 {
		return &ParamError{Param: "X", Want: "a symmetric n x n matrix C^T C, n >= 1"}
	}
	for i := 0; i < x.SymmetricDim(); i++ {
		if v := x.At(i, i); !(v >= 0) || math.IsInf(v, 1) {
			return &ParamError{Param: fmt.Sprintf("X[%d][%d]", i, i), Value: v, Want: "a finite number >= 0 (a squared column norm of C)"}
		}
	}
	return nil
}

// checkMinSep checks the arguments of the min-separation rules (every
// entry of x finite: they read all of it, O(n^2), but for the banded rule),
// and
// returns b and k clamped to what n rounds allow: a separation b >= n
// leaves one participation (as b = n does), and at most ceil(n / b)
// participations fit (so that no count overflows or sizes a slice).
func checkMinSep(x mat.Symmetric, b, k int) (int, int, error) {
	if err := checkGram(x); err != nil {
		return 0, 0, err
	}
	if b < 1 {
		return 0, 0, &ParamError{Param: "separation", Value: b, Want: ">= 1"}
	}
	if k < 1 {
		return 0, 0, &ParamError{Param: "participations", Value: k, Want: ">= 1"}
	}
	n := x.SymmetricDim()
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			if v := x.At(i, j); math.IsNaN(v) || math.IsInf(v, 0) {
				return 0, 0, &ParamError{Param: fmt.Sprintf("X[%d][%d]", i, j), Value: v, Want: "a finite number"}
			}
		}
	}
	b = min(b, n)
	return b, min(k, (n-1)/b+1), nil
}

// bandedWithin reports whether X_ij = 0 for all |i - j| >= b.
func bandedWithin(x mat.Symmetric, b int) bool {
	n := x.SymmetricDim()
	for i := 0; i < n; i++ {
		for j := i + b; j < n; j++ {
			if x.At(i, j) != 0 {
				return false
			}
		}
	}
	return true
}

// MinSepBanded returns the exact sensitivity under b-min-separation with
// at most k participations of a factor whose Gram matrix x is banded
// within b (X_ij = 0 for |i - j| >= b): two participations are at least b
// apart, so the cross terms vanish and sens^2 is the largest sum of at
// most k diagonal entries at least b apart, found by dynamic programming
// in O(n k) (McKenna 2024, "Scaling up the banded matrix factorization
// mechanism"; Choquette-Choo et al. 2023, "(Amplified) banded matrix
// factorization"). It is an error if x is not banded within b.
func MinSepBanded(x mat.Symmetric, b, k int) (float64, error) {
	b, k, err := checkMinSep(x, b, k)
	if err != nil {
		return 0, err
	}
	if !bandedWithin(x, b) {
		return 0, &ParamError{Param: "X", Value: "not banded within the separation " + strconv.Itoa(b), Want: "X_ij = 0 for |i - j| >= b"}
	}
	n := x.SymmetricDim()
	xs, h := scaleGram(x)
	d := make([]float64, n)
	for i := range d {
		d[i] = xs.At(i, i)
	}
	return unscaleGram(math.Sqrt(bestSeparated(d, b, k)), h)
}

// MinSepBound returns an upper bound on the sensitivity under
// b-min-separation with at most k participations of any factor with Gram
// matrix x, by the dynamic program of Choquette-Choo, Ganesh, McKenna,
// McMahan, Rush, Thakurta, Xu 2023, "(Amplified) banded matrix
// factorization: a unified approach to private training", Alg. 3: for a
// pattern S,
//
//	sum_{i,j in S} |X_ij| <= sum_{i in S} v_i,  v_i = max over patterns S' containing i of sum_{j in S'} |X_ij|,
//
// and both maxima are dynamic programs over the positions. It costs
// O(n^2 k) and equals the sensitivity when X is banded within b. Bad
// arguments are a *[ParamError].
func MinSepBound(x mat.Symmetric, b, k int) (float64, error) {
	b, k, err := checkMinSep(x, b, k)
	if err != nil {
		return 0, err
	}
	n := x.SymmetricDim()
	x, h := scaleGram(x)
	v := make([]float64, n)
	row := make([]float64, n)
	for i := 0; i < n; i++ {
		for j := range row {
			row[j] = math.Abs(x.At(i, j))
			if math.IsNaN(row[j]) || math.IsInf(row[j], 0) {
				return 0, &ParamError{Param: fmt.Sprintf("X[%d][%d]", i, j), Value: x.At(i, j), Want: "a finite number"}
			}
		}
		v[i] = row[i]
		if k == 1 {
			continue
		}
		// best[c]: at most c picks left of i - b + 1; right likewise.
		left := atMostPicks(row[:max(0, i-b+1)], b, k-1)
		right := atMostPicks(reversed(row[min(n, i+b):]), b, k-1)
		extra := 0.0
		for c1 := 0; c1 <= k-1; c1++ {
			extra = math.Max(extra, left[c1]+right[k-1-c1])
		}
		v[i] += extra
	}
	return unscaleGram(math.Sqrt(bestSeparated(v, b, k)), h)
}

// reversed returns a reversed copy of w.
func reversed(w []float64) []float64 {
	r := slices.Clone(w)
	slices.Reverse(r)
	return r
}

// bestSeparated returns the largest sum of at most k entries of w whose
// indices are pairwise at least b apart (0 if all entries are negative).
// When k is at least the ceil(n/b) entries that fit, the count does not
// bind and the dynamic program needs no count: A[t] = max(A[t-1],
// w[t] + A[t-b]), O(n) instead of O(n k) (the same float64 by induction:
// A_c[t] = A[t] once c >= t/b + 1, and a sum is rounded the same way in
// both), which at R = 10^5 under minsep:8 was 1.2 s.
func bestSeparated(w []float64, b, k int) float64 {
	n := len(w)
	if n == 0 || k < (n-1)/b+1 {
		return atMostPicks(w, b, k)[k]
	}
	a := make([]float64, n)
	run := 0.0
	for t, v := range w {
		base := 0.0
		if t-b >= 0 {
			base = a[t-b]
		}
		if x := base + v; x > run {
			run = x
		}
		a[t] = run
	}
	return run
}

// atMostPicks returns best[c], c = 0..k: the largest sum of at most c
// entries of w with indices pairwise at least b apart. With A_c[t] the best
// over indices <= t, A_c[t] = max(A_c[t-1], w[t] + A_{c-1}[t-b]) and
// A_0 = 0. O(len(w) k).
func atMostPicks(w []float64, b, k int) []float64 {
	n := len(w)
	best := make([]float64, k+1)
	prev := make([]float64, n) // A_{c-1}
	cur := make([]float64, n)  // A_c
	for c := 1; c <= k; c++ {
		run := 0.0
		for t := 0; t < n; t++ {
			base := 0.0
			if t-b >= 0 {
				base = prev[t-b]
			}
			if v := base + w[t]; v > run { // w is finite: no NaN to keep
				run = v
			}
			cur[t] = run
		}
		if n > 0 {
			best[c] = cur[n-1]
		}
		prev, cur = cur, prev
	}
	return best
}

// monotoneToeplitz reports whether c is square, lower triangular and
// Toeplitz with non-negative non-increasing first column, and returns that
// column.
func monotoneToeplitz(c mat.Matrix) ([]float64, bool) {
	m, n := c.Dims()
	if m != n {
		return nil, false
	}
	col := make([]float64, n)
	for i := 0; i < n; i++ {
		col[i] = c.At(i, 0)
		if col[i] < 0 || (i > 0 && col[i] > col[i-1]) {
			return nil, false
		}
	}
	for i := 0; i < n; i++ {
		for j := 1; j < n; j++ {
			want := 0.0
			if i >= j {
				want = col[i-j]
			}
			if c.At(i, j) != want {
				return nil, false
			}
		}
	}
	return col, true
}

// ToeplitzMinSepSensitivity returns the exact sensitivity under
// b-min-separation with at most k participations of the n x n
// lower-triangular Toeplitz factor with first column col (n = len(col)),
// when col is non-negative and non-increasing: the participations exactly b
// apart from round 0 are the worst case (Kalinin and Lampert 2024,
// "Banded square root matrix factorization for differentially private
// model training", Thm. 2), so sens = ||C u|| with u the indicator of
// {0, b, ..., (k'-1) b}, k' = min(k, ceil(n / b)). O(n). Coefficients
// whose squares would underflow (col[0] below about 1e-120) are scaled by
// a power of two first, as in [SensitivityOf], so that a non-zero col
// never has sensitivity 0 and the value is rounded up. It is an error
// if col is negative or increasing somewhere, or if the sensitivity
// overflows a float64.
func ToeplitzMinSepSensitivity(col []float64, b, k int) (float64, error) {
	n := len(col)
	if n < 1 {
		return 0, &ParamError{Param: "col", Want: "at least one coefficient"}
	}
	if b < 1 {
		return 0, &ParamError{Param: "separation", Value: b, Want: ">= 1"}
	}
	if k < 1 {
		return 0, &ParamError{Param: "participations", Value: k, Want: ">= 1"}
	}
	for i, v := range col {
		if !(v >= 0) || math.IsInf(v, 1) || (i > 0 && v > col[i-1]) {
			return 0, &ParamError{Param: "col[" + strconv.Itoa(i) + "]", Value: v, Want: "finite, non-negative and non-increasing coefficients"}
		}
	}
	if e := scaleExponent(col[0]); e < 0 {
		// col[0] is the largest coefficient: scaled up by 2^-e (exact),
		// computed, and scaled back rounding up.
		scaled := make([]float64, n)
		for i, v := range col {
			scaled[i] = math.Ldexp(v, -e)
		}
		v, err := ToeplitzMinSepSensitivity(scaled, b, k)
		return ldexpUp(v, e), err
	}
	v, s := minSepPattern(col, b, k)
	if !math.IsInf(s, 0) && !math.IsNaN(s) {
		return math.Sqrt(s), nil // the sum as before, to the bit
	}
	// The squares of entries above 1e154 overflow where the norm need not:
	// the norm scaled against overflow.
	sens := floats.Norm(v, 2)
	if math.IsInf(sens, 0) || math.IsNaN(sens) {
		return 0, &ParamError{Param: "col[0]", Value: col[0], Want: "coefficients small enough that the sensitivity is a finite float64"}
	}
	return sens, nil
}

// minSepPattern returns v = C u and ||v||^2 for the lower-triangular
// Toeplitz C with first column c and u the indicator of the participation
// pattern {0, b, ..., (k'-1) b}, k' = min(k, the participations that fit);
// O(R). ||v||^2 is a lower bound on C's squared sensitivity under
// b-min-separation with k participations, and equals it for the C of
// [ToeplitzMinSepSensitivity].
func minSepPattern(c []float64, b, k int) ([]float64, float64) {
	n := len(c)
	// ceil(n / b) without the overflow of n + b - 1 (which gave 0
	// participations, a sensitivity of 0, for b near MaxInt).
	k = min(k, (n-1)/b+1)
	// v_r = sum_{j < k, j b <= r} c[r - j b] by the running sums
	// v_r = c[r] + v_{r-b} - c[r - k b].
	v := make([]float64, n)
	sq := 0.0
	for r := 0; r < n; r++ {
		x := c[r]
		if r >= b {
			x += v[r-b]
		}
		if r/b >= k { // r >= k b, without overflow
			x -= c[r-k*b]
		}
		v[r] = x
		sq += x * x
	}
	return v, sq
}

// gramRows produces the rows of an n x n Gram matrix X = C^T C, in any
// order: it calls visit(i, row) once for each i with row i (row may be
// reused after visit returns).
type gramRows func(visit func(i int, row []float64))

// minSepBoundRows returns [MinSepBound] (the value, not squared) of the
// n x n Gram matrix that rows produces, for 1 <= b <= n and
// 1 <= k <= ceil(n/b), without forming X: O(n) memory and, for each row
// whose picks are dominated by the lattice (below), O(n) time instead of
// the O(n k) dynamic program. The k-1 picks of row i (besides i) lie at
// least b from i and from each other; on the left of i the q-th nearest is
// at most i - q b, so when |X_{i,i-qb}| is the largest |X_ij| over
// j <= i - q b for every q (as for rows that decrease away from the
// diagonal) the picks i - b, i - 2b, ... are the best on that side for
// every count, likewise on the right, and the best k-1 picks of both
// sides are the largest k-1 of the two non-increasing lattice sequences.
// A row without that property takes [MinSepBound]'s dynamic program.
func minSepBoundRows(n, b, k int, rows gramRows) float64 {
	v := make([]float64, n)
	var abs, bufL, bufR []float64
	rows(func(i int, row []float64) {
		v[i] = math.Abs(row[i])
		if k == 1 {
			return
		}
		left, okL := latticePicks(row, bufL[:0], i, -b, k-1)
		right, okR := latticePicks(row, bufR[:0], i, b, k-1)
		bufL, bufR = left, right
		if !okL || !okR {
			// best[c] for c = 0..k-1 picks on each side: the lattice's
			// prefix sums where it is the best, else the dynamic program.
			if abs == nil {
				abs = make([]float64, n)
			}
			for j, x := range row {
				abs[j] = math.Abs(x)
			}
			l, r := prefixBest(left, k-1), prefixBest(right, k-1)
			if !okL {
				l = atMostPicks(abs[:max(0, i-b+1)], b, k-1)
			}
			if !okR {
				r = atMostPicks(reversed(abs[min(n, i+b):]), b, k-1)
			}
			extra := 0.0
			for c1 := 0; c1 <= k-1; c1++ {
				extra = math.Max(extra, l[c1]+r[k-1-c1])
			}
			v[i] += extra
			return
		}
		// Merge the two non-increasing sequences: the largest k-1.
		extra := 0.0
		a, c := 0, 0
		for t := 0; t < k-1 && (a < len(left) || c < len(right)); t++ {
			if c >= len(right) || (a < len(left) && left[a] >= right[c]) {
				extra += left[a]
				a++
			} else {
				extra += right[c]
				c++
			}
		}
		v[i] += extra
	})
	return math.Sqrt(bestSeparated(v, b, k))
}

// prefixBest returns best[c], c = 0..m: the sum of the first min(c,
// len(vals)) of the non-increasing vals, the best c picks on a side whose
// lattice is the best.
func prefixBest(vals []float64, m int) []float64 {
	best := make([]float64, m+1)
	for c := 1; c <= m; c++ {
		best[c] = best[c-1]
		if c <= len(vals) {
			best[c] += vals[c-1]
		}
	}
	return best
}

// latticePicks returns |row| at i + q step, q = 1, 2, ... (at most m,
// inside [0, n)), nearest first, appended to out, and whether each is the
// largest of |row| over the positions at or beyond it (away from i). One
// pass from the far end towards i: O(n).
func latticePicks(row, out []float64, i, step, m int) ([]float64, bool) {
	b, dir, q := step, -1, 0 // dir: from the far end towards i
	if step < 0 {
		b, dir, q = -step, 1, min(m, i/-step)
	} else {
		q = min(m, (len(row)-1-i)/step)
	}
	if q == 0 {
		return out, true
	}
	last := i + q*step // the farthest lattice point used
	beyond := row[last+1:]
	if step < 0 {
		beyond = row[:last]
	}
	mx := 0.0
	// Beyond the farthest lattice point only the maximum counts.
	for _, v := range beyond {
		if a := math.Abs(v); a > mx {
			mx = a
		}
	}
	// From the farthest lattice point towards i, each lattice point
	// must be the largest so far.
	start := len(out)
	for j := last; j != i; j += dir {
		a := math.Abs(row[j])
		if (j-i)%b == 0 {
			if a < mx {
				return out, false
			}
			out = append(out, a)
		}
		if a > mx {
			mx = a
		}
	}
	slices.Reverse(out[start:])
	return out, true
}

// quasiSepGramRows produces the rows of X = C^T C for the lower-triangular
// quasiseparable C (see [linalg.QuasiSep]) in O(n K) time per row and
// O(n K + K^2) memory, without forming C. X's lower triangle is
// quasiseparable with C's transitions A and column generators Q and the
// row generators
//
//	P'_il = Diag_i P_il + A_il (Q_i^T W_i)_l,  W_i = sum_{t>i} (products) P_t P_t^T,
//
// by the backward recursion W_{i-1} = P_i P_i^T + A_i W_i A_i (that of
// [linalg.QuasiSep.ColNormsSq]; O(n K^2) once), since for i > j
// X_ij = Diag_i C_ij + sum_{t>i} C_ti C_tj and
// C_tj = sum_l P_tl (prod_{m=j+1}^{t-1} A_ml) Q_jl; the diagonal is
// Diag_i^2 + Q_i^T W_i Q_i. Row i is then two running products: left of
// i, X_ij = sum_l g_l Q_jl with g = P'_i, g_l <- g_l A_jl; right of i,
// X_ij = sum_l P'_jl f_l with f = Q_i, f_l <- f_l A_jl.
func quasiSepGramRows(c linalg.QuasiSep) gramRows {
	n, kk := c.N, c.K
	pp := make([]float64, n*kk) // P'
	diag := make([]float64, n)
	w := make([]float64, kk*kk) // W_i
	wq := make([]float64, kk)
	for i := n - 1; i >= 0; i-- {
		q, p, a := c.Q[i*kk:i*kk+kk], c.P[i*kk:i*kk+kk], c.A[i*kk:i*kk+kk]
		d := c.Diag[i] * c.Diag[i]
		for l := range wq {
			x := 0.0
			for k, qk := range q {
				x += qk * w[k*kk+l]
			}
			wq[l] = x
			d += x * q[l]
			pp[i*kk+l] = c.Diag[i]*p[l] + a[l]*x
		}
		diag[i] = d
		// W_{i-1} = P_i P_i^T + A_i W_i A_i.
		for k := range kk {
			for l := range kk {
				w[k*kk+l] = p[k]*p[l] + a[k]*a[l]*w[k*kk+l]
			}
		}
	}
	return func(visit func(i int, row []float64)) {
		x := make([]float64, n)
		g := make([]float64, kk)
		for i := 0; i < n; i++ {
			x[i] = diag[i]
			copy(g, pp[i*kk:i*kk+kk])
			for j := i - 1; j >= 0; j-- {
				q, a := c.Q[j*kk:j*kk+kk], c.A[j*kk:j*kk+kk]
				sum := 0.0
				for l, gl := range g {
					sum += gl * q[l]
					g[l] = gl * a[l]
				}
				x[j] = sum
			}
			copy(g, c.Q[i*kk:i*kk+kk])
			for j := i + 1; j < n; j++ {
				pj, a := pp[j*kk:j*kk+kk], c.A[j*kk:j*kk+kk]
				sum := 0.0
				for l, fl := range g {
					sum += pj[l] * fl
					g[l] = fl * a[l]
				}
				x[j] = sum
			}
			visit(i, x)
		}
	}
}

// quasiSepMinSep returns the sensitivity under the min-separation p of the
// quasiseparable C, as [SensitivityOf] gives it for the dense C (a
// quasiseparable C of rank K >= 1 is not banded): the largest column norm
// for one participation, else the dynamic-programming bound of
// [MinSepBound] over the rows of X ([minSepBoundRows]), O(n^2 K) time and
// O(n K) memory.
func quasiSepMinSep(c linalg.QuasiSep, p Participation) Sensitivity {
	n := c.N
	k := p.Participations(n)
	if k <= 1 {
		col := make([]float64, n)
		c.ColNormsSq(col)
		return Sensitivity{Value: math.Sqrt(slices.Max(col)), Exact: true, Rule: RuleColumnNorm}
	}
	return Sensitivity{Value: minSepBoundRows(n, min(p.B, n), k, quasiSepGramRows(c)), Rule: RuleMinSepBound}
}
