package factorize

import (
	"fmt"
	"math"
	"math/bits"

	"gonum.org/v1/gonum/floats"
)

// rowNormWindowLimit is the most float64s the covariance window of a
// banded or quasiseparable operator's row norms may hold (1 GiB): a
// banded C with more than about 11585 bands is refused rather than
// allocated.
const rowNormWindowLimit = 1 << 27

// OperatorRowNorms returns, for every round r of op, the Euclidean norm of
// row r of its noise operator M (M = C^{-1} for square causal factors, and
// A^{-1} B in general; see [Operator]): round r's noise vector is row r of
// M Z, so with the entries of Z independent N(0, V^2) each coordinate of
// round r's vector is N(0, (V ||row r of M||)^2). Multiplied by the noise
// std V of a calibration (plan.Record's NoiseStd), it answers "how much
// noise does round r get?"; mechanism.RoundStds does the multiplication
// for a mechanism.
//
// No dense factor is formed. The norms come from op's own structure, in
// O(R) memory for the result plus at most the covariance of the stream's
// state (O(b^2) for b bands, O(K^2) for K state vectors): 1 for the identity; 1 + t for the
// binary tree, t the number of trailing zeros of r + 1 (the new node and
// the t buffered ones it closes); prefix sums of the squared coefficients
// for the banded inverse (O(R)), the Toeplitz (O(R)) and the BLT (O(R k),
// k buffers) operators; a covariance recursion over the state for the
// banded C (O(R b^2) time and O(b^2) memory, b bands; more than about
// 11585 bands is an error) and the quasiseparable C (O(R K^2), K state
// vectors): the covariance of the next state given that of the current
// one, as the stream's forward substitution maps it; the stored rows for
// the dense operator (O(R m)). An operator of another package is streamed
// on the unit noise rows (Z = I, so that round r's vector is row r of M):
// O(m) vectors of dimension m, an error where they would exceed 1 GiB.
//
// A norm within the float64 range is returned as it is even where its
// square is not (coefficients assembled by hand near 2^700 or 2^-700).
// It is an error if op is nil (a loss-only result) or nil BLT parameters,
// or if a norm is not finite (coefficients assembled by hand that
// overflow).
func OperatorRowNorms(op Operator) ([]float64, error) {
	if err := checkRowNormOperator(op); err != nil {
		return nil, err
	}
	out := make([]float64, op.Rounds())
	err := rowNorms(op, op.Rounds(), func(r int, v float64) { out[r] = v })
	if err != nil {
		return nil, err
	}
	for r, v := range out {
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return nil, fmt.Errorf("factorize: row %d of the noise operator %s has norm %v, want a finite norm", r, op, v)
		}
	}
	return out, nil
}

// OperatorRowNorm returns the Euclidean norm of row r of op's noise
// operator M, for one round r in [0, R): see [OperatorRowNorms], whose
// value at r it is. The recursions (banded, quasiseparable, BLT, Toeplitz,
// banded inverse) and a foreign operator's stream run over rounds 0..r
// only; a dense operator is built whole first, as for every use.
func OperatorRowNorm(op Operator, r int) (float64, error) {
	if err := checkRowNormOperator(op); err != nil {
		return 0, err
	}
	if r < 0 || r >= op.Rounds() {
		return 0, &ParamError{Param: "round", Value: r, Want: fmt.Sprintf("a round in [0, %d)", op.Rounds())}
	}
	v := math.NaN()
	if err := rowNorms(op, r+1, func(i int, norm float64) {
		if i == r {
			v = norm
		}
	}); err != nil {
		return 0, err
	}
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("factorize: row %d of the noise operator %s has norm %v, want a finite norm", r, op, v)
	}
	return v, nil
}

