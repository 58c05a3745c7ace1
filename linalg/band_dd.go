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
// kernels' relative error, about u cond(M), is too large. They cost 4 to
// 7 times the float64 ones (measured at N = 10^5, K = 2).
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
// [SymBandDD.AddScaledInverseDiag] for order n and k off-diagonals: L's
// band and D in double-words, and K + 1 rows of Z's band.
func ScaledInverseDiagWork(n, k int) int { return 2*n*(k+1) + 2*n + 2*(k+1)*(k+1) }

// ldl factors M + diag(sigma v) (sigma v_i formed exactly; v nil stands
// for all ones) as L D L^T in double-word arithmetic without pivoting, L's
// strict lower band into (lh, ll) (the layout of Hi) and D into (dh, dl),
// and returns the number of pivots whose high part is not a positive
// normal number.
func (s SymBandDD) ldl(sigma float64, v []float64, lh, ll, dh, dl []float64) int {
	n, k := s.N, s.K
	w := k + 1
	bad := 0
	for i := 0; i < n; i++ {
		for j := max(0, i-k); j < i; j++ {
			sh, sl := s.Hi[i*w+i-j], s.Lo[i*w+i-j]
			for p := max(0, i-k); p < j; p++ {
				th, tl := ddfloat.Mul(lh[i*w+i-p], ll[i*w+i-p], dh[p], dl[p])
				th, tl = ddfloat.Mul(th, tl, lh[j*w+j-p], ll[j*w+j-p])
				sh, sl = ddfloat.Add(sh, sl, -th, -tl)
			}
			lh[i*w+i-j], ll[i*w+i-j] = ddfloat.Div(sh, sl, dh[j], dl[j])
		}
		ph, pl := sigma, 0.0
		if v != nil {
			ph, pl = ddfloat.TwoProd(sigma, v[i])
		}
		di, dil := ddfloat.Add(s.Hi[i*w], s.Lo[i*w], ph, pl)
		for p := max(0, i-k); p < i; p++ {
			a, al := lh[i*w+i-p], ll[i*w+i-p]
			th, tl := ddfloat.Mul(a, al, a, al)
			th, tl = ddfloat.Mul(th, tl, dh[p], dl[p])
			di, dil = ddfloat.Add(di, dil, -th, -tl)
		}
		if !(di >= 0x1p-1022) {
			bad++
		}
		dh[i], dl[i] = di, dil
	}
	return bad
}

// AddScaledInverseDiag adds weight v_i Y_ii to the double-word
// (accH[i], accL[i]) for every i, where Y = (M + sigma diag(v))^{-1}, M + sigma
// diag(v) positive definite, v > 0: the diagonal of
// (V^{-1/2} M V^{-1/2} + sigma I)^{-1}, V = diag(v), without forming the
// scaled matrix. It runs the band LDL^T factorization and the
// selected-inversion recurrences of Takahashi, Fagan and Chin (see
// [SymBand.ShiftedInverseDiag]) in double-word arithmetic and returns the
// number of pivots that are not positive normal numbers (0 when the
// shifted matrix is numerically positive definite; acc is then updated,
// and left unchanged otherwise). work must have length at least
// [ScaledInverseDiagWork](N, K). O(N K^2).
func (s SymBandDD) AddScaledInverseDiag(sigma float64, v []float64, weight float64, accH, accL, work []float64) int {
	n, k := s.N, s.K
	w := k + 1
	if len(v) < n || len(accH) < n || len(accL) < n || len(work) < ScaledInverseDiagWork(n, k) {
		panic("linalg: SymBandDD.AddScaledInverseDiag: short slice")
	}
	lh, ll, dh, dl, zh, zl := s.split(work)
	if bad := s.ldl(sigma, v, lh, ll, dh, dl); bad > 0 {
		return bad
	}
	// Z = (M + sigma V)^{-1}, from the last row up: Z[j][i], j >= i, is
	// held in row j of z at offset j - i, and the rows of z are a ring of
	// K + 1 (row r in slot r mod (K+1)): column i reads only rows i..i+K,
	// each entry written by an earlier column (as in
	// SymBand.ShiftedInverseBand), and row i's slot held row i + K + 1,
	// which no later column reads.
	row := func(r int) int { return (r % w) * w }
	for i := n - 1; i >= 0; i-- {
		top := min(n-1, i+k)
		for j := top; j > i; j-- {
			sh, sl := 0.0, 0.0
			for p := i + 1; p <= top; p++ {
				// Z[j][p] L[p][i]: Z[j][p] in row max(j, p).
				idx := row(j) + j - p
				if p > j {
					idx = row(p) + p - j
				}
				th, tl := ddfloat.Mul(zh[idx], zl[idx], lh[p*w+p-i], ll[p*w+p-i])
				sh, sl = ddfloat.Add(sh, sl, -th, -tl)
			}
			zh[row(j)+j-i], zl[row(j)+j-i] = sh, sl
		}
		sh, sl := ddfloat.Div(1, 0, dh[i], dl[i])
		for p := i + 1; p <= top; p++ {
			th, tl := ddfloat.Mul(lh[p*w+p-i], ll[p*w+p-i], zh[row(p)+p-i], zl[row(p)+p-i])
			sh, sl = ddfloat.Add(sh, sl, -th, -tl)
		}
		zh[row(i)], zl[row(i)] = sh, sl
		ph, pl := ddfloat.TwoProd(weight, v[i])
		th, tl := ddfloat.Mul(ph, pl, sh, sl)
		accH[i], accL[i] = ddfloat.Add(accH[i], accL[i], th, tl)
	}
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
	lh, ll, dh, dl, _, _ := s.split(work)
	return s.ldl(-x, v, lh, ll, dh, dl) == 0
}

// split cuts a work slice of [ScaledInverseDiagWork](N, K) into L's band,
// D and the ring of Z's rows, each as high and low parts.
func (s SymBandDD) split(work []float64) (lh, ll, dh, dl, zh, zl []float64) {
	n, w := s.N, s.K+1
	lh, ll = work[:n*w], work[n*w:2*n*w]
	dh, dl = work[2*n*w:2*n*w+n], work[2*n*w+n:2*n*w+2*n]
	z := work[2*n*w+2*n:]
	return lh, ll, dh, dl, z[:w*w], z[w*w : 2*w*w]
}
