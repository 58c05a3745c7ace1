package linalg

import (
	"fmt"
	"math"

	"github.com/dpmf/dpmf/internal/ddfloat"
	"github.com/dpmf/dpmf/internal/par"
)

// SymBand is a symmetric band matrix of order N with K off-diagonals, kept
// in lower band storage: Data[i*(K+1)+d] = M[i][i-d] for d = 0..K (entries
// with i - d < 0 are ignored). It is the generic counterpart of
// [BidiagGram] for band widths above one; it works on formed entries, so
// its accuracy for ill-conditioned matrices is the usual u ||M||.
type SymBand struct {
	N, K int
	Data []float64
}

// NewSymBand returns a zero n x n symmetric band matrix with k off-diagonals.
// It panics if n or k is negative (a programmer error, as for make).
func NewSymBand(n, k int) SymBand {
	if n < 0 || k < 0 {
		panic(fmt.Sprintf("linalg: band matrix of order %d with %d off-diagonals", n, k))
	}
	return SymBand{N: n, K: k, Data: make([]float64, n*(k+1))}
}

// At returns M[i][j].
func (s SymBand) At(i, j int) float64 {
	if i < j {
		i, j = j, i
	}
	if i-j > s.K {
		return 0
	}
	return s.Data[i*(s.K+1)+i-j]
}

// Set sets M[i][j] and M[j][i] to v; |i - j| must be at most K.
func (s SymBand) Set(i, j int, v float64) {
	if i < j {
		i, j = j, i
	}
	if i-j > s.K {
		panic(fmt.Sprintf("linalg: entry (%d, %d) outside a band of width %d", i, j, s.K))
	}
	s.Data[i*(s.K+1)+i-j] = v
}

// ldl computes the band LDL^T factorization of M + shift I without pivoting
// into l (same layout as Data; the unit diagonal is not stored) and d, and
// returns the number of negative pivots and the number of pivots that are
// not positive normal numbers (negative, zero, subnormal or NaN: the
// inverse is then not representable). A pivot of magnitude below the
// smallest normal number is raised to [SymBand.pivotFloor], with the sign
// it was counted with (zero as positive): a perturbation of one diagonal
// entry by u (||M|| + |shift|), which keeps the inertia count valid for a
// shift that is not that close to an eigenvalue, and the multipliers and
// later pivots finite (a zero or subnormal pivot would give multipliers
// that overflow, and NaN after them). Where the square of a multiplier
// would overflow or underflow, its product with the pivot is formed first.
func (s SymBand) ldl(shift float64, l, d []float64) (negatives, notPositive int) {
	n, k := s.N, s.K
	w := k + 1
	const smallPivot = 0x1p-1022 // the smallest normal number
	floor := 0.0                 // pivotFloor's value, once needed
	for i := 0; i < n; i++ {
		// L[i][j] for j in [i-k, i): L[i][j] = (M[i][j] - sum_p L[i][p] d[p] L[j][p]) / d[j].
		for j := max(0, i-k); j < i; j++ {
			sum := s.Data[i*w+i-j]
			for p := max(0, i-k); p < j; p++ {
				sum -= l[i*w+i-p] * d[p] * l[j*w+j-p]
			}
			l[i*w+i-j] = sum / d[j]
		}
		di := s.Data[i*w] + shift
		for p := max(0, i-k); p < i; p++ {
			lp := l[i*w+i-p]
			sq := lp * lp
			if sq < 0x1p-1022 || sq > math.MaxFloat64 {
				// lp^2 underflowed or overflowed, unlike lp d_p (the
				// numerator of lp).
				di -= lp * (lp * d[p])
			} else {
				di -= sq * d[p]
			}
		}
		if !(di >= smallPivot) {
			notPositive++
		}
		// A pivot too small to divide by (below the smallest normal
		// number) is moved away from zero, to the floor, on the side it
		// was counted on, so that the count is the inertia of a nearby
		// matrix.
		if di < 0 {
			negatives++
			if di > -smallPivot {
				floor = s.pivotFloor(shift, floor)
				di = min(di, -floor)
			}
		} else if di < smallPivot {
			floor = s.pivotFloor(shift, floor)
			di = max(di, floor)
		}
		d[i] = di
	}
	return negatives, notPositive
}

// pivotFloor returns u (Gershgorin's bound on ||M|| + |shift|), the value
// to which [SymBand.ldl] raises a pivot too small to divide by, or 4 times
// the smallest subnormal where that is not finite and larger; floor is the
// value already computed for this shift (0 if none).
func (s SymBand) pivotFloor(shift, floor float64) float64 {
	if floor > 0 {
		return floor
	}
	return roundingFloor(s.Gershgorin(), shift)
}

// roundingFloor returns u (norm + |shift|), the size of rounding of a
// pivot of a matrix of that norm shifted by shift, or 4 times the smallest
// subnormal where that is not finite and larger: the value to which the
// inertia counts raise a pivot too small to divide by
// ([SymBand.pivotFloor], [BidiagGram.countPivot]).
func roundingFloor(norm, shift float64) float64 {
	tiny := math.SmallestNonzeroFloat64 * 4
	f := 0x1p-53 * (norm + math.Abs(shift))
	if !(f > tiny) || math.IsInf(f, 0) {
		return tiny
	}
	return f
}

// ShiftedInverseDiag writes the diagonal of (M + sigma I)^{-1} into dst, for
// M + sigma I positive definite, by the band LDL^T factorization and the
// selected-inversion recurrences of Takahashi, Fagan and Chin (1973):
// Z = (M + sigma I)^{-1} satisfies, for j in (i, i+K],
//
//	Z[j][i] = -sum_{p=i+1}^{i+K} Z[j][p] L[p][i],
//	Z[i][i] = 1/d_i - sum_{p=i+1}^{i+K} L[p][i] Z[p][i],
//
// which needs only the entries of Z within the band. work must have length
// at least 3 N (K+1). The cost is O(N K^2).
func (s SymBand) ShiftedInverseDiag(sigma float64, dst, work []float64) {
	n, k := s.N, s.K
	w := k + 1
	if len(dst) < n || len(work) < 3*n*w {
		panic("linalg: SymBand.ShiftedInverseDiag: short slice")
	}
	z := work[2*n*w : 3*n*w]
	s.ShiftedInverseBand(sigma, z, work[:2*n*w])
	for i := 0; i < n; i++ {
		dst[i] = z[i*w]
	}
}

