//go:build bandkold && linux && amd64 && !purego

package linalg

// The band kernel as it was before the blocks of four (commit 3c8691c:
// one row of inner products at a time, U stored, the columns of L
// gathered by the selected inversion), to time the new one against it in
// one process and to compare their results:
//
//	go test -tags bandkold -run OldNew -bench BandKernelOldNew -benchtime 40x -cpu 1 ./linalg/

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/dpmf/dpmf/internal/par"
)

func oldInverseBandSquaredRowsWork(n, k int) int {
	w, wr := k+1, 2*k+1
	if !splitBand(n, k) {
		return 4*n*w + 2*n
	}
	return 4*(n+k)*w + 2*(n+k) + n*w + 2*n*wr + 5*k*k
}

// oldInverseBandSquaredRows is the old [SymBand.InverseBandSquaredRows].
func oldInverseBandSquaredRows(s SymBand, zr, z2r, work []float64) int {
	n, k := s.N, s.K
	w, wr := k+1, 2*k+1
	if len(zr) < n*wr || len(z2r) < n*wr || len(work) < oldInverseBandSquaredRowsWork(n, k) {
		panic("short slice")
	}
	if !splitBand(n, k) {
		f := newOldDualLDL(n, k, work)
		neg := f.factor(s, n)
		f.selinv(zr, z2r, n-1)
		negateRows(z2r, n, k, 0, n, 0, n)
		return neg
	}
	// T = [0, m), S = [m, m+k), B = [m+k, n). The upper part is the
	// leading block of order m+k of M (T then S); the lower part is the
	// trailing block of order n-m with its order reversed (B from the
	// bottom, then S from its last row), a band matrix too.
	m := (n - k) / 2
	nt, nb := m+k, n-m
	up := SymBand{N: nt, K: k, Data: s.Data[:nt*w]}
	ft := newOldDualLDL(nt, k, work)
	work = work[4*nt*w+2*nt:]
	fb := newOldDualLDL(nb, k, work)
	work = work[4*nb*w+2*nb:]
	low := SymBand{N: nb, K: k, Data: work[:nb*w]}
	work = work[nb*w:]
	zb, z2b := work[:nb*wr], work[nb*wr:2*nb*wr]
	work = work[2*nb*wr:]
	sch, dsch := work[:k*k], work[k*k:2*k*k]
	zs, dzs, tmp := work[2*k*k:3*k*k], work[3*k*k:4*k*k], work[4*k*k:5*k*k]
	var negT, negB int
	// Both halves cost about n k^2 / 2 multiply-adds each, and their
	// selected inversions twice that.
	cost := float64(n) * float64(k) * float64(k)
	par.Both(cost, func() { negT = ft.factor(up, m) }, func() {
		// low[a][a-d] = M[i][i+d] with i = n-1-a.
		for a := 0; a < nb; a++ {
			i := n - 1 - a
			row := low.Data[a*w : a*w+w]
			for d := 0; d <= k && d <= a; d++ {
				row[d] = s.Data[(i+d)*w+d]
			}
		}
		negB = fb.factor(low, nb-k)
	})
	// The Schur complement of S, sch[a*k + c] for rows m+a, m+c: M_SS
	// less the contributions of T and of B, with its derivative in the
	// shift (the identity less theirs).
	for a := 0; a < k; a++ {
		for c := 0; c <= a; c++ {
			i, j := m+a, m+c
			st, dst := ft.schur(i, j, m)
			sb, dsb := fb.schur(n-1-j, n-1-i, nb-k)
			v := s.Data[i*w+i-j] - st - sb
			dv := -dst - dsb
			if a == c {
				dv++
			}
			sch[a*k+c], sch[c*k+a] = v, v
			dsch[a*k+c], dsch[c*k+a] = dv, dv
		}
	}
	negS := denseSPDInverse(sch, zs, tmp, k)
	if negT+negB+negS > 0 {
		return negT + negB + negS
	}
	// dZ_SS/dsigma = -Z_SS dSch Z_SS.
	for a := 0; a < k; a++ {
		for c := 0; c < k; c++ {
			v := 0.0
			for e := 0; e < k; e++ {
				v += dsch[a*k+e] * zs[e*k+c]
			}
			tmp[a*k+c] = v
		}
	}
	for a := 0; a < k; a++ {
		for c := 0; c < k; c++ {
			v := 0.0
			for e := 0; e < k; e++ {
				v += zs[a*k+e] * tmp[e*k+c]
			}
			dzs[a*k+c] = -v
		}
	}
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
	par.Both(2*cost, func() {
		ft.selinv(zr, z2r, m-1)
		negateRows(z2r, n, k, 0, nt, 0, nt)
	}, func() {
		fb.selinv(zb, z2b, nb-k-1)
		// Row i >= m of Z is row n-1-i of the lower part's, reversed;
		// the rows of S take from it only the columns in B.
		for i := m; i < n; i++ {
			a := n - 1 - i
			lo := i - k
			if i < m+k {
				lo = m + k
			}
			for j := lo; j <= min(n-1, i+k); j++ {
				zr[i*wr+k+j-i] = zb[a*wr+k+i-j]
				z2r[i*wr+k+j-i] = -z2b[a*wr+k+i-j]
			}
		}
	})
	return 0
}

