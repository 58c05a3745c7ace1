package linalg

import (
	"fmt"

	"github.com/dpmf/dpmf/internal/ddfloat"
)

// SymBandDD is a symmetric band matrix of order N with K off-diagonals
// whose entries are double-words (package ddfloat: about 106 significant
// bits), in the lower band storage of [SymBand]: M[i][i-d] =
// Hi[i*(K+1)+d] + Lo[i*(K+1)+d] for d = 0..K.
//
// Its kernels run the band LDL^T factorization and the selected-inversion
// recurrences of [SymBand.ShiftedInverseDiag] in double-word arithmetic, so
// that their rounding is of order u^2 cond(M) instead of u cond(M)
// (u = 2^-53): what an ill-conditioned M formed exactly (such as L L^T for a
// band L with float64 entries, [GramBandDD]) needs where the float64
// kernels' relative error, about u cond(M), is too large. They cost 2.7
// times the float64 ones (one shift at N = 10^5, K = 2, CPU time,
// BenchmarkSymBandDDScaledInverseDiag; 4.4 times before their sums were
// compensated dot products normalized once, docs/solver.md).
type SymBandDD struct {
	N, K   int
	Hi, Lo []float64
}

// GramBandDD returns L L^T as a double-word band matrix, for the n x n
// lower-triangular band matrix L with k subdiagonals whose entry (i, p),
// 0 <= i - p <= k, is at(i, p): each product exact, each entry a sum of
// at most k + 1 of them within (k + 1) 3u^2 / (1 - 4u) of its exact value
// relatively to the sum of their magnitudes. It panics if n or k is
// negative.
func GramBandDD(n, k int, at func(i, p int) float64) SymBandDD {
	if n < 0 || k < 0 {
		panic(fmt.Sprintf("linalg: band matrix of order %d with %d off-diagonals", n, k))
	}
	w := k + 1
	g := SymBandDD{N: n, K: k, Hi: make([]float64, n*w), Lo: make([]float64, n*w)}
	for i := 0; i < n; i++ {
		for j := max(0, i-k); j <= i; j++ {
			sh, sl := 0.0, 0.0
			for p := max(0, i-k); p <= j; p++ {
				ph, pl := ddfloat.TwoProd(at(i, p), at(j, p))
				sh, sl = ddfloat.Add(sh, sl, ph, pl)
			}
			g.Hi[i*w+i-j], g.Lo[i*w+i-j] = sh, sl
		}
	}
	return g
}

// ScaledInverseDiagWork returns the length of the work slice of
// [SymBandDD.AddScaledInverseDiag], [SymBandDD.ShiftedInverseBlocks] and
// [SymBandDD.PositiveDefiniteAbove] for order n and k off-diagonals: L's
// band and D^{-1} in double-words, K + 1 rows of Z's band and one row of
// L D.
func ScaledInverseDiagWork(n, k int) int {
	return 2*n*(k+1) + 2*n + 2*(k+1)*(k+1) + 2*(k+1)
}