// ShiftedInverseBand writes the entries of Z = (M + sigma I)^{-1} within
// the band into dst, in the layout of Data (dst[i*(K+1)+d] = Z[i][i-d]), for
// M + sigma I positive definite, by the recurrences of
// [SymBand.ShiftedInverseDiag]. It returns the number of pivots of the
// LDL^T factorization that are not positive normal numbers (negative, zero,
// subnormal or NaN): 0 when M + sigma I is numerically positive definite
// (dst is meaningless otherwise; a singular or NaN matrix is not reported
// as definite). work
// must have length at least 2 N (K+1). O(N K^2).
func (s SymBand) ShiftedInverseBand(sigma float64, dst, work []float64) int {
	n, k := s.N, s.K
	w := k + 1
	if len(dst) < n*w || len(work) < 2*n*w {
		panic("linalg: SymBand.ShiftedInverseBand: short slice")
	}
	z := dst[:n*w]
	l, d := work[:n*w], work[n*w:n*w+n]
	_, bad := s.ldl(sigma, l, d)
	// z holds Z in the same lower band layout: z[j*w + j-i] = Z[j][i].
	for i := n - 1; i >= 0; i-- {
		top := min(n-1, i+k)
		for j := top; j > i; j-- {
			sum := 0.0
			zj := z[j*w : j*w+w]
			for p := i + 1; p <= j; p++ {
				sum -= zj[j-p] * l[p*w+p-i]
			}
			for p := j + 1; p <= top; p++ {
				sum -= z[p*w+p-j] * l[p*w+p-i]
			}
			z[j*w+j-i] = sum
		}
		zii := 1 / d[i]
		for p := i + 1; p <= top; p++ {
			zii -= l[p*w+p-i] * z[p*w+p-i]
		}
		z[i*w] = zii
	}
	return bad
}

// AddShiftedInverse adds weight (M + sigma I)^{-1} to the upper triangle of
// the n x n row-major matrix dst (stride n), column by column from the band
// LDL^T factorization: O(N^2 K). work must have length at least
// N (K+1) + 2 N.
func (s SymBand) AddShiftedInverse(dst []float64, sigma, weight float64, work []float64) {
	n, k := s.N, s.K
	w := k + 1
	if len(dst) < n*n || len(work) < n*w+2*n {
		panic("linalg: SymBand.AddShiftedInverse: short slice")
	}
	l, d, x := work[:n*w], work[n*w:n*w+n], work[n*w+n:n*w+2*n]
	s.ldl(sigma, l, d)
	for j := 0; j < n; j++ {
		// Solve L y = e_j (y_i = 0 for i < j), then x = L^{-T} D^{-1} y.
		for i := j; i < n; i++ {
			v := 0.0
			if i == j {
				v = 1
			}
			for p := max(j, i-k); p < i; p++ {
				v -= l[i*w+i-p] * x[p]
			}
			x[i] = v
		}
		for i := j; i < n; i++ {
			x[i] /= d[i]
		}
		for i := n - 1; i >= j; i-- {
			v := x[i]
			for p := i + 1; p <= min(n-1, i+k); p++ {
				v -= l[p*w+p-i] * x[p]
			}
			x[i] = v
		}
		row := dst[j*n : j*n+n]
		for i := j; i < n; i++ {
			row[i] += weight * x[i]
		}
	}
}

// Gershgorin returns Gershgorin's upper bound on lambda_max(M), raised by a
// relative 1e-12 to cover rounding.
func (s SymBand) Gershgorin() float64 {
	n, k := s.N, s.K
	hi := 0.0
	for i := 0; i < n; i++ {
		r := 0.0
		for j := max(0, i-k); j <= min(n-1, i+k); j++ {
			r += math.Abs(s.At(i, j))
		}
		hi = math.Max(hi, r)
	}
	return hi * (1 + 1e-12)
}

// CountBelow returns the number of eigenvalues of M less than x (Sylvester's
// law of inertia on the LDL^T factorization of M - x I). work must have
// length at least N (K+1) + N.
func (s SymBand) CountBelow(x float64, work []float64) int {
	n, k := s.N, s.K
	neg, _ := s.ldl(-x, work[:n*(k+1)], work[n*(k+1):n*(k+1)+n])
	return neg
}

// Bounds returns lo <= lambda_min(M) and lambda_max(M) <= hi for a
// symmetric M: hi by Gershgorin, lo by bisection on the inertia of
// M - x I (Sylvester's law) to within a factor 1.01: the largest x found
// with no negative pivot, lowered by a relative 1e-8 or by the residual
// of that x's LDL^T factorization ([SymBand.ldlResidual]), whichever is
// more. The inertia count is that of M - x I + E with ||E|| of order
// (K+1) u ||M||, so without the second a singular or numerically singular
// M (lambda_min below about 1e8 (K+1) u ||M||) got a positive lo above
// lambda_min. guess (0 if none) starts the search. work must have
// length at least N (K+1) + N.
//
// lo is 0 when no positive bound exists in floating point: M not
// positive definite by more than its rounding (singular, numerically
// singular or indefinite), or entries that are not finite (hi is then NaN
// or +Inf). Callers must treat lo = 0 as a numerical breakdown. The search
// is bounded for every input.
func (s SymBand) Bounds(guess float64, work []float64) (lo, hi float64) {
	hi = s.Gershgorin()
	count := func(x float64) int { return s.CountBelow(x, work) }
	x := bisectLowestPoint(count, guess, hi)
	if !(x > 0) {
		return 0, hi
	}
	margin, ok := s.ldlResidual(-x, work)
	if lo = min(x*(1-1e-8), x-margin); !ok || !(lo > 0) {
		return 0, hi
	}
	return lo, hi
}