// oldDualLDL holds the band LDL^T factors of M + sigma I at sigma = 0 and
// their derivatives in sigma, in the layouts of
// [SymBand.InverseBandSquaredRows]: rows of L in natural order,
// ln[i*w + k-(i-p)] = L[i][p], and of U = L D, un[i*w + k-(i-p)] =
// L[i][p] d_p, each with its derivative.
type oldDualLDL struct {
	n, k                 int
	ln, dln, un, dun     []float64
	d, dd                []float64
	lc, dlc, sums, dsums []float64
}

// newOldDualLDL returns the factors of a matrix of order n with k
// off-diagonals in work (length 4 n (k+1) + 2 n).
func newOldDualLDL(n, k int, work []float64) *oldDualLDL {
	w := k + 1
	return &oldDualLDL{n: n, k: k,
		ln: work[:n*w], dln: work[n*w : 2*n*w],
		un: work[2*n*w : 3*n*w], dun: work[3*n*w : 4*n*w],
		d: work[4*n*w : 4*n*w+n], dd: work[4*n*w+n : 4*n*w+2*n],
		lc: make([]float64, w), dlc: make([]float64, w), sums: make([]float64, w), dsums: make([]float64, w),
	}
}

// schur returns sum_{p < jEnd} L[i][p] d_p L[j][p] for j <= i and its
// derivative, the contribution of the first jEnd eliminated columns to
// the Schur complement of the rows after them.
func (f *oldDualLDL) schur(i, j, jEnd int) (float64, float64) {
	k, w := f.k, f.k+1
	lo := max(0, i-k)
	if lo >= jEnd {
		return 0, 0
	}
	oi, oj := i*w+k-i+lo, j*w+k-j+lo
	c := jEnd - lo
	return dualDot(f.ln[oi:oi+c], f.dln[oi:oi+c], f.un[oj:oj+c], f.dun[oj:oj+c])
}

// factor computes the columns [0, jEnd) of the band LDL^T factorization
// of s (order f.n) and their derivatives in the shift, and returns the
// number of negative pivots among them. Each inner product runs over
// contiguous, equally ordered slices and carries its derivative along
// ([dualDot]); whole columns go to the assembly in one call
// ([dualBatch]). (Values and derivatives in two goroutines, the values
// ahead, was measured no faster on two cores: the loops are bound by their
// loads, which the fused form shares.)
func (f *oldDualLDL) factor(s SymBand, jEnd int) int {
	n, k := f.n, f.k
	w := k + 1
	ln, dln, un, dun, d, dd := f.ln, f.dln, f.un, f.dun, f.d, f.dd
	sums, dsums := f.sums, f.dsums
	tiny := math.SmallestNonzeroFloat64 * 4
	negatives := 0
	// d_j = M[j][j] - sum_{p<j} L[j][p] u_jp, and for i in (j, j+k],
	// L[i][j] = (M[i][j] - sum_{p<j} L[i][p] u_jp) / d_j.
	for j := 0; j < jEnd; j++ {
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
			oldDualBatch(ln[(j+1)*w:], dln[(j+1)*w:], un[j*w+1:], dun[j*w+1:], w, 1, k-1, -1, sums[:top-j], dsums[:top-j])
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
	return negatives
}

// selinv runs the selected inversion and its derivative in the shift for
// the rows iStart, iStart-1, ..., 0, writing the full rows of Z and of
// dZ/dsigma into zr and z2r; the rows after iStart must be there already
// (none when iStart = n-1). For j in (i, top], Z[j][i] = -sum_{p in (i,
// top]} Z[j][p] L[p][i], an inner product of row j of Z (zr[j*wr + k +
// p-j]) with column i of L (lc[p-i-1]), and Z[i][i] = 1/d_i - sum_{p in
// (i, top]} L[p][i] Z[i][p].
func (f *oldDualLDL) selinv(zr, z2r []float64, iStart int) {
	n, k := f.n, f.k
	w, wr := k+1, 2*k+1
	ln, dln, d, dd, lc, dlc := f.ln, f.dln, f.d, f.dd, f.lc, f.dlc
	for i := iStart; i >= 0; i-- {
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
			oldDualBatch(zr[(i+1)*wr+k:], z2r[(i+1)*wr+k:], lc, dlc, wr-1, 0, m, 0, zri, z2ri)
			for q := range zri {
				j := i + 1 + q
				zri[q], z2ri[q] = -zri[q], -z2ri[q]
				zr[j*wr+k+i-j], z2r[j*wr+k+i-j] = zri[q], z2ri[q]
			}
		}
		o := i*wr + k + 1
		s0, ds0 := dualDot(zr[o:o+m], z2r[o:o+m], lc[:m], dlc[:m])
		zr[i*wr+k] = 1/d[i] - s0
		z2r[i*wr+k] = -dd[i]/(d[i]*d[i]) - ds0
	}
}