// ldl factors alpha M + sigma B as L D L^T in double-word arithmetic
// without pivoting, for the float64 symmetric band matrix B with at most K
// off-diagonals (its entries taken as exact; B.Data nil stands for the
// identity, B.K = 0 with Data = v for diag(v)): each sigma b_ij is formed
// exactly (an error-free product), alpha M_ij rounded once ([ddfloat.MulFloat],
// 3u^2; exact for alpha = 1). L's strict lower band goes into (lh, ll) (the
// layout of Hi) and D^{-1} into (ih, il); (uh, ul), of length K + 1, hold
// the current row of L D. It returns the number of pivots whose high part
// is not a positive normal number.
//
// Row i is the classical row-oriented LDL^T: with U = L D,
// U[i][j] = (alpha M + sigma B)[i][j] - sum_{p<j} U[i][p] L[j][p],
// L[i][j] = U[i][j] D_j^{-1}, D_i = (alpha M + sigma B)[i][i] -
// sum_{p<i} U[i][p] L[i][p]: one double-word product per term, where
// forming L[i][p] D_p L[j][p] takes two, and one division per row (the
// reciprocal pivot, which the selected inversion needs as well), where
// dividing by D_j takes one per entry. Its products with the reciprocal
// err by at most 5u^2 + 15u^2 + 56u^3 (Mul after Div), below the 2^-100 per
// operation that the callers' error model assumes.
func (s SymBandDD) ldl(alpha, sigma float64, b SymBand, lh, ll, ih, il, uh, ul []float64) int {
	n, k := s.N, s.K
	w, bw := k+1, b.K+1
	bad := 0
	for i := 0; i < n; i++ {
		lo := max(0, i-k)
		row := i * w
		for j := lo; j <= i; j++ {
			h, l := s.Hi[row+i-j], s.Lo[row+i-j]
			if alpha != 1 {
				h, l = ddfloat.MulFloat(h, l, alpha)
			}
			if d := i - j; d <= b.K {
				bij := 0.0
				if b.Data != nil {
					bij = b.Data[i*bw+d]
				} else if d == 0 {
					bij = 1
				}
				if bij != 0 {
					h, l = ddfloat.AddProd(h, l, sigma, 0, bij, 0)
				}
			}
			lj := j*w + j
			for p := lo; p < j; p++ {
				h, l = ddfloat.AddProd(h, l, -uh[p-lo], -ul[p-lo], lh[lj-p], ll[lj-p])
			}
			h, l = ddfloat.TwoSum(h, l)
			if j < i {
				uh[j-lo], ul[j-lo] = h, l
				lh[row+i-j], ll[row+i-j] = ddfloat.Mul(h, l, ih[j], il[j])
				continue
			}
			if !(h >= 0x1p-1022) {
				bad++
			}
			ih[i], il[i] = ddfloat.Recip(h, l)
		}
	}
	return bad
}

// selInv runs the selected-inversion recurrences of Takahashi, Fagan and
// Chin (see [SymBand.ShiftedInverseDiag]) in double-word arithmetic on the
// factors of ldl (L in (lh, ll), D^{-1} in (ih, il)), from the last column
// up: Z[j][i], j >= i, is held in row j of (zh, zl) at offset j - i, and
// the rows are a ring of K + 1 (row r in slot r mod (K+1)): column i reads
// only rows i..i+K, each entry written by an earlier column (as in
// SymBand.ShiftedInverseBand), and row i's slot held row i + K + 1, which
// no later column reads. With accH non-nil it adds weight v_i Z_ii to
// (accH[i], accL[i]); otherwise it writes Z[j][i] into
// (oh, ol)[j*blk + j - i] for every i <= j in the same diagonal block of
// order blk (blk - 1 <= K).
func (s SymBandDD) selInv(lh, ll, ih, il, zh, zl []float64, blk int, oh, ol []float64, weight float64, v, accH, accL []float64) {
	n, k := s.N, s.K
	w := k + 1
	// rs[d] is the offset of row i + d's slot, for the current column i.
	rs := make([]int, w)
	si := (n - 1) % w // slot of row i
	for i := n - 1; i >= 0; i, si = i-1, si-1 {
		if si < 0 {
			si = k
		}
		for d := range rs {
			if r := si + d; r < w {
				rs[d] = r * w
			} else {
				rs[d] = (r - w) * w
			}
		}
		top := min(n-1, i+k)
		for j := top; j > i; j-- {
			h, l := 0.0, 0.0
			rj := rs[j-i] + j
			// Z[j][p] L[p][i]: Z[j][p] in row j for p <= j, in row p
			// (as Z[p][j]) above.
			for p := i + 1; p <= j; p++ {
				h, l = ddfloat.AddProd(h, l, -zh[rj-p], -zl[rj-p], lh[p*w+p-i], ll[p*w+p-i])
			}
			for p := j + 1; p <= top; p++ {
				idx := rs[p-i] + p - j
				h, l = ddfloat.AddProd(h, l, -zh[idx], -zl[idx], lh[p*w+p-i], ll[p*w+p-i])
			}
			zh[rj-i], zl[rj-i] = ddfloat.TwoSum(h, l)
		}
		h, l := ih[i], il[i]
		for p := i + 1; p <= top; p++ {
			idx := rs[p-i] + p - i
			h, l = ddfloat.AddProd(h, l, -lh[p*w+p-i], -ll[p*w+p-i], zh[idx], zl[idx])
		}
		h, l = ddfloat.TwoSum(h, l)
		zh[rs[0]], zl[rs[0]] = h, l
		if accH != nil {
			ph, pl := ddfloat.TwoProd(weight, v[i])
			accH[i], accL[i] = ddfloat.AddProd(accH[i], accL[i], ph, pl, h, l)
			continue
		}
		for j := i; j <= min(top, (i/blk+1)*blk-1); j++ {
			idx := rs[j-i] + j - i
			oh[j*blk+j-i], ol[j*blk+j-i] = zh[idx], zl[idx]
		}
	}
}

