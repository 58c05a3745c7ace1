package linalg

import (
	"fmt"
	"math"
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
// returns the number of negative pivots. A zero pivot is replaced by a tiny
// one, which keeps the inertia count valid for a shift that is not an
// eigenvalue.
func (s SymBand) ldl(shift float64, l, d []float64) (negatives int) {
	n, k := s.N, s.K
	w := k + 1
	tiny := math.SmallestNonzeroFloat64 * 4
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
			di -= lp * lp * d[p]
		}
		if di < 0 {
			negatives++
		}
		if math.Abs(di) < tiny {
			di = tiny
		}
		d[i] = di
	}
	return negatives
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
	s.selectedInverse(sigma, z, work[:2*n*w])
	for i := 0; i < n; i++ {
		dst[i] = z[i*w]
	}
}

// ShiftedInverseBand writes the entries of Z = (M + sigma I)^{-1} within
// the band into dst, in the layout of Data (dst[i*(K+1)+d] = Z[i][i-d]), for
// M + sigma I positive definite, by the recurrences of
// [SymBand.ShiftedInverseDiag]. It returns the number of negative
// pivots of the LDL^T factorization: 0 when M + sigma I is numerically
// positive definite (dst is meaningless otherwise). work must have length
// at least 2 N (K+1). O(N K^2).
func (s SymBand) ShiftedInverseBand(sigma float64, dst, work []float64) int {
	n, k := s.N, s.K
	w := k + 1
	if len(dst) < n*w || len(work) < 2*n*w {
		panic("linalg: SymBand.ShiftedInverseBand: short slice")
	}
	return s.selectedInverse(sigma, dst[:n*w], work)
}

// selectedInverse writes the band of (M + sigma I)^{-1} into z (layout of
// Data) using work (length 2 N (K+1)) for the factors, and returns the
// number of non-positive pivots.
func (s SymBand) selectedInverse(sigma float64, z, work []float64) int {
	n, k := s.N, s.K
	w := k + 1
	l, d := work[:n*w], work[n*w:n*w+n]
	bad := s.ldl(sigma, l, d)
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
	return s.ldl(-x, work[:n*(k+1)], work[n*(k+1):n*(k+1)+n])
}

// Bounds returns lo <= lambda_min(M) and lambda_max(M) <= hi for a positive
// definite M: hi by Gershgorin, lo by bisection on the inertia of
// M - x I (Sylvester's law) to within a factor 1.01, lowered by a relative
// 1e-8. guess (0 if none) starts the search. work must have length at least
// N (K+1) + N.
// As for [BidiagGram.Bounds], lo is 0 when no positive bound exists in
// floating point; the search is bounded for every input.
func (s SymBand) Bounds(guess float64, work []float64) (lo, hi float64) {
	hi = s.Gershgorin()
	count := func(x float64) int { return s.CountBelow(x, work) }
	return bisectLowest(count, guess, hi), hi
}

// InverseBandSquared writes the entries within the band of Z = M^{-1} into
// z and of Z^2 = M^{-2} into z2 (both in the layout of Data), for M
// positive definite: Z^2 = -dZ(sigma)/dsigma at sigma = 0 for
// Z(sigma) = (M + sigma I)^{-1}, so z2 is the derivative of the recurrences
// of [SymBand.ShiftedInverseDiag] (LDL^T and selected inversion) with
// respect to the shift, carried along in forward mode. It returns the
// number of negative pivots (0 when M is numerically positive definite; z
// and z2 are meaningless otherwise). work must have length at least
// [InverseBandSquaredWork](N, K). O(N K^2), about three times
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
func InverseBandSquaredRowsWork(n, k int) int { return 4*n*(k+1) + 2*n }