// ProvenAbove reports whether lambda_min(M) >= x is proven by the LDL^T
// factorization of M - y I at y = x / (1 - 1e-8), the relative margin of
// [SymBand.Bounds]: no negative pivot, and a residual
// ([SymBand.ldlResidual]) of at most y - x. False proves nothing (an
// eigenvalue below x, or one too near x for this factorization to tell).
// work must have length at least N (K+1) + N.
func (s SymBand) ProvenAbove(x float64, work []float64) bool {
	y := x / (1 - 1e-8)
	r, ok := s.ldlResidual(-y, work)
	return ok && r <= y-x
}

// ldlResidual factors M + shift I by [SymBand.ldl] into work (length at
// least N (K+1) + N) and returns an upper bound on ||R||_2, R = M + shift I
// - L D L^T for the computed factors L and D (the product taken exactly),
// with ok false where a pivot is negative or a value is not finite (the
// bound then says nothing). With every pivot positive, L D L^T is positive
// semidefinite, so lambda_min(M + shift I) >= -||R||_2 (Weyl).
//
// Each entry of R within the band (outside it M and L D L^T are zero) is
// formed in double-word arithmetic (package ddfloat: each product
// l_ip d_p exact, times l_jp within 3u^2, each sum within 3u^2 / (1 - 4u)
// of its exact value), so that its error is at most 8 (K+3) u^2 times
// |M_ij + shift [i = j]| plus the sum of the magnitudes of its terms, plus
// a few smallest subnormals for underflow in the products; ||R||_2 <=
// ||R||_inf (R is symmetric) is the largest row sum of these bounds, raised
// by a relative 1e-6 for the rounding of the sums in float64. A pivot the
// factorization raised to the floor is part of D and so of R. The residual
// is what the rounding of this factorization actually did, typically far
// below the a priori bound gamma_{2K+4} |L| |D| |L|^T (Higham, Accuracy and
// Stability of Numerical Algorithms, 2nd ed., Theorem 10.3) that a
// certificate would otherwise have to give away. It costs about N K^2 / 2
// double-word products: a few factorizations.
func (s SymBand) ldlResidual(shift float64, work []float64) (float64, bool) {
	n, k := s.N, s.K
	w := k + 1
	l, d := work[:n*w], work[n*w:n*w+n]
	if neg, _ := s.ldl(shift, l, d); neg > 0 {
		return 0, false
	}
	lAt := func(i, p int) float64 {
		if i == p {
			return 1
		}
		return l[i*w+i-p]
	}
	// entry returns a bound on |R_ij| for i >= j, i - j <= K.
	const u2 = 0x1p-106
	errScale := 8 * float64(k+3) * u2
	entry := func(i, j int) float64 {
		m := s.Data[i*w+i-j]
		rh, rl := m, 0.0
		mag := math.Abs(m)
		if i == j {
			rh, rl = ddfloat.TwoSum(m, shift)
			mag += math.Abs(shift)
		}
		for p := max(0, i-k); p <= j; p++ {
			ph, pl := ddfloat.TwoProd(lAt(i, p), d[p])
			th, tl := ddfloat.MulFloat(ph, pl, lAt(j, p))
			rh, rl = ddfloat.Add(rh, rl, -th, -tl)
			mag += math.Abs(th)
		}
		return math.Abs(rh) + math.Abs(rl) + errScale*mag + float64(4*(k+3))*math.SmallestNonzeroFloat64
	}
	// Each entry once, into the sums of its row and its column (R is
	// symmetric); row f's sum is complete once row f + K is done, so K+1
	// sums are open at a time (slot f mod (K+1)).
	sums := make([]float64, w)
	row := 0.0
	for i := 0; i < n; i++ {
		for j := max(0, i-k); j <= i; j++ {
			e := entry(i, j)
			sums[i%w] += e
			if j < i {
				sums[j%w] += e
			}
		}
		if f := i - k; f >= 0 {
			row = math.Max(row, sums[f%w])
			sums[f%w] = 0 // row i+1's slot
		}
	}
	for f := max(0, n-k); f < n; f++ {
		row = math.Max(row, sums[f%w])
	}
	e := row * (1 + 1e-6)
	return e, !math.IsNaN(e) && !math.IsInf(e, 0)
}

// InverseBandSquared writes the entries within the band of Z = M^{-1} into
// z and of Z^2 = M^{-2} into z2 (both in the layout of Data), for M
// positive definite: Z^2 = -dZ(sigma)/dsigma at sigma = 0 for
// Z(sigma) = (M + sigma I)^{-1}, so z2 is the derivative of the recurrences
// of [SymBand.ShiftedInverseDiag] (LDL^T and selected inversion) with
// respect to the shift, carried along in forward mode. It returns the
// number of pivots that are not positive normal numbers (negative, zero,
// subnormal or NaN; 0 when M is numerically positive definite; z and z2
// are meaningless otherwise).
// work must have length at least [InverseBandSquaredWork](N, K). O(N K^2), about three times
// [SymBand.ShiftedInverseBand]. [SymBand.InverseBandSquaredRows] gives the
// same entries as full rows.
func (s SymBand) InverseBandSquared(z, z2, work []float64) int {
	n, k := s.N, s.K
	w, wr := k+1, 2*k+1
	if len(z) < n*w || len(z2) < n*w || len(work) < InverseBandSquaredWork(n, k) {
		panic("linalg: SymBand.InverseBandSquared: short slice")
	}
	zr, z2r := work[:n*wr], work[n*wr:2*n*wr]
	neg := s.InverseBandSquaredRows(zr, z2r, work[2*n*wr:])
	for i := 0; i < n; i++ {
		for d := 0; d <= k && d <= i; d++ {
			z[i*w+d], z2[i*w+d] = zr[i*wr+k-d], z2r[i*wr+k-d]
		}
	}
	return neg
}