// checkRowNormOperator refuses a nil op, and nil BLT parameters (whose
// Rounds would dereference nil).
func checkRowNormOperator(op Operator) error {
	if op == nil {
		return &ParamError{Param: "operator", Want: "a factorization's noise operator (a loss-only result has none)"}
	}
	if p, ok := op.(*BLTParams); ok && p == nil {
		return &ParamError{Param: "operator", Value: "nil BLT parameters", Want: "a factorization's noise operator"}
	}
	return nil
}

// rowNorms calls emit(r, ||row r of M||) for r = 0, ..., n-1, in order,
// n <= op.Rounds(). A norm within the float64 range is returned as such
// even where its square is not (coefficients scaled by 2^700 or 2^-700,
// as a form or factors assembled by hand may be): sums of squares are
// taken of coefficients brought near 1 by a power of two (scaleExponent),
// or by gonum's scaled norm, and the power is put back on the norm.
// Before, a row of norm 2^-700 was reported as 0 and one of norm 2^700
// as +Inf.
func rowNorms(op Operator, n int, emit func(r int, norm float64)) error {
	switch o := op.(type) {
	case identityOp:
		for r := 0; r < n; r++ {
			emit(r, 1)
		}
	case treeOp:
		for r := 0; r < n; r++ {
			emit(r, math.Sqrt(float64(1+bits.TrailingZeros(uint(r+1)))))
		}
	case bandedOp:
		return bandedRowNorms(o, n, emit)
	case *BLTParams:
		if o == nil || len(o.Lambdas) != len(o.Weights) || len(o.Scale) < n {
			return &ParamError{Param: "operator", Value: "BLT parameters with inconsistent lengths", Want: "as many decay rates as weights and a scale per round"}
		}
		// d_0 = 1, d_k = sum_i w_i lambda_i^(k-1); pow[i] = lambda_i^(k-1).
		// The scales multiply the norm of d_0..d_r, not its square.
		pow := make([]float64, len(o.Weights))
		for i := range pow {
			pow[i] = 1
		}
		sum := 0.0
		for r := 0; r < n; r++ {
			d := 1.0
			if r > 0 {
				d = 0
				for i, w := range o.Weights {
					d += w * pow[i]
					pow[i] *= o.Lambdas[i]
				}
			}
			sum += d * d
			emit(r, math.Abs(o.Scale[r])*math.Sqrt(sum))
		}
	case bandInverseOp:
		e := scaleExponent(maxAbs(o.u))
		sum := 0.0
		for r := 0; r < n; r++ {
			if r < len(o.u) {
				u := math.Ldexp(o.u[r], -e)
				sum += u * u
			}
			emit(r, math.Ldexp(math.Sqrt(sum), e))
		}
	case quasiSepOp:
		return quasiSepRowNorms(o.c.P, o.c.A, o.c.Q, o.c.Diag, o.c.K, n, emit)
	case toeplitzOp:
		// Row r is u_{r-j} / s_r: the norm of u_0..u_r over |s_r|.
		e := scaleExponent(maxAbs(o.u))
		sum := 0.0
		for r := 0; r < n; r++ {
			u := math.Ldexp(o.u[r], -e)
			sum += u * u
			emit(r, scaledQuotient(math.Sqrt(sum), e, math.Abs(o.s[r])))
		}
	case *denseOp:
		if o.build(); o.err != nil {
			return o.err
		}
		var js []int
		var cs []float64
		for r := 0; r < n; r++ {
			js, cs = o.lin.row(r, js[:0], cs[:0])
			emit(r, floats.Norm(cs, 2))
		}
	default:
		return streamedRowNorms(op, n, emit)
	}
	return nil
}

// maxAbs returns the largest |v| of s (0 for none).
func maxAbs(s []float64) float64 {
	m := 0.0
	for _, v := range s {
		m = math.Max(m, math.Abs(v))
	}
	return m
}