// InverseBandSquaredRows is [SymBand.InverseBandSquared] with the entries
// of Z and Z^2 within the band written as full rows: zr[i*(2K+1) + K + j-i]
// = Z[i][j] for |i - j| <= K (entries with j outside [0, N) are not
// written), and z2r the same for Z^2. work must have length at least
// [InverseBandSquaredRowsWork](N, K).
func (s SymBand) InverseBandSquaredRows(zr, z2r, work []float64) int {
	n, k := s.N, s.K
	w, wr := k+1, 2*k+1
	if len(zr) < n*wr || len(z2r) < n*wr || len(work) < InverseBandSquaredRowsWork(n, k) {
		panic("linalg: SymBand.InverseBandSquaredRows: short slice")
	}
	// Each inner product runs over contiguous, equally ordered slices and
	// carries its derivative along ([dualDot]): rows of L in natural
	// order, ln[i*w + k-(i-p)] = L[i][p], and of U = L D,
	// un[i*w + k-(i-p)] = L[i][p] d_p, with their derivatives; the full rows
	// of Z; and column i of L. Whole columns go to the assembly in one call
	// ([dualBatch]). (Values and derivatives in two goroutines,
	// the values ahead, was measured no faster on two cores: the loops are
	// bound by their loads, which the fused form shares.)
	ln, dln := work[:n*w], work[n*w:2*n*w]
	un, dun := work[2*n*w:3*n*w], work[3*n*w:4*n*w]
	d, dd := work[4*n*w:4*n*w+n], work[4*n*w+n:4*n*w+2*n]
	tiny := math.SmallestNonzeroFloat64 * 4
	negatives := 0
	lc, dlc := make([]float64, w), make([]float64, w)
	sums, dsums := make([]float64, w), make([]float64, w)
	// LDL^T of M + sigma I and its derivative in sigma at sigma = 0, by
	// columns: d_j = M[j][j] - sum_{p<j} L[j][p] u_jp, and for i in
	// (j, j+k], L[i][j] = (M[i][j] - sum_{p<j} L[i][p] u_jp) / d_j.
	for j := 0; j < n; j++ {
		off := j*w + k - j + max(0, j-k)
		sj, dsj := dualDot(ln[off:j*w+k], dln[off:j*w+k], un[off:j*w+k], dun[off:j*w+k])
		dj, ddj := s.Data[j*w]-sj, 1-dsj
		if dj < 0 {
			negatives++
		}
		if math.Abs(dj) < tiny {
			dj = tiny
		}
		d[j], dd[j] = dj, ddj
		top := min(n-1, j+k)
		if j >= k && top > j {
			// Away from the first rows, row i = j+1+r of L starts at
			// ln[i*w] and pairs its first k-1-r entries with row j of U
			// from p = i-k: one batch for the column.
			dualBatch(ln[(j+1)*w:], dln[(j+1)*w:], un[j*w+1:], dun[j*w+1:], w, 1, k-1, -1, sums[:top-j], dsums[:top-j])
		} else {
			for i := j + 1; i <= top; i++ {
				loi := max(0, i-k)
				c := j - loi
				oi, oj := i*w+k-i+loi, j*w+k-j+loi
				sums[i-j-1], dsums[i-j-1] = dualDot(ln[oi:oi+c], dln[oi:oi+c], un[oj:oj+c], dun[oj:oj+c])
			}
		}
		for i := j + 1; i <= top; i++ {
			lij := (s.Data[i*w+i-j] - sums[i-j-1]) / dj
			dlij := (-dsums[i-j-1] - lij*ddj) / dj
			t := i*w + k - i + j
			ln[t], dln[t] = lij, dlij
			un[t], dun[t] = lij*dj, dlij*dj+lij*ddj
		}
	}
	// Selected inversion and its derivative, from the last column: for j
	// in (i, top], Z[j][i] = -sum_{p in (i, top]} Z[j][p] L[p][i], an
	// inner product of row j of Z (zr[j*wr + k + p-j]) with column i of L
	// (lc[p-i-1]).
	for i := n - 1; i >= 0; i-- {
		top := min(n-1, i+k)
		m := top - i
		for q := 0; q < m; q++ {
			p := i + 1 + q
			lc[q], dlc[q] = ln[p*w+k-p+i], dln[p*w+k-p+i]
		}
		if m > 0 {
			// Rows j = i+1 .. top of Z from p = i+1 start at zr[(i+1)*wr + k]
			// and follow each other at a stride of wr - 1; the results go
			// to row i (zr[i*wr + k + j-i]), which none of them reads.
			o := i*wr + k + 1
			zri, z2ri := zr[o:o+m], z2r[o:o+m]
			dualBatch(zr[(i+1)*wr+k:], z2r[(i+1)*wr+k:], lc, dlc, wr-1, 0, m, 0, zri, z2ri)
			for q := range zri {
				j := i + 1 + q
				zri[q], z2ri[q] = -zri[q], -z2ri[q]
				zr[j*wr+k+i-j], z2r[j*wr+k+i-j] = zri[q], z2ri[q]
			}
		}
		// Z[i][i] = 1/d_i - sum_{p in (i, top]} L[p][i] Z[i][p].
		o := i*wr + k + 1
		s0, ds0 := dualDot(zr[o:o+m], z2r[o:o+m], lc[:m], dlc[:m])
		zr[i*wr+k] = 1/d[i] - s0
		z2r[i*wr+k] = -dd[i]/(d[i]*d[i]) - ds0
	}
	// M^{-2} = -dZ/dsigma.
	for i := 0; i < n; i++ {
		row := z2r[i*wr+k-min(i, k) : i*wr+k+min(n-1-i, k)+1]
		for t := range row {
			row[t] = -row[t]
		}
	}
	return negatives
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