// BenchmarkBandKernelOldNew times the old and the new band kernel on the
// input of BenchmarkInverseBandSquaredRows, alternating them in one
// process (the machine is shared: only ratios measured together mean
// anything; the times are the thread's CPU time, which leaves out the
// time the thread waits for a core, so run it with -cpu 1), and reports the median of the ratios old/new over the
// repetitions, with both medians in ms.
func BenchmarkBandKernelOldNew(b *testing.B) {
	n, k := 10000, 64
	rng := rand.New(rand.NewPCG(5, 6))
	s := NewSymBand(n, k)
	for i := 0; i < n; i++ {
		for j := max(0, i-k); j < i; j++ {
			s.Set(i, j, (rng.Float64()-0.5)/float64(k))
		}
		s.Set(i, i, 2)
	}
	wr := 2*k + 1
	zr, z2r := make([]float64, n*wr), make([]float64, n*wr)
	work := make([]float64, InverseBandSquaredRowsWork(n, k))
	oldWork := make([]float64, oldInverseBandSquaredRowsWork(n, k))
	var olds, news, ratios []float64
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for b.Loop() {
		t0 := threadSeconds()
		oldInverseBandSquaredRows(s, zr, z2r, oldWork)
		t1 := threadSeconds()
		s.InverseBandSquaredRows(zr, z2r, work)
		t2 := threadSeconds()
		o, nw := t1-t0, t2-t1
		olds, news, ratios = append(olds, o), append(news, nw), append(ratios, o/nw)
	}
	med := func(v []float64) float64 {
		slices.Sort(v)
		return v[len(v)/2]
	}
	b.ReportMetric(med(ratios), "old/new")
	b.ReportMetric(1e3*med(olds), "old-ms")
	b.ReportMetric(1e3*med(news), "new-ms")
}

// threadSeconds returns the CPU time of the calling thread.
func threadSeconds() float64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		panic(err)
	}
	return float64(ts.Sec) + 1e-9*float64(ts.Nsec)
}

// The new kernel against the old on the benchmark's matrix: the same
// entries to rounding (the summation order differs), relative to
// sqrt(Z_ii Z_jj).
func TestBandKernelOldNew(t *testing.T) {
	n, k := 2000, 64
	rng := rand.New(rand.NewPCG(5, 6))
	s := NewSymBand(n, k)
	for i := 0; i < n; i++ {
		for j := max(0, i-k); j < i; j++ {
			s.Set(i, j, (rng.Float64()-0.5)/float64(k))
		}
		s.Set(i, i, 2)
	}
	wr := 2*k + 1
	zr, z2r := make([]float64, n*wr), make([]float64, n*wr)
	or, o2r := make([]float64, n*wr), make([]float64, n*wr)
	if s.InverseBandSquaredRows(zr, z2r, make([]float64, InverseBandSquaredRowsWork(n, k))) != 0 ||
		oldInverseBandSquaredRows(s, or, o2r, make([]float64, oldInverseBandSquaredRowsWork(n, k))) != 0 {
		t.Fatal("not positive definite")
	}
	worst, worst2 := 0.0, 0.0
	for i := 0; i < n; i++ {
		for j := max(0, i-k); j <= min(n-1, i+k); j++ {
			o := i*wr + k + j - i
			worst = math.Max(worst, math.Abs(zr[o]-or[o])/math.Sqrt(or[i*wr+k]*or[j*wr+k]))
			worst2 = math.Max(worst2, math.Abs(z2r[o]-o2r[o])/math.Sqrt(o2r[i*wr+k]*o2r[j*wr+k]))
		}
	}
	t.Logf("largest difference, relative to sqrt(Z_ii Z_jj): Z %.2g, Z^2 %.2g", worst, worst2)
	if worst > 1e-13 || worst2 > 1e-13 {
		t.Errorf("new and old kernels differ by %g (Z), %g (Z^2)", worst, worst2)
	}
}
