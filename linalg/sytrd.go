package linalg

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync/atomic"
	"time"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/lapack"
	lapackgonum "gonum.org/v1/gonum/lapack/gonum"
)

// Tridiagonalizer reduces symmetric matrices of one order n to tridiagonal
// form, A = Q T Q^T, by Householder reflections, and forms Q. It is the
// blocked reduction of LAPACK's DSYTRD (Dongarra, Hammarling and Sorensen,
// "Block reduction of matrices to condensed forms for eigenvalue
// computations", J. Comput. Appl. Math. 27, 1989): panels of nb columns are
// reduced with matrix-vector products against the trailing matrix, whose
// rank-2 nb update is then one matrix product. Unlike gonum's DSYTRD it
// runs on two goroutines, the caller and one helper kept for the whole of
// a Reduce (handed work without starting a goroutine): the matrix-vector
// product (half of the work, bound by memory traffic) by two halves of
// rows, the panel's elementwise updates by halves of indices, the rank-2
// nb update by two halves of rows (with more than two workers gonum's
// matrix product runs it on all cores instead) and each block reflector
// of Q's formation by two halves of columns. The arithmetic is the same
// for any number of workers, so the result has the same bits. With Q
// formed (by gonum's DORGTR from the reflectors in both cases) it was 1.8
// times faster than gonum's DSYTRD and DORGTR at n = 1000 and 2.3 times at
// n = 2000 on two cores before the helper was kept
// (BenchmarkTridiagonalize).
//
// A Tridiagonalizer holds its work space; it is not safe for concurrent
// use.
type Tridiagonalizer struct {
	n, nb   int
	workers int
	w       []float64 // nb x n: W of the panel, row p for column k0 + p
	u, z    []float64 // 2 nb x n: [V W] and [W; V] for the update
	y       [2][]float64
	dots    []float64 // 2 nb: the panel's inner products of one column
	tau     []float64
	work    []float64
	half    []float64
	impl    lapackgonum.Implementation
	pair    *pair // the helper during Reduce, nil when all runs inline
}