// InverseBandSquaredWork returns the length of the work slice that
// [SymBand.InverseBandSquared] needs for a matrix of order n with k
// off-diagonals.
func InverseBandSquaredWork(n, k int) int {
	return 2*n*(2*k+1) + InverseBandSquaredRowsWork(n, k)
}

// InverseBandSquaredRowsWork returns the length of the work slice that
// [SymBand.InverseBandSquaredRows] needs for a matrix of order n with k
// off-diagonals.
func InverseBandSquaredRowsWork(n, k int) int {
	wr := 2*k + 1
	if !splitBand(n, k) {
		return dualLDLWork(n, k)
	}
	// Both halves' factors (n + k rows in all), the rows of Z and Z^2 of
	// the reversed lower half, and seven k x k blocks for the separator.
	return dualLDLWork(n+k, k) + 2*n*wr + 7*k*k
}

// splitBand reports whether [SymBand.InverseBandSquaredRows] splits a
// matrix of order n with k off-diagonals at a separator (see there): a
// function of the shape only, so that the result does not depend on the
// number of cores.
func splitBand(n, k int) bool { return k > 0 && n >= 8*(k+1) }

// InverseBandSquaredRows is [SymBand.InverseBandSquared] with the entries
// of Z and Z^2 within the band written as full rows: zr[i*(2K+1) + K + j-i]
// = Z[i][j] for |i - j| <= K (entries with j outside [0, N) are not
// written), and z2r the same for Z^2. work must have length at least
// [InverseBandSquaredRowsWork](N, K).
//
// From N >= 8 (K+1) on, the matrix is split at a separator S of K rows in
// the middle: with the upper rows T eliminated first (from the top), the
// lower rows B next (from the bottom; T and B do not couple) and S last,
// the LDL^T factorizations of T and of B and, after the K x K Schur
// complement of S is inverted densely, the selected inversions of T and of
// B are independent, and run on two cores where two are available and the
// work (N K^2) is at least two grains of internal/par. The arithmetic
// depends only on N and K, not on the number of cores.
func (s SymBand) InverseBandSquaredRows(zr, z2r, work []float64) int {
	n, k := s.N, s.K
	w, wr := k+1, 2*k+1
	if len(zr) < n*wr || len(z2r) < n*wr || len(work) < InverseBandSquaredRowsWork(n, k) {
		panic("linalg: SymBand.InverseBandSquaredRows: short slice")
	}
	if !splitBand(n, k) {
		f := newDualLDL(n, k, work)
		neg := f.factor(s, false, n)
		f.selinv(zr, z2r, n-1)
		return neg
	}
	// T = [0, m), S = [m, m+k), B = [m+k, n). The upper part is the
	// leading block of order m+k of M (T then S); the lower part is the
	// trailing block of order n-m with its order reversed (B from the
	// bottom, then S from its last row), a band matrix too, which
	// [dualLDL.factor] reads from M.
	m := (n - k) / 2
	nt, nb := m+k, n-m
	up := SymBand{N: nt, K: k, Data: s.Data[:nt*w]}
	ft := newDualLDL(nt, k, work)
	work = work[dualLDLWork(nt, k):]
	fb := newDualLDL(nb, k, work)
	work = work[dualLDLWork(nb, k):]
	zb, z2b := work[:nb*wr], work[nb*wr:2*nb*wr]
	work = work[2*nb*wr:]
	sch, dsch := work[:k*k], work[k*k:2*k*k]
	zs, dzs, tmp := work[2*k*k:3*k*k], work[3*k*k:4*k*k], work[4*k*k:5*k*k]
	sb, dsb := work[5*k*k:6*k*k], work[6*k*k:7*k*k]
	var negT, negB int
	// Both halves cost about n k^2 / 2 multiply-adds each, and their
	// selected inversions twice that. Each half then adds up its
	// contribution to the Schur complement of S (T's into sch and dsch,
	// B's into sb and dsb, for a >= c), about 3 k^3 / 2 multiply-adds
	// each, on its own goroutine.
	cost := float64(n) * float64(k) * float64(k)
	par.Both(cost, func() {
		negT = ft.factor(up, false, m)
		for a := 0; a < k; a++ {
			for c := 0; c <= a; c++ {
				sch[a*k+c], dsch[a*k+c] = ft.schur(m+a, m+c, m)
			}
		}
	}, func() {
		negB = fb.factor(s, true, nb-k)
		for a := 0; a < k; a++ {
			for c := 0; c <= a; c++ {
				sb[a*k+c], dsb[a*k+c] = fb.schur(n-1-m-c, n-1-m-a, nb-k)
			}
		}
	})
	// The Schur complement of S, sch[a*k + c] for rows m+a, m+c: M_SS
	// less the contributions of T and of B, with its derivative in the
	// shift (the identity less theirs).
	for a := 0; a < k; a++ {
		for c := 0; c <= a; c++ {
			i, j := m+a, m+c
			v := s.Data[i*w+i-j] - sch[a*k+c] - sb[a*k+c]
			dv := -dsch[a*k+c] - dsb[a*k+c]
			if a == c {
				dv++
			}
			sch[a*k+c], sch[c*k+a] = v, v
			dsch[a*k+c], dsch[c*k+a] = dv, dv
		}
	}
	// B's contributions are added in: sb and dsb are free, and with tmp
	// they are the inverse's scratch.
	negS := denseSPDInverse(sch, zs, work[4*k*k:6*k*k], k)
	if negT+negB+negS > 0 {
		return negT + negB + negS
	}
	// The block S x S of M^{-2} = -dZ/dsigma: Z_SS dSch Z_SS, with
	// (dSch Z_SS)^T in tmp (Z_SS is stored symmetric, so its rows are its
	// columns).
	mulRowsT(tmp, dsch, zs, k, true)
	mulRowsT(dzs, zs, tmp, k, false)
	// Seed the rows of S in both parts, then run the two selected
	// inversions from their last eliminated row.
	for a := 0; a < k; a++ {
		for c := 0; c < k; c++ {
			i, j := m+a, m+c
			zr[i*wr+k+j-i], z2r[i*wr+k+j-i] = zs[a*k+c], dzs[a*k+c]
			ai, aj := n-1-i, n-1-j
			zb[ai*wr+k+aj-ai], z2b[ai*wr+k+aj-ai] = zs[a*k+c], dzs[a*k+c]
		}
	}
	par.Both(2*cost, func() { ft.selinv(zr, z2r, m-1) }, func() { fb.selinv(zb, z2b, nb-k-1) })
	// Row i >= m of Z is row n-1-i of the lower part's, reversed. The
	// copy, about a quarter of the lower part's selected inversion, runs
	// by chunks of rows on every core once both inversions are done: in
	// the lower part's goroutine it left the other core idle for that
	// long. It moves values and computes nothing.
	par.Range(n-m, bandCopyRows, float64(2*wr), func(r0, r1 int) {
		for i := m + r0; i < m+r1; i++ {
			a := n - 1 - i
			// The rows of S take only the columns in B.
			lo, hi := i-k, min(n-1, i+k)
			if i < m+k {
				lo = m + k
			}
			// zr[i*wr+k+j-i] = zb[a*wr+k+i-j] for j in [lo, hi].
			o, ob := i*wr+k-i, a*wr+k+i
			dst, dst2 := zr[o+lo:o+hi+1], z2r[o+lo:o+hi+1]
			src, src2 := zb[ob-hi:ob-lo+1], z2b[ob-hi:ob-lo+1]
			for t, e := 0, len(src)-1; t < len(dst); t, e = t+1, e-1 {
				dst[t], dst2[t] = src[e], src2[e]
			}
		}
	})
	return 0
}

