package factorize

import (
	"math"
	"slices"
)

// anderson is Anderson acceleration (type II, undamped) of a fixed-point
// iteration x <- G(x) with memory m: given the last m differences of the
// residuals f = G(x) - x and of G, the next iterate is
// G(x_k) - dG gamma, with gamma = argmin ||f_k - dF gamma||_2 (Walker and
// Ni, "Anderson acceleration for fixed-point iterations", SIAM J. Numer.
// Anal. 49(4), 2011). The history is cleared when the residual norm grows by
// more than a factor of two, a standard safeguard.
//
// Memory and time are what matter at R = 10^6: the differences are kept in
// float32 (they are differences of nearby iterates, so this perturbs the
// step by a relative 6e-8 of its own size, and the certificate never
// depends on the step), and the least-squares problem is solved through the
// Gram matrix dF^T dF, updated by one row per iteration (O(n m)), with a
// relative Tikhonov regularisation of 1e-12 and a Cholesky factorization of
// order m; nothing of size n is allocated after the first call.
type anderson struct {
	m      int
	df, dg [][]float32 // ring buffers of the differences
	count  int         // differences held
	head   int         // slot of the next difference
	gram   []float64   // m x m, gram[i*m+j] = df_i . df_j
	f      []float64
	fPrev  []float64
	gPrev  []float64
	// work for the small system
	rhs, chol []float64
	normPrev  float64
	have      bool
}

func newAnderson(n, m int) *anderson {
	a := &anderson{m: m, fPrev: make([]float64, n), gPrev: make([]float64, n), f: make([]float64, n),
		df: make([][]float32, m), dg: make([][]float32, m), gram: make([]float64, m*m),
		rhs: make([]float64, m), chol: make([]float64, m*m)}
	for i := range a.df {
		a.df[i] = make([]float32, n)
		a.dg[i] = make([]float32, n)
	}
	return a
}

// next overwrites x with the next iterate, given g = G(x). Its loops run
// by chunks (see forChunks): the result does not depend on GOMAXPROCS.
func (a *anderson) next(x, g []float64) {
	f := a.f
	norm := math.Sqrt(sumChunks(len(x), 1, func(lo, hi int, out []float64) {
		s := 0.0
		for i := lo; i < hi; i++ {
			f[i] = g[i] - x[i]
			s += f[i] * f[i]
		}
		out[0] = s
	})[0])
	a.step(x, g, norm)
}

// residual returns the buffer of the residual f = g - x that step reads,
// for a caller that fills it in a pass of its own (with norm its
// Euclidean norm, summed as next sums it: by chunks, in order, each chunk
// in entry order from 0), saving next's pass over x and g.
func (a *anderson) residual() []float64 { return a.f }