// NewTridiagonalizer returns a Tridiagonalizer for matrices of order n,
// using up to workers goroutines (0: runtime.GOMAXPROCS). One worker runs
// everything on the caller; two or more start one helper goroutine for
// each Reduce (where GOMAXPROCS is at least 2 then), and more than two let
// the trailing update use every core.
func NewTridiagonalizer(n, workers int) *Tridiagonalizer {
	if n < 0 {
		panic(fmt.Sprintf("linalg: NewTridiagonalizer: negative order %d", n))
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	nb := 32
	t := &Tridiagonalizer{n: n, nb: nb, workers: workers,
		w: make([]float64, nb*n), u: make([]float64, 2*nb*n), z: make([]float64, 2*nb*n),
		dots: make([]float64, 2*nb), tau: make([]float64, max(n-1, 1))}
	for i := range t.y {
		t.y[i] = make([]float64, n)
	}
	q := []float64{0}
	t.impl.Dorgtr(blas.Lower, n, nil, max(n, 1), nil, q, -1)
	t.work = make([]float64, max(int(q[0]), 1))
	return t
}

// Reduce overwrites the n x n row-major symmetric matrix a (only its upper
// triangle is read) with the orthogonal Q of A = Q T Q^T and writes T's
// diagonal into d (length n) and its off-diagonal T[i+1][i] into e[i]
// (length at least n - 1).
//
// Cancelling ctx stops the reduction between panels of columns, or the
// formation of Q between its blocks of columns, and returns ctx's error;
// a, d and e then hold partial results. The helper goroutine is stopped
// before Reduce returns, whether it returns an error or panics.
func (t *Tridiagonalizer) Reduce(ctx context.Context, a, d, e []float64) error {
	n := t.n
	if len(a) < n*n || len(d) < n || len(e) < n-1 {
		panic(fmt.Sprintf("linalg: Tridiagonalizer.Reduce: slices of %d, %d, %d for order %d", len(a), len(d), len(e), n))
	}
	if n == 0 {
		return ctx.Err()
	}
	if t.workers >= 2 && n >= symvSplit && runtime.GOMAXPROCS(0) >= 2 {
		t.pair = startPair()
		defer func() {
			t.pair.stop()
			t.pair = nil
		}()
	}
	if err := t.reduce(ctx, a, d, e); err != nil {
		return err
	}
	return t.orgtr(ctx, a)
}

// both runs f and g, f on the helper and g on the caller where there is a
// helper, and both on the caller otherwise; it returns when both have
// returned. f and g must write disjoint data.
func (t *Tridiagonalizer) both(f, g func()) {
	if t.pair == nil {
		g()
		f()
		return
	}
	t.pair.both(f, g)
}

// split calls f(lo, hi) on the halves of [0, l), the two halves on the
// two goroutines where work (about one unit per multiply-add) is at least
// splitWork, and f(0, l) otherwise. f must compute every index by the same
// operations whatever its range, so that the bits do not depend on the
// split.
func (t *Tridiagonalizer) split(l, work int, f func(lo, hi int)) {
	if t.pair == nil || work < splitWork {
		f(0, l)
		return
	}
	h := l / 2
	t.pair.both(func() { f(h, l) }, func() { f(0, h) })
}

const (
	// symvSplit is the least trailing order whose matrix-vector product
	// is computed by two halves of rows (whatever the number of workers).
	symvSplit = 256
	// splitWork is the least work (multiply-adds) of an elementwise update
	// that is handed to the helper by halves: about 2 to 8 us of work,
	// against well under a microsecond for a hand-over to a spinning
	// helper.
	splitWork = 1 << 13
)

// orgtr overwrites a, holding the reflectors in its rows as reduce leaves
// them, with Q, as gonum's DORGTR (lower) does from the reflectors in the
// columns below the subdiagonal, and with its bits: DORGQR's steps, with
// each block reflector's application to the trailing columns (DLARFB,
// whose triangular products are serial in gonum) split into two halves of
// columns that run on the two goroutines where there is a helper. Every
// column is computed by the same operations either way. Cancelling ctx
// stops it between blocks of columns with ctx's error.
func (t *Tridiagonalizer) orgtr(ctx context.Context, a []float64) error {
	n := t.n
	// DORGTR wants v_j[j+2:] (in a[j][j+2:]) in column j below the
	// subdiagonal, and then shifts it one column right: a[i][j] =
	// a[j-1][i] for i > j >= 1, in one pass by rows (rows of equal work
	// on the two goroutines), reading the upper triangle and writing the
	// lower.
	move := func(i0, i1 int) {
		for i := i0; i < i1; i++ {
			row := a[i*n : i*n+i]
			for j := 1; j < i; j++ {
				row[j] = a[(j-1)*n+i]
			}
		}
	}
	h := min(n, int(float64(n)/math.Sqrt2))
	if n < symvSplit {
		h = n
	}
	t.both(func() { move(h, n) }, func() { move(0, h) })
	// The first row and column of the identity.
	for j := 1; j < n; j++ {
		a[j] = 0
		a[j*n] = 0
	}
	a[0] = 1
	if n > 1 {
		return t.orgqr(ctx, n-1, a[n+1:], n, t.tau[:n-1])
	}
	return nil
}

// orgqr is gonum's DORGQR for the m x m matrix a (m reflectors), with the
// block reflectors applied by halves of columns (see orgtr).
func (t *Tridiagonalizer) orgqr(ctx context.Context, m int, a []float64, lda int, tau []float64) error {
	impl := t.impl
	nb := impl.Ilaenv(1, "DORGQR", " ", m, m, m, -1)
	nx := max(0, impl.Ilaenv(3, "DORGQR", " ", m, m, m, -1))
	if len(t.work) < max(m*nb, 1) {
		t.work = make([]float64, m*nb)
	}
	if len(t.half) < m*nb {
		t.half = make([]float64, m*nb)
	}
	work, half := t.work, t.half
	var ki, kk int
	if 2 <= nb && nb < m && nx < m {
		// The first kk columns are handled by the blocked method.
		ki = ((m - nx - 1) / nb) * nb
		kk = min(m, ki+nb)
		for i := 0; i < kk; i++ {
			for j := kk; j < m; j++ {
				a[i*lda+j] = 0
			}
		}
	}
	if kk < m {
		impl.Dorg2r(m-kk, m-kk, m-kk, a[kk*lda+kk:], lda, tau[kk:], work)
	}
	if kk == 0 {
		return nil
	}
	// Dlarft of the next block (its reflectors, columns left of this
	// block) runs on the helper beside Dorg2r of this block.
	tf, tfNext := make([]float64, nb*nb), make([]float64, nb*nb)
	larft := func(i int, tf []float64) {
		impl.Dlarft(lapack.Forward, lapack.ColumnWise, m-i, min(nb, m-i), a[i*lda+i:], lda, tau[i:], tf, nb)
	}
	if ki+min(nb, m-ki) < m {
		larft(ki, tf)
	}
	for i := ki; i >= 0; i -= nb {
		if err := ctx.Err(); err != nil {
			return err
		}
		ib := min(nb, m-i)
		if nc := m - i - ib; nc > 0 {
			apply := func(c0, c1 int, w []float64) {
				impl.Dlarfb(blas.Left, blas.NoTrans, lapack.Forward, lapack.ColumnWise,
					m-i, c1-c0, ib, a[i*lda+i:], lda, tf, nb, a[i*lda+i+ib+c0:], lda, w, nb)
			}
			if nc < 2*nb {
				apply(0, nc, work)
			} else {
				t.both(func() { apply(nc/2, nc, half) }, func() { apply(0, nc/2, work) })
			}
		}
		t.both(func() {
			if i-nb >= 0 {
				larft(i-nb, tfNext)
			}
		}, func() {
			impl.Dorg2r(m-i, ib, ib, a[i*lda+i:], lda, tau[i:i+ib], work)
			// Rows 0 .. i-1 of the block are zero.
			for l := 0; l < i; l++ {
				clear(a[l*lda+i : l*lda+i+ib])
			}
		})
		tf, tfNext = tfNext, tf
	}
	return nil
}

// reduce is the blocked reduction. The matrix is read and updated in its
// upper triangle, row i playing the part of column i of LAPACK's
// lower-triangle (column-major) algorithm, so that every vector is
// contiguous: the reflector H_i = I - tau_i v v^T has v[:i+1] = 0,
// v[i+1] = 1 and v[i+2:] in a[i][i+2:].
func (t *Tridiagonalizer) reduce(ctx context.Context, a, d, e []float64) error {
	n, nb := t.n, t.nb
	const nx = 128 // below this trailing order, one unblocked panel
	k0 := 0
	for ; n-k0 > nx && n-k0 > nb; k0 += nb {
		if err := ctx.Err(); err != nil {
			return err
		}
		t.panel(a, e, k0, nb)
		t.update(a, k0, nb)
		for j := k0; j < k0+nb; j++ {
			a[j*n+j+1] = e[j]
			d[j] = a[j*n+j]
		}
	}
	// The rest, one panel of every remaining column (its trailing update
	// is empty).
	if w := n - k0; w > 0 {
		if len(t.w) < w*n {
			t.w = make([]float64, w*n)
		}
		if len(t.dots) < 2*w {
			t.dots = make([]float64, 2*w)
		}
		t.panel(a, e, k0, w)
		for j := k0; j < n; j++ {
			if j+1 < n {
				a[j*n+j+1] = e[j]
			}
			d[j] = a[j*n+j]
		}
	}
	return nil
}

// panel reduces the columns k0 .. k0+nb-1 (LAPACK's DLATRD), leaving the
// trailing matrix a[k0+nb:, k0+nb:] for update, W in t.w and the
// reflectors' leading ones in place of e. Its elementwise updates run by
// halves of indices (see split); every inner product is computed whole on
// one goroutine.
func (t *Tridiagonalizer) panel(a, e []float64, k0, nb int) {
	n := t.n
	w := t.w
	for j := 0; j < nb; j++ {
		i := k0 + j
		l := n - i
		ai := a[i*n+i : i*n+n]
		// A(i:, i) -= V(i:, :j) W(i, :j)^T + W(i:, :j) V(i, :j)^T.
		t.split(l, 2*j*l, func(lo, hi int) {
			for p := 0; p < j; p++ {
				vp := a[(k0+p)*n+i : (k0+p)*n+n]
				wp := w[p*n+i : p*n+n]
				floats.AddScaled(ai[lo:hi], -wp[0], vp[lo:hi])
				floats.AddScaled(ai[lo:hi], -vp[0], wp[lo:hi])
			}
		})
		if i == n-1 {
			continue
		}
		// The reflector annihilating a[i][i+2:].
		beta, tau := householder(ai[1], ai[2:])
		e[i] = beta
		t.tau[i] = tau
		ai[1] = 1
		v := ai[1:] // length m = n-i-1
		m := l - 1
		wj := w[j*n+i+1 : j*n+n]
		// The inner products of v with the panel's earlier columns of V
		// and W, beside the product with the trailing matrix.
		dots := t.dots[:2*j]
		inner := func(p0, p1 int) {
			for p := p0; p < p1; p++ {
				dots[2*p] = floats.Dot(w[p*n+i+1:p*n+n], v)
				dots[2*p+1] = floats.Dot(a[(k0+p)*n+i+1:(k0+p)*n+n], v)
			}
		}
		halves := t.symv(a, i+1, v, func() { inner(0, j/2) }, func() { inner(j/2, j) })
		y0, y1 := t.y[0][:m], t.y[1][:m]
		t.split(m, (2*j+2)*m, func(lo, hi int) {
			wr := wj[lo:hi]
			copy(wr, y0[lo:hi])
			if halves {
				floats.Add(wr, y1[lo:hi])
			}
			for p := 0; p < j; p++ {
				floats.AddScaled(wr, -dots[2*p], a[(k0+p)*n+i+1+lo:(k0+p)*n+i+1+hi])
				floats.AddScaled(wr, -dots[2*p+1], w[p*n+i+1+lo:p*n+i+1+hi])
			}
			floats.Scale(tau, wr)
		})
		alpha := -0.5 * tau * floats.Dot(wj, v)
		floats.AddScaled(wj, alpha, v)
	}
}

// householder returns beta and tau of the reflector H = I - tau u u^T,
// u = (1, x'), with H (alpha, x) = (beta, 0), overwriting x with x' (LAPACK's
// DLARFG, without its rescaling of tiny vectors).
func householder(alpha float64, x []float64) (beta, tau float64) {
	xnorm := blas64.Nrm2(blas64.Vector{N: len(x), Inc: 1, Data: x})
	if xnorm == 0 {
		return alpha, 0
	}
	beta = -math.Copysign(math.Hypot(alpha, xnorm), alpha)
	tau = (beta - alpha) / beta
	floats.Scale(1/(alpha-beta), x)
	return beta, tau
}

// symv computes A[s:, s:] v for the trailing symmetric matrix held in the
// upper triangle of a's rows s .. n-1, of order m = n - s, and runs f and
// g beside it. From order symvSplit on (whatever the number of workers)
// the rows are split into two parts of equal work, each summed into its
// own buffer, t.y[0] and t.y[1], and the product is their sum; the first
// part and g run on the caller, the second and f on the helper where
// there is one. Below symvSplit the product is t.y[0] alone, and halves is
// false.
func (t *Tridiagonalizer) symv(a []float64, s int, v []float64, f, g func()) (halves bool) {
	n := t.n
	m := n - s
	rows := func(r0, r1 int, acc []float64) {
		clear(acc[:m])
		for r := r0; r < r1; r++ {
			row := a[(s+r)*n+s+r : (s+r)*n+n]
			vr := v[r]
			acc[r] += row[0]*vr + floats.Dot(row[1:], v[r+1:m])
			floats.AddScaled(acc[r+1:m], vr, row[1:])
		}
	}
	if m < symvSplit {
		rows(0, m, t.y[0])
		g()
		f()
		return false
	}
	// Row r costs m - r: split the triangle into equal areas, rows
	// [0, r) costing m r - r^2/2 ~ half of m (m + 1) / 2.
	fm := float64(m)
	half := fm * (fm + 1) / 4
	h := min(m, max(0, int(fm-math.Sqrt(math.Max(fm*fm-2*half, 0)))))
	t.both(func() {
		rows(h, m, t.y[1])
		f()
	}, func() {
		rows(0, h, t.y[0])
		g()
	})
	return true
}

// update applies A22 -= V W^T + W V^T to the trailing matrix after the
// panel at k0 (LAPACK's DSYR2K), as products of [V W] and [W; V] over
// blocks of rows of the upper triangle. Each entry is the same sum, taken
// in the same order, however the rows are blocked and whether gonum's
// Dgemm runs serially or by tiles (both add the products over k in
// order), so the bits do not depend on the number of workers.
func (t *Tridiagonalizer) update(a []float64, k0, nb int) {
	n := t.n
	k1 := k0 + nb
	m := n - k1
	if m <= 0 {
		return
	}
	// u = [V W] (m x 2 nb, row-major), z = [W; V] (2 nb x m).
	u, z := t.u[:2*nb*m], t.z[:2*nb*m]
	w2 := 2 * nb
	t.split(m, 4*nb*m, func(lo, hi int) {
		for p := 0; p < nb; p++ {
			vp := a[(k0+p)*n+k1 : (k0+p)*n+n]
			wp := t.w[p*n+k1 : p*n+n]
			for r := lo; r < hi; r++ {
				u[r*w2+p] = vp[r]
				u[r*w2+nb+p] = wp[r]
			}
			copy(z[p*m+lo:p*m+hi], wp[lo:hi])
			copy(z[(nb+p)*m+lo:(nb+p)*m+hi], vp[lo:hi])
		}
	})
	// gemm updates the rows [r0, r1) from their diagonal on.
	gemm := func(r0, r1 int) {
		blas64.Gemm(blas.NoTrans, blas.NoTrans, -1,
			blas64.General{Rows: r1 - r0, Cols: w2, Stride: w2, Data: u[r0*w2:]},
			blas64.General{Rows: w2, Cols: m - r0, Stride: m, Data: z[r0:]},
			1, blas64.General{Rows: r1 - r0, Cols: m - r0, Stride: n, Data: a[(k1+r0)*n+k1+r0:]})
	}
	if t.workers > 2 {
		// gonum's Dgemm runs each block on every core, one goroutine per
		// tile of 64 x 64.
		const bs = 192
		for r0 := 0; r0 < m; r0 += bs {
			gemm(r0, min(m, r0+bs))
		}
		return
	}
	// Two halves of rows of equal work, on the two goroutines, each in
	// pieces of at most 64 x 192 entries, which gonum's Dgemm (parallel
	// from 4 tiles of 64 x 64) multiplies serially.
	const rb, cb = 64, 192
	rows := func(r0, r1 int) {
		for q0 := r0; q0 < r1; q0 += rb {
			q1 := min(r1, q0+rb)
			for c0 := q0; c0 < m; c0 += cb {
				c1 := min(m, c0+cb)
				blas64.Gemm(blas.NoTrans, blas.NoTrans, -1,
					blas64.General{Rows: q1 - q0, Cols: w2, Stride: w2, Data: u[q0*w2:]},
					blas64.General{Rows: w2, Cols: c1 - c0, Stride: m, Data: z[c0:]},
					1, blas64.General{Rows: q1 - q0, Cols: c1 - c0, Stride: n, Data: a[(k1+q0)*n+k1+c0:]})
			}
		}
	}
	fm := float64(m)
	h := min(m, max(0, int(fm-math.Sqrt(fm*fm/2))))
	t.both(func() { rows(h, m) }, func() { rows(0, h) })
}

// pair is a helper goroutine kept for one Reduce, to which the caller
// hands work without starting a goroutine. Each side waits for the other
// by spinning on an atomic counter for up to spinFor (yielding the
// processor now and then), then parking on a channel, so that a helper
// idle for long costs no CPU time.
type pair struct {
	task     func()
	panicked any
	posted   uint64 // tasks posted, the stop included; the caller's only
	start    signal // counts the tasks posted, by the caller
	done     signal // counts the tasks finished, by the helper
}

// spinFor is how long a side of a pair spins before it parks: longer than
// the serial steps between two hand-overs in a panel (a few microseconds),
// shorter than most of the waits between the blocks of Q's formation.
const spinFor = 20 * time.Microsecond

// startPair starts the helper goroutine; stop must be called to end it.
func startPair() *pair {
	p := &pair{}
	p.start.ch = make(chan struct{}, 1)
	p.done.ch = make(chan struct{}, 1)
	go p.loop()
	return p
}

func (p *pair) loop() {
	for k := uint64(1); ; k++ {
		p.start.await(k)
		f := p.task
		if f == nil {
			p.done.post()
			return
		}
		func() {
			defer func() {
				if r := recover(); r != nil {
					p.panicked = r
				}
			}()
			f()
		}()
		p.done.post()
	}
}

// both runs f on the helper and g on the caller, and returns when both
// have returned. A panic in f is raised again on the caller.
func (p *pair) both(f, g func()) {
	p.task = f
	p.posted++
	p.start.post()
	g()
	p.done.await(p.posted)
	if r := p.panicked; r != nil {
		p.panicked = nil
		panic(fmt.Sprintf("linalg: Tridiagonalizer helper: %v", r))
	}
}

// stop waits for a task the helper may still be running (when the
// caller's half panicked) and ends the helper goroutine.
func (p *pair) stop() {
	p.done.await(p.posted)
	p.task = nil
	p.posted++
	p.start.post()
	p.done.await(p.posted)
}

// signal is a counter that one goroutine waits on for another to raise.
type signal struct {
	n      atomic.Uint64
	parked atomic.Bool
	ch     chan struct{} // capacity 1: the wake-up of a parked waiter
}

// post raises the count and wakes the waiter if it has parked.
func (s *signal) post() {
	s.n.Add(1)
	if s.parked.CompareAndSwap(true, false) {
		s.ch <- struct{}{}
	}
}

// await returns when the count is at least k.
func (s *signal) await(k uint64) {
	if s.n.Load() >= k {
		return
	}
	t0 := time.Now()
	for i := 1; ; i++ {
		if s.n.Load() >= k {
			return
		}
		if i%64 == 0 {
			if time.Since(t0) > spinFor {
				break
			}
			runtime.Gosched()
		}
	}
	// Park: either the poster sees parked and sends (after raising the
	// count), or this load sees the raised count; if both, whichever
	// clears parked first decides whether a wake-up is sent. A wake-up
	// may come from a post of an earlier count whose sender was delayed
	// between raising it and clearing parked: then park again.
	for {
		s.parked.Store(true)
		if s.n.Load() >= k {
			if !s.parked.CompareAndSwap(true, false) {
				<-s.ch
			}
			return
		}
		<-s.ch
		if s.n.Load() >= k {
			return
		}
	}
}