// AddScaledInverseDiag adds weight v_i Y_ii to the sum accH[i] + accL[i]
// for every i, where Y = (M + sigma diag(v))^{-1}, M + sigma diag(v)
// positive definite, v > 0: the diagonal of
// (V^{-1/2} M V^{-1/2} + sigma I)^{-1}, V = diag(v), without forming the
// scaled matrix. It runs the band LDL^T factorization and the
// selected-inversion recurrences of Takahashi, Fagan and Chin (see
// [SymBand.ShiftedInverseDiag]) in double-word arithmetic and returns the
// number of pivots that are not positive normal numbers (0 when the
// shifted matrix is numerically positive definite; acc is then updated,
// and left unchanged otherwise). The pair (accH[i], accL[i]) is the
// unnormalized accumulator of [ddfloat.AddProd]: start it at zeros, add
// the shifts' terms, and read accH[i] + accL[i] (rounded once to float64,
// or normalized by ddfloat.TwoSum): m terms, all positive, are within
// (1.5 m (m + 1) + 12 m + 4) u^2 of their exact sum relatively. work must
// have length at least [ScaledInverseDiagWork](N, K). O(N K^2).
func (s SymBandDD) AddScaledInverseDiag(sigma float64, v []float64, weight float64, accH, accL, work []float64) int {
	n, k := s.N, s.K
	if len(v) < n || len(accH) < n || len(accL) < n || len(work) < ScaledInverseDiagWork(n, k) {
		panic("linalg: SymBandDD.AddScaledInverseDiag: short slice")
	}
	lh, ll, ih, il, zh, zl, uh, ul := s.split(work)
	if bad := s.ldl(1, sigma, SymBand{N: n, Data: v}, lh, ll, ih, il, uh, ul); bad > 0 {
		return bad
	}
	s.selInv(lh, ll, ih, il, zh, zl, 1, nil, nil, weight, v, accH, accL)
	return 0
}