// step is next with the residual already in a.f and its norm computed.
func (a *anderson) step(x, g []float64, norm float64) {
	n := len(x)
	f := a.f
	insert := a.have && norm <= 2*a.normPrev
	if a.have && !insert {
		a.count = 0
	}
	s := a.head
	if insert {
		a.head = (a.head + 1) % a.m
		a.count = min(a.count+1, a.m)
	}
	// Slots held, oldest first.
	var slots [64]int
	k := a.count
	for t := range k {
		slots[t] = (a.head - a.count + t + a.m) % a.m
	}
	// One pass: the new differences, row s of the Gram matrix against
	// every slot held, dF^T f, and the copies.
	m := a.m
	sums := sumChunks(n, m+k, func(lo, hi int, out []float64) {
		if insert {
			dfs, dgs := a.df[s][lo:hi], a.dg[s][lo:hi]
			for i := range dfs {
				dfs[i] = float32(f[lo+i] - a.fPrev[lo+i])
				dgs[i] = float32(g[lo+i] - a.gPrev[lo+i])
			}
		}
		for p := 0; p < k; p++ {
			t := slots[p]
			if insert {
				out[t], out[m+p] = dot2x32(a.df[s][lo:hi], f[lo:hi], a.df[t][lo:hi])
			} else {
				out[m+p] = dot64x32(f[lo:hi], a.df[t][lo:hi])
			}
		}
		copy(a.fPrev[lo:hi], f[lo:hi])
		copy(a.gPrev[lo:hi], g[lo:hi])
		copy(x[lo:hi], g[lo:hi])
	})
	if insert {
		for _, t := range slots[:k] {
			a.gram[s*m+t], a.gram[t*m+s] = sums[t], sums[t]
		}
	}
	a.normPrev = norm
	a.have = true
	if a.count == 0 {
		return
	}
	// (G + lambda I) gamma = dF^T f by Cholesky.
	trace := 0.0
	for p := 0; p < k; p++ {
		trace += a.gram[slots[p]*m+slots[p]]
	}
	lambda := 1e-12 * trace / float64(k)
	c := a.chol[:k*k]
	for p := 0; p < k; p++ {
		for q := 0; q < k; q++ {
			c[p*k+q] = a.gram[slots[p]*m+slots[q]]
		}
		c[p*k+p] += lambda
		a.rhs[p] = sums[m+p]
	}
	gamma := a.rhs[:k]
	if !choleskySolve(c, gamma, k) || slices.ContainsFunc(gamma, func(g float64) bool { return math.IsNaN(g) || math.IsInf(g, 0) }) {
		a.count = 0
		return
	}
	forChunks(n, func(_, lo, hi int) {
		xs := x[lo:hi]
		for p := 0; p < k; p++ {
			gp := gamma[p]
			dgp := a.dg[slots[p]][lo:hi]
			for i := range xs {
				xs[i] -= gp * float64(dgp[i])
			}
		}
	})
}

// dot2x32 returns a . c and f . c in one pass, each summed in index
// order (as two separate products would be: the small problems of the
// epochs and dense solvers are sensitive to the rounding of the step).
func dot2x32(a []float32, f []float64, c []float32) (ac, fc float64) {
	a, f = a[:len(c)], f[:len(c)]
	for i, x := range c {
		y := float64(x)
		ac += float64(a[i]) * y
		fc += f[i] * y
	}
	return ac, fc
}

func dot64x32(x []float64, y []float32) float64 {
	s := 0.0
	for i, v := range x {
		s += v * float64(y[i])
	}
	return s
}

// choleskySolve solves c z = b in place (b becomes z) for the symmetric
// k x k matrix c (overwritten by its Cholesky factor); it reports false
// when c is not numerically positive definite. It stays (a dense k x k
// solve, k <= 64, not the banded or quasiseparable factor of C) rather
// than gonum's mat.Cholesky, whose rounding moved the accelerated iterates
// past the tests' rounding estimate and the epochs solver's iteration bound.
func choleskySolve(c, b []float64, k int) bool {
	for j := 0; j < k; j++ {
		d := c[j*k+j]
		for p := 0; p < j; p++ {
			d -= c[j*k+p] * c[j*k+p]
		}
		if !(d > 0) {
			return false
		}
		d = math.Sqrt(d)
		c[j*k+j] = d
		for i := j + 1; i < k; i++ {
			s := c[i*k+j]
			for p := 0; p < j; p++ {
				s -= c[i*k+p] * c[j*k+p]
			}
			c[i*k+j] = s / d
		}
	}
	for i := 0; i < k; i++ {
		s := b[i]
		for p := 0; p < i; p++ {
			s -= c[i*k+p] * b[p]
		}
		b[i] = s / c[i*k+i]
	}
	for i := k - 1; i >= 0; i-- {
		s := b[i]
		for p := i + 1; p < k; p++ {
			s -= c[p*k+i] * b[p]
		}
		b[i] = s / c[i*k+i]
	}
	return true
}

// andersonMemory is the memory m of the optimal solver's Anderson
// acceleration.
const andersonMemory = 10

// largeAndersonMemory is the memory from order largeAndersonOrder on,
// where the differences dominate the solver's memory (8 m bytes per
// round): at R = 10^5, memory 5 took as many iterations as 10 (66).
const (
	largeAndersonMemory = 5
	largeAndersonOrder  = 3000000
)

// denseAndersonMemory is the memory of the dense path, whose evaluations
// cost O(R^3) and the acceleration O(R m): 20 saves about one iteration in
// 19 at R = 2000 (prefix sums) over 10.
const denseAndersonMemory = 20