// scaledQuotient returns x 2^e / d (d > 0) without the overflow or
// underflow of an intermediate where the result is in range.
func scaledQuotient(x float64, e int, d float64) float64 {
	if q := x / d; e == 0 && q >= 0x1p-1022 && q <= math.MaxFloat64 {
		return q // in range as it is: the common case
	}
	_, de := math.Frexp(d)
	return math.Ldexp(x/math.Ldexp(d, -de), e-de)
}

// bandedRowNorms is rowNorms for a banded C. With y = C^{-1} z and
// z white, y_r = (z_r - sum_{k=1}^{b-1} c_k y_{r-k}) / d_r (c_k =
// C[r][r-k], d_r = C[r][r]), and z_r is independent of the past outputs,
// so with S the covariance of the last b-1 outputs
//
//	Var(y_r) = (1 + sum_{k,j} c_k c_j S[r-k][r-j]) / d_r^2,
//	Cov(y_r, y_{r-j}) = -(1 / d_r) sum_k c_k S[r-k][r-j],
//
// and Var(y_r) is ||row r of C^{-1}||^2. S is held in a circular window of
// (b-1)^2 entries, indexed by round mod b-1. C's entries are taken times
// 2^-e, e = scaleExponent of the largest (0 within [2^-400, 2^400]): that
// C' = 2^-e C has C'^{-1} = 2^e C^{-1}, and the norms are put back by
// 2^-e, so that a C scaled far from 1 keeps its variances in range.
func bandedRowNorms(o bandedOp, n int, emit func(r int, norm float64)) error {
	nb := o.bands - 1
	if float64(nb)*float64(nb) > rowNormWindowLimit {
		return &ParamError{Param: "operator", Value: o.String(), Want: fmt.Sprintf("at most %d bands for its row norms (a covariance window of (b-1)^2 float64s, at most 1 GiB)", int(math.Sqrt(rowNormWindowLimit))+1)}
	}
	big := maxAbs(o.diag[:n])
	for _, c := range o.sub[:n] {
		big = math.Max(big, maxAbs(c))
	}
	e := scaleExponent(big)
	var scaled []float64 // this row's sub, times 2^-e
	if e != 0 {
		scaled = make([]float64, nb)
	}
	s := make([]float64, nb*nb)
	cross := make([]float64, nb+1) // cross[j] = Cov(y_r, y_{r-j})
	for r := 0; r < n; r++ {
		c := o.sub[r] // c[k-1] = C[r][r-k]
		d := o.diag[r]
		if e != 0 {
			for k, v := range c {
				scaled[k] = math.Ldexp(v, -e)
			}
			c, d = scaled[:len(c)], math.Ldexp(d, -e)
		}
		q := 0.0
		for j := 1; j <= len(c) && j <= nb; j++ {
			row := s[((r-j)%nb)*nb:]
			t := 0.0
			for k, ck := range c {
				if ck != 0 {
					t += ck * row[(r-k-1)%nb]
				}
			}
			cross[j] = -t / d
			q += c[j-1] * t
		}
		v := (1 + q) / (d * d)
		emit(r, math.Ldexp(math.Sqrt(v), -e))
		if nb == 0 {
			continue
		}
		// Round r takes the slot of round r - nb, which leaves the window.
		i := r % nb
		for j := 1; j < nb && j <= len(c); j++ {
			x := cross[j]
			s[i*nb+(r-j)%nb] = x
			s[((r-j)%nb)*nb+i] = x
		}
		s[i*nb+i] = v
	}
	return nil
}