// ShiftedInverseBlocks writes into (zh[j*blk+j-i], zl[j*blk+j-i]) the
// entry (j, i) of Z = (alpha M + sigma B)^{-1} for every i <= j in the same
// diagonal block of order blk (rows [q blk, (q+1) blk)), for the float64
// symmetric band matrix B with at most K off-diagonals (entries taken as
// exact; Data nil for the identity) and alpha M + sigma B positive
// definite, by the double-word LDL^T factorization and selected inversion
// of [SymBandDD.AddScaledInverseDiag] (sigma b_ij formed exactly, alpha M_ij
// rounded once to within 3u^2; alpha = 1 leaves M exact). It returns the
// number of pivots that are not positive normal numbers (zh and zl are
// then meaningless). blk must be at most K + 1; zh and zl must have length
// at least N blk, work at least [ScaledInverseDiagWork](N, K). O(N K^2).
func (s SymBandDD) ShiftedInverseBlocks(alpha, sigma float64, b SymBand, blk int, zh, zl, work []float64) int {
	n, k := s.N, s.K
	if blk < 1 || blk > k+1 || b.K > k || (b.Data != nil && len(b.Data) < n*(b.K+1)) {
		panic(fmt.Sprintf("linalg: SymBandDD.ShiftedInverseBlocks: blocks of order %d and B with %d off-diagonals for a band of %d", blk, b.K, k))
	}
	if len(zh) < n*blk || len(zl) < n*blk || len(work) < ScaledInverseDiagWork(n, k) {
		panic("linalg: SymBandDD.ShiftedInverseBlocks: short slice")
	}
	lh, ll, ih, il, rh, rl, uh, ul := s.split(work)
	if bad := s.ldl(alpha, sigma, b, lh, ll, ih, il, uh, ul); bad > 0 {
		return bad
	}
	s.selInv(lh, ll, ih, il, rh, rl, blk, zh, zl, 0, nil, nil, nil)
	return 0
}

// PositiveDefiniteAbove reports whether the double-word LDL^T
// factorization of M - x V, V = diag(v) (the identity for v nil), has only
// positive pivots: under the backward error model of
// [SymBandDD.AddScaledInverseDiag] (a perturbation of order
// u^2 || |L| |L|^T || for M = L L^T), M - x V is then positive
// semidefinite up to that perturbation, so lambda_min(V^{-1/2} M V^{-1/2})
// >= x up to it. work must have length at least
// [ScaledInverseDiagWork](N, K).
func (s SymBandDD) PositiveDefiniteAbove(x float64, v, work []float64) bool {
	n := s.N
	if len(work) < ScaledInverseDiagWork(n, s.K) || (v != nil && len(v) < n) {
		panic("linalg: SymBandDD.PositiveDefiniteAbove: short slice")
	}
	lh, ll, ih, il, _, _, uh, ul := s.split(work)
	return s.ldl(1, -x, SymBand{N: n, Data: v}, lh, ll, ih, il, uh, ul) == 0
}

// split cuts a work slice of [ScaledInverseDiagWork](N, K) into L's band,
// D^{-1}, the ring of Z's rows and a row of L D, each as high and low parts.
func (s SymBandDD) split(work []float64) (lh, ll, ih, il, zh, zl, uh, ul []float64) {
	n, w := s.N, s.K+1
	lh, ll = work[:n*w], work[n*w:2*n*w]
	ih, il = work[2*n*w:2*n*w+n], work[2*n*w+n:2*n*w+2*n]
	z := work[2*n*w+2*n:]
	return lh, ll, ih, il, z[:w*w], z[w*w : 2*w*w], z[2*w*w : 2*w*w+w], z[2*w*w+w : 2*w*w+2*w]
}

// InverseBandSquaredDDWork returns the length of the work slice of
// [SymBandDD.InverseBandSquaredRows] for order n and k off-diagonals: L's
// band and its derivative in the shift, D^{-1} and its derivative, all in
// double-words, a ring of K + 2 full rows of Z and of Z^2 (2K + 1 entries
// each) and a row and a column of scratch.
func InverseBandSquaredDDWork(n, k int) int {
	w, wr := k+1, 2*k+1
	return 4*n*w + 4*n + 4*(k+2)*wr + 8*w
}