// bandCopyRows is the number of rows in one chunk of the copy that ends
// [SymBand.InverseBandSquaredRows].
const bandCopyRows = 256

// mulRowsT writes the product P = a bt^T of the k x k row-major matrices
// a and bt into dst, P[i][c] = sum_e a[i][e] bt[c][e] (the sum in
// increasing e), at dst[i*k + c], or at dst[c*k + i] (P^T) when
// transpose is set. Both factors are read along their rows, and four
// entries of a row of P are summed side by side, each on its own.
func mulRowsT(dst, a, bt []float64, k int, transpose bool) {
	put := func(i, c int, v float64) {
		if transpose {
			dst[c*k+i] = v
		} else {
			dst[i*k+c] = v
		}
	}
	for i := 0; i < k; i++ {
		ar := a[i*k : i*k+k]
		c := 0
		for ; c+4 <= k; c += 4 {
			b0, b1 := bt[c*k:c*k+k], bt[(c+1)*k:(c+1)*k+k]
			b2, b3 := bt[(c+2)*k:(c+2)*k+k], bt[(c+3)*k:(c+3)*k+k]
			var v0, v1, v2, v3 float64
			for e, x := range ar {
				v0 += x * b0[e]
				v1 += x * b1[e]
				v2 += x * b2[e]
				v3 += x * b3[e]
			}
			put(i, c, v0)
			put(i, c+1, v1)
			put(i, c+2, v2)
			put(i, c+3, v3)
		}
		for ; c < k; c++ {
			br := bt[c*k : c*k+k]
			v := 0.0
			for e, x := range ar {
				v += x * br[e]
			}
			put(i, c, v)
		}
	}
}

// denseSPDInverse writes the inverse of the symmetric positive definite
// k x k matrix a (row major) into inv, by the Cholesky factorization
// and the inverse of the factor, and returns 1 if a is not numerically
// positive definite (a pivot below the smallest normal number or NaN; 0
// otherwise). tmp (length 2 k^2) holds the factor and its transpose, so
// that every inner product runs along rows.
func denseSPDInverse(a, inv, tmp []float64, k int) int {
	// a = R^T R with R upper triangular, r[i*k + j] = R[i][j] (j >= i),
	// and rt[j*k + i] = R[i][j].
	r, rt := tmp[:k*k], tmp[k*k:2*k*k]
	for i := 0; i < k; i++ {
		ri := rt[i*k : i*k+i]
		for j := i; j < k; j++ {
			v := a[i*k+j]
			for p, x := range rt[j*k : j*k+i] {
				v -= ri[p] * x
			}
			if j == i {
				if !(v >= 0x1p-1022) {
					return 1
				}
				v = math.Sqrt(v)
			} else {
				v /= r[i*k+i]
			}
			r[i*k+j], rt[j*k+i] = v, v
		}
	}
	// U = R^{-1} (upper triangular) into the lower triangle of inv by
	// columns, inv[j*k + i] = U[i][j], then inv = U U^T.
	for j := 0; j < k; j++ {
		inv[j*k+j] = 1 / r[j*k+j]
		for i := j - 1; i >= 0; i-- {
			v := 0.0
			for p := i + 1; p <= j; p++ {
				v += r[i*k+p] * inv[j*k+p]
			}
			inv[j*k+i] = -v / r[i*k+i]
		}
	}
	// (U U^T)[i][c] = sum_{p >= max(i, c)} U[i][p] U[c][p], with the rows
	// of U in ut (over r, no longer needed): ut[i*k + p] = U[i][p].
	ut := r
	for i := 0; i < k; i++ {
		for p := i; p < k; p++ {
			ut[i*k+p] = inv[p*k+i]
		}
	}
	for i := 0; i < k; i++ {
		ui := ut[i*k+i : i*k+k]
		for c := 0; c <= i; c++ {
			v := 0.0
			for p, x := range ut[c*k+i : c*k+k] {
				v += ui[p] * x
			}
			inv[i*k+c], inv[c*k+i] = v, v
		}
	}
	return 0
}