// quasiSepRowNorms is rowNorms for a quasiseparable C of order K (the
// generators of [linalg.QuasiSep]). The stream's forward substitution is
// x_r = (z_r - p_r^T h_r) / c_r, h_{r+1} = a_r h_r + q_r x_r (a_r diagonal),
// and h_r depends on z_0..z_{r-1} only, so with Sigma the covariance of h_r
//
//	Var(x_r) = (1 + p_r^T Sigma p_r) / c_r^2,   g = Cov(h_r, x_r) = -Sigma p_r / c_r,
//	Sigma' = a Sigma a + a g q^T + q g^T a + Var(x_r) q q^T,
//
// and Var(x_r) is ||row r of C^{-1}||^2: O(K^2) per round. C is taken
// times 2^-e (p_r and c_r), e = scaleExponent of its largest diagonal
// entry, and the norms put back by 2^-e, as for the banded C.
func quasiSepRowNorms(p, a, q, diag []float64, k, n int, emit func(r int, norm float64)) error {
	if float64(k)*float64(k) > rowNormWindowLimit {
		return &ParamError{Param: "operator", Value: fmt.Sprintf("semiseparable(K=%d)", k), Want: "an order whose K x K state covariance fits in 1 GiB"}
	}
	e := scaleExponent(maxAbs(diag[:n]))
	var scaled []float64 // p_r times 2^-e
	if e != 0 {
		scaled = make([]float64, k)
	}
	sig := make([]float64, k*k)
	g := make([]float64, k)
	for r := 0; r < n; r++ {
		pr, ar, qr := p[r*k:r*k+k], a[r*k:r*k+k], q[r*k:r*k+k]
		c := diag[r]
		if e != 0 {
			for i, v := range pr {
				scaled[i] = math.Ldexp(v, -e)
			}
			pr, c = scaled, math.Ldexp(c, -e)
		}
		quad := 0.0
		for s := 0; s < k; s++ {
			t := 0.0
			row := sig[s*k : s*k+k]
			for u, pu := range pr {
				t += row[u] * pu
			}
			g[s] = -t / c
			quad += pr[s] * t
		}
		v := (1 + quad) / (c * c)
		emit(r, math.Ldexp(math.Sqrt(v), -e))
		for s := 0; s < k; s++ {
			row := sig[s*k : s*k+k]
			for u := range row {
				row[u] = ar[s]*row[u]*ar[u] + ar[s]*g[s]*qr[u] + qr[s]*g[u]*ar[u] + v*qr[s]*qr[u]
			}
		}
	}
	return nil
}

// streamedRowNorms is rowNorms for an operator of another package: it
// streams op on the unit noise rows, Z = I (m x m), so that round r's
// vector of dimension m is row r of M.
func streamedRowNorms(op Operator, n int, emit func(r int, norm float64)) error {
	m := op.NoiseRows()
	mem := op.Memory()
	if need := float64(m) * float64(mem.States+3); need > rowNormWindowLimit {
		return &ParamError{Param: "operator", Value: op.String(), Want: fmt.Sprintf("an operator of package factorize, or one whose %d noise rows and %d state vectors of dimension %d fit in 1 GiB, for its row norms", m, mem.States, m)}
	}
	if m < 1 {
		return &ParamError{Param: "operator", Value: op.String(), Want: "at least one noise row"}
	}
	st := op.NewState(m)
	src := &unitRows{past: make([]float64, m), scratch: make([]float64, m), hot: -1}
	row := make([]float64, m)
	for r := 0; r < n; r++ {
		st.Prepare(r)
		st.Block(src, r, 0, row)
		emit(r, floats.Norm(row, 2))
	}
	return nil
}

// unitRows is the [NoiseSource] of Z = I: noise row j is e_j.
type unitRows struct {
	past, scratch []float64
	hot           int // the entry of past set to 1, or -1
}

func (u *unitRows) Fill(j, lo int, dst []float64) {
	clear(dst)
	if j >= lo && j < lo+len(dst) {
		dst[j-lo] = 1
	}
}

func (u *unitRows) Past(j, lo, n int) []float64 {
	if u.hot >= 0 {
		u.past[u.hot] = 0
		u.hot = -1
	}
	out := u.past[:n]
	if j >= lo && j < lo+n {
		u.hot = j - lo
		out[u.hot] = 1
	}
	return out
}

func (u *unitRows) Scratch(n int) []float64 { return u.scratch[:n] }