// InverseBandSquaredRows runs the band LDL^T factorization of M and the
// selected-inversion recurrences of Takahashi, Fagan and Chin (see
// [SymBand.ShiftedInverseDiag]) with their derivatives in a shift of the
// diagonal carried along in forward mode, all in double-word arithmetic:
// it is [SymBand.InverseBandSquaredRows] with a rounding of order
// u^2 cond(M) instead of u cond(M), for the band of Z = M^{-1} and of
// Z^2 = -dZ/dsigma (at sigma = 0) where the float64 one's error is too
// large (docs/solver.md, "G in double-word arithmetic"). Each inner
// product is a compensated sum of double-word products ([ddfloat.AddProd],
// normalized once), each quotient one reciprocal of a pivot.
//
// The selected inversion runs from the last column up, and the rows of Z
// and Z^2 are kept in a ring of K + 2 full rows, so that the memory is
// O(N K): after column c is complete, visit(c, row) is called, where
// row(r) returns (zh, zl, z2h, z2l), row r of Z and of Z^2 as full rows
// (entry (r, q) at index K + q - r, high and low parts), for r in
// [c, min(N-1, c+K+1)], with the entries of columns q >= c set (those
// before c are not yet). Each row r >= c+K+1 is visited for the last
// time at column c = r - K - 1 (column c - 1 reuses its slot).
//
// It returns the number of pivots whose high part is not a positive normal
// number (0 when M is numerically positive definite; nothing is visited
// otherwise). work must have length at least [InverseBandSquaredDDWork](N,
// K). O(N K^2), with three double-word products for each term.
func (s SymBandDD) InverseBandSquaredRows(visit func(c int, row func(r int) (zh, zl, z2h, z2l []float64)), work []float64) int {
	n, k := s.N, s.K
	w, wr := k+1, 2*k+1
	if len(work) < InverseBandSquaredDDWork(n, k) || len(s.Hi) < n*w || len(s.Lo) < n*w {
		panic("linalg: SymBandDD.InverseBandSquaredRows: short slice")
	}
	nw := n * w
	// L[j][p] for p in [j-k, j) at j*w + p - j + k (rows reversed against
	// the band's layout, so that the factorization's inner products run
	// forwards), with its derivative in the shift.
	lh, ll, dlh, dll := work[:nw], work[nw:2*nw], work[2*nw:3*nw], work[3*nw:4*nw]
	work = work[4*nw:]
	ih, il, dih, dil := work[:n], work[n:2*n], work[2*n:3*n], work[3*n:4*n]
	work = work[4*n:]
	nr := k + 2
	ring := work[:4*nr*wr]
	work = work[4*nr*wr:]
	uh, ul, duh, dul := work[:w], work[w:2*w], work[2*w:3*w], work[3*w:4*w]
	ch, cl, dch, dcl := work[4*w:5*w], work[5*w:6*w], work[6*w:7*w], work[7*w:8*w]
	bad := 0
	// Row i: with U = L D, U[i][j] = M[i][j] - sum_{p<j} U[i][p] L[j][p],
	// L[i][j] = U[i][j] D_j^{-1}, D_i = U[i][i]; the derivatives follow by
	// the product rule, with dM/dsigma = I and d(D^{-1}) = -dD D^{-2}.
	for i := 0; i < n; i++ {
		lo := max(0, i-k)
		for j := lo; j <= i; j++ {
			h, l := s.Hi[i*w+i-j], s.Lo[i*w+i-j]
			dh, dl := 0.0, 0.0
			if j == i {
				dh = 1
			}
			lj := j*w - j + k
			for p := lo; p < j; p++ {
				a, al, da, dal := uh[p-lo], ul[p-lo], duh[p-lo], dul[p-lo]
				b, bl, db, dbl := lh[lj+p], ll[lj+p], dlh[lj+p], dll[lj+p]
				h, l = ddfloat.AddProd(h, l, -a, -al, b, bl)
				dh, dl = ddfloat.AddProd(dh, dl, -da, -dal, b, bl)
				dh, dl = ddfloat.AddProd(dh, dl, -a, -al, db, dbl)
			}
			h, l = ddfloat.TwoSum(h, l)
			dh, dl = ddfloat.TwoSum(dh, dl)
			if j < i {
				uh[j-lo], ul[j-lo], duh[j-lo], dul[j-lo] = h, l, dh, dl
				t := i*w - i + k + j
				lh[t], ll[t] = ddfloat.Mul(h, l, ih[j], il[j])
				ah, al := ddfloat.Mul(dh, dl, ih[j], il[j])
				bh, bl := ddfloat.Mul(h, l, dih[j], dil[j])
				dlh[t], dll[t] = ddfloat.Add(ah, al, bh, bl)
				continue
			}
			if !(h >= 0x1p-1022) {
				bad++
			}
			ih[i], il[i] = ddfloat.Recip(h, l)
			sh, sl := ddfloat.Mul(ih[i], il[i], ih[i], il[i])
			dih[i], dil[i] = ddfloat.Mul(-dh, -dl, sh, sl)
		}
	}
	if bad > 0 {
		return bad
	}
	slot := func(r int) int { return (r % nr) * wr }
	row := func(r int) (zh, zl, z2h, z2l []float64) {
		o := slot(r)
		return ring[o : o+wr], ring[nr*wr+o : nr*wr+o+wr], ring[2*nr*wr+o : 2*nr*wr+o+wr], ring[3*nr*wr+o : 3*nr*wr+o+wr]
	}
	// Column i, from the last: for j in (i, top], Z[j][i] = -sum_p Z[j][p]
	// L[p][i] over p in (i, top], and E = Z^2 = -dZ/dsigma follows
	// E[j][i] = sum_p (Z[j][p] dL[p][i] - E[j][p] L[p][i]); Z[i][i] =
	// D_i^{-1} - sum_p L[p][i] Z[i][p] and E[i][i] = -d(D_i^{-1}) +
	// sum_p (dL[p][i] Z[i][p] - L[p][i] E[i][p]).
	for i := n - 1; i >= 0; i-- {
		top := min(n-1, i+k)
		m := top - i
		for q := 0; q < m; q++ {
			p := i + 1 + q
			t := p*w - p + k + i
			ch[q], cl[q], dch[q], dcl[q] = lh[t], ll[t], dlh[t], dll[t]
		}
		izh, izl, iz2h, iz2l := row(i)
		for j := top; j > i; j-- {
			zh, zl, z2h, z2l := row(j)
			o := k + i + 1 - j
			h, l, eh, el := 0.0, 0.0, 0.0, 0.0
			for q := 0; q < m; q++ {
				a, al, e, ee := zh[o+q], zl[o+q], z2h[o+q], z2l[o+q]
				h, l = ddfloat.AddProd(h, l, -a, -al, ch[q], cl[q])
				eh, el = ddfloat.AddProd(eh, el, a, al, dch[q], dcl[q])
				eh, el = ddfloat.AddProd(eh, el, -e, -ee, ch[q], cl[q])
			}
			h, l = ddfloat.TwoSum(h, l)
			eh, el = ddfloat.TwoSum(eh, el)
			zh[k+i-j], zl[k+i-j], z2h[k+i-j], z2l[k+i-j] = h, l, eh, el
			izh[k+j-i], izl[k+j-i], iz2h[k+j-i], iz2l[k+j-i] = h, l, eh, el
		}
		h, l, eh, el := ih[i], il[i], -dih[i], -dil[i]
		for q := 0; q < m; q++ {
			a, al, e, ee := izh[k+1+q], izl[k+1+q], iz2h[k+1+q], iz2l[k+1+q]
			h, l = ddfloat.AddProd(h, l, -ch[q], -cl[q], a, al)
			eh, el = ddfloat.AddProd(eh, el, dch[q], dcl[q], a, al)
			eh, el = ddfloat.AddProd(eh, el, -ch[q], -cl[q], e, ee)
		}
		izh[k], izl[k] = ddfloat.TwoSum(h, l)
		iz2h[k], iz2l[k] = ddfloat.TwoSum(eh, el)
		visit(i, row)
	}
	return 0
}