// dualLDL holds the band LDL^T factors of M + sigma I at sigma = 0 and
// their derivatives in sigma, in the layouts of
// [SymBand.InverseBandSquaredRows]: rows of L in natural order, each after
// bandPad zeros, ln[f.at(i, p)] = L[i][p] with at(i, p) = i ws + bandPad +
// k-(i-p) and ws = k+1+bandPad, with its derivative; and minus the
// columns of L, nlc[j*cw + i-j-1] = -L[i][j] for i in (j, j+k], followed
// by zeros up to cw = k+3 entries a column, with dnlc = +dL[i][j]/dsigma
// (the sign that gives -dZ/dsigma in [dualLDL.selinv]). A row of U = L D
// is formed in ub when needed (u_jp = L[j][p] d_p).
type dualLDL struct {
	n, k, ws, cw int
	ln, dln      []float64
	nlc, dnlc    []float64
	d, dd        []float64
	// Scratch: a row of U (k entries); a column of M (k); the inner products of a column of
	// the factorization (k); the first columns of nlc with zero columns
	// before them (4 cw + 3, selinv's first group); selinv's inner
	// products of a group (4 k) and its results by row i (4 k).
	ub, dub     []float64
	mcol        []float64
	sums, dsums []float64
	head, dhead []float64
	part, dpart []float64
	col, dcol   []float64
}

// bandPad is the number of zeros stored before each row of the factors of
// [dualLDL]: a block of four rows of L in the factorization starts at its
// first row's first column, up to three columns before the others' first
// ([dualBlocks]).
const bandPad = 3

// dualLDLWork returns the length of the work slice of [newDualLDL].
func dualLDLWork(n, k int) int { return 2*n*(k+1+bandPad) + 2*n*(k+3) + 2*n }

// newDualLDL returns the factors of a matrix of order n with k
// off-diagonals in work (length [dualLDLWork](n, k)), with the zeros
// before the rows of L set.
func newDualLDL(n, k int, work []float64) *dualLDL {
	w, ws, cw := k+1, k+1+bandPad, k+3
	m, mc := n*ws, n*cw
	f := &dualLDL{n: n, k: k, ws: ws, cw: cw,
		ln: work[:m], dln: work[m : 2*m],
		nlc: work[2*m : 2*m+mc], dnlc: work[2*m+mc : 2*m+2*mc],
		d: work[2*m+2*mc : 2*m+2*mc+n], dd: work[2*m+2*mc+n : 2*m+2*mc+2*n],
		ub: make([]float64, w), dub: make([]float64, w), mcol: make([]float64, k),
		sums: make([]float64, w), dsums: make([]float64, w),
		head: make([]float64, 4*cw+3), dhead: make([]float64, 4*cw+3),
		part: make([]float64, 4*k), dpart: make([]float64, 4*k),
		col: make([]float64, 4*k), dcol: make([]float64, 4*k),
	}
	for i := 0; i < n; i++ {
		clear(f.ln[i*ws : i*ws+bandPad])
		clear(f.dln[i*ws : i*ws+bandPad])
	}
	return f
}

// at returns the offset of L[i][p] in f.ln, for p in [i-k, i).
func (f *dualLDL) at(i, p int) int { return i*f.ws + bandPad + f.k - i + p }

// urow returns u_jp = L[j][p] d_p for p in [lo, hi) (lo >= j-k, hi <= j)
// and its derivative, in f.ub and f.dub.
func (f *dualLDL) urow(j, lo, hi int) (u, du []float64) {
	o := f.at(j, lo)
	l, dl := f.ln[o:o+hi-lo], f.dln[o:o+hi-lo]
	d, dd := f.d[lo:hi], f.dd[lo:hi]
	u, du = f.ub[:hi-lo], f.dub[:hi-lo]
	for q := range u {
		u[q], du[q] = l[q]*d[q], dl[q]*d[q]+l[q]*dd[q]
	}
	return u, du
}

// schur returns sum_{p < jEnd} L[i][p] d_p L[j][p] for j <= i and its
// derivative, the contribution of the first jEnd eliminated columns to
// the Schur complement of the rows after them.
func (f *dualLDL) schur(i, j, jEnd int) (float64, float64) {
	lo := max(0, i-f.k)
	if lo >= jEnd {
		return 0, 0
	}
	oi := f.at(i, lo)
	c := jEnd - lo
	u, du := f.urow(j, lo, jEnd)
	return dualDot(f.ln[oi:oi+c], f.dln[oi:oi+c], u, du)
}

// factor computes the columns [0, jEnd) of the band LDL^T factorization
// of s (order f.n; with rev, of the trailing block of order f.n of s in
// reversed order, whose column j below the diagonal is row s.N-1-j of s)
// and their derivatives in the shift, and returns the number of pivots
// among them that are not positive normal numbers (negative, zero,
// subnormal or NaN). Each inner
// product runs over contiguous, equally ordered slices and carries its derivative along
// ([dualDot]); whole columns go to the assembly in one call, in blocks of
// four rows that share the loads of U ([dualBlocks]). (Values and
// derivatives in two goroutines, the values ahead, was measured no faster
// on two cores: the loops are bound by their loads, which the fused form
// shares.)
func (f *dualLDL) factor(s SymBand, rev bool, jEnd int) int {
	n, k, ws, cw := f.n, f.k, f.ws, f.cw
	n0 := s.N - 1
	w := k + 1
	ln, dln, d, dd := f.ln, f.dln, f.d, f.dd
	sums, dsums := f.sums, f.dsums
	tiny := math.SmallestNonzeroFloat64 * 4
	notPositive := 0
	// d_j = M[j][j] - sum_{p<j} L[j][p] u_jp, and for i in (j, j+k],
	// L[i][j] = (M[i][j] - sum_{p<j} L[i][p] u_jp) / d_j.
	for j := 0; j < jEnd; j++ {
		lo := max(0, j-k)
		u, du := f.urow(j, lo, j) // u[p-lo] = u_jp
		off, end := f.at(j, lo), f.at(j, j)
		sj, dsj := dualDot(ln[off:end], dln[off:end], u, du)
		// M[j][j], and M's column j below it, mc[q] = M[j+1+q][j]: a
		// row of s, reversed.
		top := min(n-1, j+k)
		mjj, mc := s.Data[j*w], f.mcol[:top-j]
		if rev {
			o := (n0 - j) * w
			mjj, mc = s.Data[o], s.Data[o+1:o+1+top-j]
		} else {
			for q := range mc {
				mc[q] = s.Data[(j+1+q)*w+q+1]
			}
		}
		dj, ddj := mjj-sj, 1-dsj
		if !(dj >= 0x1p-1022) { // below the smallest normal number, 1/dj overflows
			notPositive++
		}
		if math.Abs(dj) < tiny {
			dj = tiny
		}
		d[j], dd[j] = dj, ddj
		if j >= k && top > j {
			// Away from the first rows, row i = j+1+r of L pairs its
			// entries from p = i-k to j-1 with row j of U. A block of rows
			// r = 4c..4c+3 runs from p = j+1+4c-k, its first row's first
			// column, where the others read the zeros before their rows:
			// at that column, row r is at f.at(j+1, j+1-k) + r (ws-1) + 4c
			// in ln, and row j of U at u[1 + 4c].
			a0 := f.at(j+1, j+1-k)
			dualBlocks(ln[a0:], dln[a0:], u[1:], du[1:], ws-1, 4, k-1, sums[:top-j], dsums[:top-j])
		} else {
			for i := j + 1; i <= top; i++ {
				loi := max(0, i-k)
				c := j - loi
				oi := f.at(i, loi)
				sums[i-j-1], dsums[i-j-1] = dualDot(ln[oi:oi+c], dln[oi:oi+c], u[loi-lo:], du[loi-lo:])
			}
		}
		// One division for the column, not two for each row.
		rj := 1 / dj
		nlc, dnlc := f.nlc[j*cw:(j+1)*cw], f.dnlc[j*cw:(j+1)*cw]
		for i := j + 1; i <= top; i++ {
			lij := (mc[i-j-1] - sums[i-j-1]) * rj
			dlij := (-dsums[i-j-1] - lij*ddj) * rj
			t := f.at(i, j)
			ln[t], dln[t] = lij, dlij
			nlc[i-j-1], dnlc[i-j-1] = -lij, dlij
		}
		clear(nlc[top-j:])
		clear(dnlc[top-j:])
	}
	return notPositive
}

// selinvRows is the number of rows of Z that [dualLDL.selinv] passes to
// the assembly at a time.
const selinvRows = 16

// selinv runs the selected inversion and minus its derivative in the
// shift for the rows iStart, iStart-1, ..., 0, writing the full rows of Z
// and of E = -dZ/dsigma (= Z^2 at sigma = 0) into zr and z2r; the rows
// after iStart must be there already (none when iStart = n-1). For j in
// (i, top], Z[j][i] = -sum_{p in (i, top]} Z[j][p] L[p][i], an inner
// product of row j of Z (zr[j*wr + k + p-j]) with minus column i of L,
// and Z[i][i] = 1/d_i - sum_{p in (i, top]} L[p][i] Z[i][p]; E follows
// the same recurrences with dL in place of -dL (nlc, dnlc) and dd_i/d_i^2
// in place of -dd_i/d_i^2.
//
// The rows go in groups of four, i0, i0-1, i0-2, i0-3 (fewer at the end),
// so that the rows of Z, which do not fit in the first-level cache (the
// loop is bound by their loads from the second level), are read once for
// four rows i instead of once for each: the rows j > i0 are complete from
// column i0+1 on, and their inner products over the columns p > i0 with
// the four columns of L (copied by [dualLDL.factor]) are one pass of
// [dualRows4]. Then, for each row j, the columns p in (i, i0] (at most
// three) are added for the four rows i in turn, and the four results
// written into row j together; last come the rows j in (i, i0] of the
// group itself, as whole inner products.
func (f *dualLDL) selinv(zr, z2r []float64, iStart int) {
	n, k, cw := f.n, f.k, f.cw
	wr := 2*k + 1
	d, dd, part, dpart := f.d, f.dd, f.part, f.dpart
	var col, dcol [4][]float64
	for s := range col {
		col[s], dcol[s] = f.col[s*k:(s+1)*k], f.dcol[s*k:(s+1)*k]
	}
	for i0 := iStart; i0 >= 0; i0 -= 4 {
		rows := min(4, i0+1)
		m0 := min(n-1, i0+k) - i0
		// For i = i0-s and the rows j = i0+1+r in (i0, top], the inner
		// products sum_{p in (i0, top]} Z[j][p] (-L[p][i]) go to
		// part[4(r-r0) + 3-s] (r0 the chunk's first row): row j of Z at column
		// i0+1 is at zr[(i0+1)*wr + k + (j-i0-1)(wr-1)], and minus column
		// i of L from p = i0+1 at nlc[i*cw + s] = nlc[(i0-3)*cw + 3 +
		// (3-s)(cw-1)]; the zeros after each column of nlc end the sums
		// of the rows i < i0 at their last column. (Where j > i+k the sum
		// is not needed.) For i0 < 3 the columns i < 0 are zeros, in a
		// copy.
		var zii, dzii [4]float64
		var tops [4]int
		for s := 0; s < rows; s++ {
			i := i0 - s
			zii[s], dzii[s] = 1/d[i], dd[i]/(d[i]*d[i])
			tops[s] = min(n-1, i+k)
		}
		// c[s][q] = -L[i0-s+1+q][i0-s] for q < s.
		var c, dc [4][3]float64
		for s := 1; s < rows; s++ {
			for q := 0; q < s; q++ {
				c[s][q], dc[s][q] = f.nlc[(i0-s)*cw+q], f.dnlc[(i0-s)*cw+q]
			}
		}
		b, db := f.nlc, f.dnlc
		o := (i0-3)*cw + 3
		if i0 < 3 {
			b, db = f.head, f.dhead
			clear(b)
			clear(db)
			for x := 3 - i0; x < 4; x++ {
				i := i0 - 3 + x
				copy(b[x*cw:(x+1)*cw], f.nlc[i*cw:(i+1)*cw])
				copy(db[x*cw:(x+1)*cw], f.dnlc[i*cw:(i+1)*cw])
			}
			o = 3
		}
		// Sixteen rows j at a time, so that they are still in the
		// first-level cache when the results are written into them.
		for r0 := 0; r0 < m0; r0 += selinvRows {
			r1 := min(m0, r0+selinvRows)
			a := (i0+1)*wr + k + r0*(wr-1)
			dualRows4(zr[a:], z2r[a:], b[o:], db[o:], wr-1, cw-1, 0, m0, 0, part[:4*(r1-r0)], dpart[:4*(r1-r0)])
			// The rows j in (i0, top] for the four rows i = i0-s at once:
			// Z[j][i] = part + sum_{p in (i, i0]} Z[j][p] (-L[p][i]), with
			// Z[j][p] the values just computed for the rows i before,
			// written into row j (four adjacent entries) and kept in
			// col[s] for row i.
			r := r0
			if rows == 4 {
				// All four rows i need row j up to j = tops[3].
				c10, c20, c21, c30, c31, c32 := c[1][0], c[2][0], c[2][1], c[3][0], c[3][1], c[3][2]
				d10, d20, d21, d30, d31, d32 := dc[1][0], dc[2][0], dc[2][1], dc[3][0], dc[3][1], dc[3][2]
				for ; r < min(r1, tops[3]-i0); r++ {
					pr, dpr := part[4*(r-r0):4*(r-r0)+4], dpart[4*(r-r0):4*(r-r0)+4]
					v0, dv0 := pr[3], dpr[3]
					v1 := pr[2] + v0*c10
					dv1 := dpr[2] + dv0*c10 + v0*d10
					v2 := pr[1] + v1*c20 + v0*c21
					dv2 := dpr[1] + dv1*c20 + v1*d20 + dv0*c21 + v0*d21
					v3 := pr[0] + v2*c30 + v1*c31 + v0*c32
					dv3 := dpr[0] + dv2*c30 + v2*d30 + dv1*c31 + v1*d31 + dv0*c32 + v0*d32
					j := i0 + 1 + r
					o := j*wr + k + i0 - 3 - j
					zj, z2j := zr[o:o+4], z2r[o:o+4]
					zj[0], zj[1], zj[2], zj[3] = v3, v2, v1, v0
					z2j[0], z2j[1], z2j[2], z2j[3] = dv3, dv2, dv1, dv0
					col[0][r], col[1][r], col[2][r], col[3][r] = v0, v1, v2, v3
					dcol[0][r], dcol[1][r], dcol[2][r], dcol[3][r] = dv0, dv1, dv2, dv3
				}
			}
			for ; r < r1; r++ {
				j := i0 + 1 + r
				pr, dpr := part[4*(r-r0):4*(r-r0)+4], dpart[4*(r-r0):4*(r-r0)+4]
				var v, dv [4]float64
				for s := 0; s < rows && j <= tops[s]; s++ {
					x, dx := pr[3-s], dpr[3-s]
					for q := 0; q < s; q++ {
						x += v[s-1-q] * c[s][q]
						dx += dv[s-1-q]*c[s][q] + v[s-1-q]*dc[s][q]
					}
					v[s], dv[s] = x, dx
					i := i0 - s
					zr[j*wr+k+i-j], z2r[j*wr+k+i-j] = x, dx
					col[s][r], dcol[s][r] = x, dx
				}
			}
		}
		// Row i from column i0+1 on, and its share of Z[i][i].
		for s := 0; s < rows; s++ {
			i := i0 - s
			cnt := tops[s] - i0
			if cnt <= 0 {
				continue
			}
			o := i*wr + k + i0 + 1 - i
			copy(zr[o:o+cnt], col[s][:cnt])
			copy(z2r[o:o+cnt], dcol[s][:cnt])
			v, dv := dualDot(col[s][:cnt], dcol[s][:cnt], f.nlc[i*cw+s:i*cw+s+cnt], f.dnlc[i*cw+s:i*cw+s+cnt])
			zii[s] += v
			dzii[s] += dv
		}
		// Then the rows i in order, with the rows j in (i, i0] of the
		// group, whose entries are now all there: their whole inner
		// products.
		for s := 0; s < rows; s++ {
			i := i0 - s
			top := tops[s]
			cs, dcs := f.nlc[i*cw:i*cw+top-i], f.dnlc[i*cw:i*cw+top-i]
			for j := i + 1; j <= min(i0, top); j++ {
				o := j*wr + k + i + 1 - j
				v, dv := dualDot(zr[o:o+top-i], z2r[o:o+top-i], cs, dcs)
				zr[j*wr+k+i-j], z2r[j*wr+k+i-j] = v, dv
				zr[i*wr+k+j-i], z2r[i*wr+k+j-i] = v, dv
				zii[s] += v * cs[j-i-1]
				dzii[s] += dv*cs[j-i-1] + v*dcs[j-i-1]
			}
			zr[i*wr+k], z2r[i*wr+k] = zii[s], dzii[s]
		}
	}
}

// dualDotGo is [dualDot] in Go, with two accumulators for each sum.
func dualDotGo(a, da, b, db []float64) (s, ds float64) {
	n := len(a)
	da, b, db = da[:n], b[:n], db[:n]
	var s0, s1, t0, t1 float64
	t := 0
	for ; t+1 < n; t += 2 {
		s0 += a[t] * b[t]
		s1 += a[t+1] * b[t+1]
		t0 += da[t]*b[t] + a[t]*db[t]
		t1 += da[t+1]*b[t+1] + a[t+1]*db[t+1]
	}
	if t < n {
		s0 += a[t] * b[t]
		t0 += da[t]*b[t] + a[t]*db[t]
	}
	return s0 + s1, t0 + t1
}
