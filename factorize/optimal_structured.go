package factorize

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"gonum.org/v1/gonum/mat"

	"github.com/dpmf/dpmf/linalg"
)

// quadTol is the relative accuracy of the rational approximation of the
// inverse square root used by the structured path.
const quadTol = 1e-14

// structuredEvaluator evaluates phi(v) = diag(T^{-1/2}) with
// T = D^{-1} A^{-1} A^{-T} D^{-1} = G G^T, G = D^{-1} A^{-1} banded.
type structuredEvaluator struct {
	w *Workload
	k int
	// q is the rational approximation in use: quads[key] for the accuracy
	// acc last asked for (key = acc rounded down to a power of ten, or,
	// where grouped, the number of groups of linalg.InvSqrtLanes nodes). All of quads cover the interval [qlo, qhi].
	q        linalg.InvSqrtRational
	quads    map[float64]linalg.InvSqrtRational
	qlo, qhi float64
	lo       float64 // last lower eigenvalue bound, a warm start
	// vRef, loRef and hiRef: the multipliers at which the interval in
	// use was built and the eigenvalue bounds proved there (bidiagonal
	// case; see coveredByScaling).
	vRef         []float64
	loRef, hiRef float64
	// want is the accuracy phi asks of the rational approximation (quadTol
	// unless the fixed-point iteration asks for less; see setAccuracy).
	want float64
	// Band case (k >= 2): llt = L L^T (L = A^{-1}) rounded to float64
	// (gdd's high parts, shared; for the eigenvalue estimates) and gdd in
	// double-word arithmetic (for phi and
	// the proofs that the interval covers T's spectrum), absL >=
	// || |L| |L|^T ||_2 and llLo <= lambda_min(L L^T) (see bandSetup), the
	// double-word sums of phi (accH, accL) and the kernel's work (ddWork).
	llt        linalg.SymBand
	gdd        linalg.SymBandDD
	absL, llLo float64
	accH, accL []float64
	ddWork     []float64
	// work buffers
	bi   linalg.BidiagGram
	band linalg.SymBand
	work []float64
	ws   *linalg.InvSqrtWorkspace
	// squares says that the last setup also wrote the squares of G's
	// entries into ws (see linalg.InvSqrtWorkspace.Squares).
	squares bool
}

func newStructuredEvaluator(w *Workload) *structuredEvaluator {
	inv, _ := w.InverseBand()
	n, k, _ := inv.TriBand()
	e := &structuredEvaluator{w: w, k: k, want: quadTol}
	if k == 1 {
		// work is allocated when first needed (root, rowSq): the
		// iteration itself needs only ws, which keeps R = 10^6 within a
		// few hundred MB.
		e.bi = linalg.BidiagGram{Diag: make([]float64, n), Sub: make([]float64, n)}
		e.ws = linalg.NewInvSqrtWorkspace(n)
	} else {
		e.band = linalg.NewSymBand(n, k)
		// The float64 work of Bounds (N (K+1) + N) and of root's
		// AddShiftedInverse (N (K+1) + 2 N).
		e.work = make([]float64, n*(k+1)+2*n)
		e.accH, e.accL = make([]float64, n), make([]float64, n)
		e.ddWork = make([]float64, linalg.ScaledInverseDiagWork(n, k))
	}
	return e
}

// setup forms G (or T) for multipliers v and makes sure the rational
// approximation covers T's spectrum with relative accuracy acc. It returns
// an error when T's spectrum cannot be bounded in floating point (see
// checkSpectrum).
func (e *structuredEvaluator) setup(v []float64, acc float64) error {
	inv, _ := e.w.InverseBand()
	n := len(v)
	var hi float64
	// covers(x) is true when no eigenvalue of G lies below x, proven.
	var covers func(x float64) bool
	var floorX float64 // band case: the least x that covers can prove
	if e.k == 1 {
		// Raw band storage (lower, one subdiagonal): row i holds
		// L[i][i-1], L[i][i] at i*Stride, i*Stride+1.
		// One pass forms G, the squares of its entries that the kernel
		// reads (where phi will run it) and the extreme ratios of
		// coveredBy.
		raw := inv.RawTriBand()
		var g2, h2 []float64
		if e.ws != nil {
			g2, h2 = e.ws.Squares()
		}
		e.squares = g2 != nil
		ref := e.vRef
		if e.quads == nil {
			ref = nil
		}
		part := chunkParts(n, 2, func(lo, hi int, out []float64) {
			for i := lo; i < hi; i++ {
				s := 1 / math.Sqrt(v[i])
				row := raw.Data[i*raw.Stride : i*raw.Stride+2]
				d := row[1] * s
				e.bi.Diag[i] = d
				if i > 0 {
					e.bi.Sub[i] = row[0] * s
				}
				if g2 != nil {
					g2[i] = d * d
					h2[i] = e.bi.Sub[i] * e.bi.Sub[i]
				}
			}
			if ref != nil {
				out[0], out[1] = ratioRange(ref[lo:hi], v[lo:hi])
			}
		})
		if ref != nil && e.coveredBy(len(v), part) {
			return e.useAccuracy(acc)
		}
		hi = e.bi.Gershgorin()
		// The bidiagonal counts are accurate relative to each
		// eigenvalue: Bounds' relative margin 1e-8 covers their rounding.
		covers = func(x float64) bool { return e.bi.CountBelow(x/(1-1e-8)) == 0 }
	} else {
		// T[i][j] = (L L^T)[i][j] / sqrt(v_i v_j), |i - j| <= k, in
		// float64 for Gershgorin's bound and the bisection's estimate of
		// lambda_min.
		if err := e.bandSetup(); err != nil {
			return err
		}
		for i := 0; i < n; i++ {
			for j := max(0, i-e.k); j <= i; j++ {
				e.band.Set(i, j, e.llt.At(i, j)/math.Sqrt(v[i]*v[j]))
			}
		}
		// Gershgorin's bound on the formed entries, each within a
		// relative (k + 4) u of T's, is raised by a relative 1e-12.
		hi = e.band.Gershgorin()
		// lambda_min(T) >= x iff L L^T - x V is positive semidefinite
		// (V = D^2): proven by the double-word LDL^T of L L^T - y V,
		// y = x / (1 - 1e-8), with positive pivots, where the kernel's
		// modelled backward error (bandModel absL in norm) is at most
		// (y - x) min_i v_i, so that L L^T - x V stays semidefinite. (The
		// float64 factorization of the formed T would carry the rounding
		// of forming it, a relative u cond(L L^T) of lambda_min.)
		minV := math.Inf(1)
		for _, x := range v {
			minV = math.Min(minV, x)
		}
		covers = func(x float64) bool {
			y := x / (1 - 1e-8)
			return e.bandModel()*e.absL <= (y-x)*minV && e.gdd.PositiveDefiniteAbove(y, v, e.ddWork)
		}
		// The least x at which the margin can hold, doubled.
		floorX = 2 * e.bandModel() * e.absL / (1e-8 * minV)
	}
	// The interval in use still covers the spectrum when hi is below its
	// top and no eigenvalue lies below its bottom (one inertia count, with
	// the margin that Bounds allows for rounding in it: a relative 1e-8,
	// and on the band path the factorization's residual too);
	// otherwise bisect for the smallest eigenvalue and widen the new
	// interval by a factor 2 at each end, so that small changes in v do
	// not force new nodes every iteration. (A factor 4 costs about 5% more
	// shifts in all at R = 10^5, a factor 1.3 about as many: it rebuilds
	// more often.)
	if e.quads == nil || !(hi <= e.qhi) || !covers(e.qlo) {
		var lo float64
		if e.k == 1 {
			lo, hi = e.bi.Bounds(e.lo)
		} else {
			lo, hi = e.band.Bounds(e.lo, e.work)
			lo = bandLowerBound(lo, hi, floorX, covers)
		}
		if err := checkSpectrum(lo, hi); err != nil {
			return err
		}
		e.lo = lo
		e.qlo, e.qhi = lo/2, hi*2
		e.quads = map[float64]linalg.InvSqrtRational{}
		if e.k == 1 {
			// The reference of coveredByScaling: v and the bounds
			// just proved for T(v).
			if e.vRef == nil {
				e.vRef = make([]float64, n)
			}
			copy(e.vRef, v)
			e.loRef, e.hiRef = lo, hi
		}
	}
	return e.useAccuracy(acc)
}

// bandLowerBound returns a lower bound on lambda_min(T) that covers
// proves, from the float64 estimate est of the formed T (0 where that
// failed, as it does when rounding in forming T exceeds lambda_min:
// momentum 0.99 at R = 4000), Gershgorin's upper bound hi and the least
// value floor that covers can prove at all: est if proven, else a
// bisection in log x over [max(floor, hi 2^-1000), min(est, hi)] on the
// proof alone, to within a factor 2^(1/16); 0 (no bound) where none is
// proven.
func bandLowerBound(est, hi, floor float64, covers func(float64) bool) float64 {
	if est > 0 && covers(est) {
		return est
	}
	a, b := math.Max(math.Log2(floor), math.Log2(hi)-1000), math.Log2(hi)
	if est > 0 {
		b = math.Log2(est)
	}
	if !(a < b) || !covers(math.Exp2(a)) {
		return 0
	}
	for b-a > 1.0/16 {
		if m := (a + b) / 2; covers(math.Exp2(m)) {
			a = m
		} else {
			b = m
		}
	}
	return math.Exp2(a)
}

// releaseIteration drops the buffers that only phi uses (the kernel's
// workspace and the reference multipliers of coveredByScaling), before
// rowSq allocates its own at large R. phi reallocates them if called again.
func (e *structuredEvaluator) releaseIteration() {
	e.ws, e.vRef, e.squares = nil, nil, false
}

// useAccuracy makes e.q the approximation of relative accuracy acc on the
// interval in use. The bidiagonal kernel evaluates the shifts in groups
// of linalg.InvSqrtLanes, so its cost is the number of groups: where
// grouped, the
// node count is the smallest multiple of InvSqrtLanes whose measured
// error is at most acc (at most maxNodeGroups groups), and the accuracy
// that the rest of the group buys comes free.
func (e *structuredEvaluator) useAccuracy(acc float64) error {
	if e.grouped() {
		for g := 1; ; g++ {
			q, ok := e.quads[float64(g)]
			if !ok {
				q = linalg.NewInvSqrtRationalN(e.qlo, e.qhi, g*linalg.InvSqrtLanes)
				e.quads[float64(g)] = q
			}
			if q.RelErr <= acc || g >= maxNodeGroups {
				e.q = q
				return nil
			}
		}
	}
	acc = math.Pow(10, math.Floor(math.Log10(acc)))
	q, ok := e.quads[acc]
	if !ok {
		q = linalg.NewInvSqrtRational(e.qlo, e.qhi, acc)
		e.quads[acc] = q
	}
	e.q = q
	return nil
}

// maxNodeGroups bounds the node groups of useAccuracy: 12 groups, 192
// nodes (NewInvSqrtRational stops at 200).
const maxNodeGroups = 12

// coveredByScaling reports whether the interval in use provably covers
// the spectrum of T(v) (bidiagonal case), by comparison with the reference
// multipliers vRef of the last interval built, without an inertia count.
// T(v) = E T(vRef) E with E = diag(sqrt(vRef_i / v_i)), so by Ostrowski's
// theorem (Horn and Johnson, Matrix Analysis, Thm. 4.5.9) every eigenvalue
// of T(v) is that of T(vRef) times a factor in [min_i vRef_i / v_i,
// max_i vRef_i / v_i]: lambda_min(T(v)) >= loRef min and
// lambda_max(T(v)) <= hiRef max, where loRef and hiRef are the bounds
// proved for T(vRef) (with their own rounding margins). The computed G of
// v and of vRef are row scalings of each other up to a relative rounding
// of about 2u per entry (u = 2^-53; none for entries +-1, as for prefix
// sums), which moves the singular values of a bidiagonal matrix by a
// relative (2n - 1) 2u at most (Demmel and Kahan, "Accurate singular
// values of bidiagonal matrices", SIAM J. Sci. Stat. Comput. 11(5), 1990),
// so the ratios are widened by a relative margin 16 n u + 1e-10, which
// also covers their own rounding. When the check fails, setup falls back
// to Gershgorin and an inertia count, as without it.
func (e *structuredEvaluator) coveredByScaling(v []float64) bool {
	if e.quads == nil || e.vRef == nil {
		return false
	}
	return e.coveredBy(len(v), chunkParts(len(v), 2, func(lo, hi int, out []float64) {
		out[0], out[1] = ratioRange(e.vRef[lo:hi], v[lo:hi])
	}))
}

// coveredBy is coveredByScaling given, for each chunk c of the n entries,
// the least and largest vRef_i / v_i at part[2c] and part[2c+1].
func (e *structuredEvaluator) coveredBy(n int, part []float64) bool {
	rmin, rmax := math.Inf(1), 0.0
	for c := 0; c < len(part); c += 2 {
		rmin, rmax = math.Min(rmin, part[c]), math.Max(rmax, part[c+1])
	}
	margin := 16*float64(n)*0x1p-53 + 1e-10
	return e.loRef*rmin*(1-margin) >= e.qlo && e.hiRef*rmax*(1+margin) <= e.qhi
}

// ratioRange returns the least and the largest ref_i / v_i.
func ratioRange(ref, v []float64) (rmin, rmax float64) {
	rmin = math.Inf(1)
	for i, x := range v {
		r := ref[i] / x
		if r < rmin {
			rmin = r
		}
		if r > rmax {
			rmax = r
		}
	}
	return rmin, rmax
}

// checkSpectrum returns an error unless [lo/4, 4 hi], the widest interval
// a rational approximation of the inverse square root is built on from
// the bounds lo and hi, is one that linalg accepts
// (linalg.InvSqrtInterval: positive, within 2^-960 .. 2^960, with a ratio
// of at most 2^960). lo = 0 is the report that no positive lower bound
// could be proven in floating point: an eigenvalue under- or overflowed,
// or, with hi well inside the range, the matrix is numerically singular
// (its smallest eigenvalue below the rounding of its largest: the dense
// path's M = D A^T A D on momentum 0.99 at R = 1000, cond(A)^2 above
// 1/u). [Optimal] scales the workload first, so the former happens only
// when the spread of the multipliers itself leaves the floating-point
// range.
func checkSpectrum(lo, hi float64) error {
	if !linalg.InvSqrtInterval(lo/4, hi*4) {
		return &spectrumError{lo: lo, hi: hi}
	}
	return nil
}

// spectrumError is checkSpectrum's error: the spread of the workload's
// entries leaves the floating-point range, or the matrix is numerically
// singular (a strategy's Factorize reports it as a *ParamError naming the
// workload).
type spectrumError struct{ lo, hi float64 }

// singular reports that the spectrum is within the floating-point range
// but its lower end could not be proven positive: the matrix is
// numerically singular, not out of range.
func (e *spectrumError) singular() bool {
	return !(e.lo > 0) && e.hi > 0x1p-900 && e.hi < 0x1p900
}

func (e *spectrumError) Error() string {
	if e.singular() {
		return fmt.Sprintf("factorize: numerical breakdown: the fixed-point map's matrix is numerically singular in float64 (its eigenvalues lie in [0, %g]: the smallest is below the rounding of the largest)", e.hi)
	}
	return fmt.Sprintf("factorize: numerical breakdown: the eigenvalues of the fixed-point map's matrix lie in [%g, %g], outside the floating-point range", e.lo, e.hi)
}

// setAccuracy sets the relative accuracy of the rational approximation
// that phi uses: far from the fixed point the iteration needs far less
// than full accuracy, and fewer shifts make each evaluation cheaper. The
// error bound phi returns is that of the approximation actually used, so
// the certificate stays valid whatever acc is. acc is clamped to
// [quadTol, 1e-2] (and see useAccuracy).
// residualFraction is the accuracy asked of phi relative to the last
// residual: 1e-1 where the nodes go by groups (see fixedPointFrom), 1e-2
// otherwise. (The band case asked 1e-4 while its float64 evaluation's
// rounding stopped the residual near 1e-8, so that the rounding floor was
// counted; the double-word kernel has no such floor, and 1e-2 took 358
// iterations and 9.8 s against 399 and 15.0 s at R = 1000, momentum 0.99,
// gap 1e-10.)
func (e *structuredEvaluator) residualFraction() float64 {
	if e.grouped() {
		return 1e-1
	}
	return 1e-2
}

// grouped reports whether the node counts go by whole groups of
// linalg.InvSqrtLanes (see useAccuracy): in the bidiagonal case from order
// minParallel on. Below it an evaluation is cheap, and the smaller
// problems keep the iterates (and the iteration counts the docs quote) of
// the fewest-node schedule.
func (e *structuredEvaluator) grouped() bool {
	return e.k == 1 && len(e.bi.Diag) >= minParallel
}

func (e *structuredEvaluator) setAccuracy(acc float64) {
	e.want = math.Min(1e-2, math.Max(quadTol, acc))
}

func (e *structuredEvaluator) phi(ctx context.Context, v, dst []float64) (float64, error) {
	if err := e.setup(v, e.want); err != nil {
		return 0, err
	}
	if e.k == 1 {
		if e.squares {
			e.ws.InvSqrtDiagSquares(e.q, dst, runtime.GOMAXPROCS(0))
		} else {
			if e.ws == nil {
				e.ws = linalg.NewInvSqrtWorkspace(len(v))
			}
			e.bi.InvSqrtDiagParallel(e.q, dst, e.ws, runtime.GOMAXPROCS(0))
		}
	} else {
		// Band case: the diagonal of D (L L^T + s V)^{-1} D for every
		// shift s, in double-word arithmetic (see bandRelErr).
		clear(e.accH)
		clear(e.accL)
		for j, s := range e.q.Shifts {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
			if e.gdd.AddScaledInverseDiag(s, v, e.q.Weights[j], e.accH, e.accL, e.ddWork) > 0 {
				return 0, fmt.Errorf("factorize: numerical breakdown: a shifted band matrix of the structured path (shift %g) is not positive definite in double-word arithmetic", s)
			}
		}
		for i := range dst {
			dst[i] = e.accH[i] + e.accL[i]
		}
		return e.bandRelErr(), nil
	}
	return e.relErr(len(v)), nil
}

// relErr bounds the relative error of phi: the quadrature's error, plus
// rounding in the differential recurrences, which grows like a random walk
// over the n entries (measured: 2.4e-14 at n = 100,000 against the closed
// form of linalg's tests, where 2 sqrt(n) u = 7e-14), and a few units per
// shift in the sum over shifts.
func (e *structuredEvaluator) relErr(n int) float64 {
	return e.q.RelErr + (2*math.Sqrt(float64(n))+4*float64(len(e.q.Shifts)))*0x1p-53
}

func (e *structuredEvaluator) errorBound(ctx context.Context, v, ph []float64) (float64, error) {
	if e.k == 1 {
		return e.relErr(len(v)), nil
	}
	return e.bandRelErr(), nil
}

// roundingCause names what limits the certificate when the rounding
// floor stops the solver: "" (the generic text) in the bidiagonal case.
func (e *structuredEvaluator) roundingCause() string {
	if e.k == 1 {
		return ""
	}
	if e.llLo > 0 && e.q.Shifts != nil {
		if d := e.bandModel() * e.absL / e.llLo; d/(1-d) > e.bandRelErr()/2 {
			return "the structured evaluation's modelled double-word rounding (the band case, k >= 2: relative u^2 cond(L L^T), L = A^{-1})"
		}
	}
	return "the structured evaluation's float64 rounding and the measured error of its rational approximation (the band case, k >= 2: about 3e-15 relative in each phi_i)"
}

// entryErrors returns per-entry error bounds: nil, the structured
// path's bound is relative and the same for every entry.
func (e *structuredEvaluator) entryErrors() []float64 { return nil }

// unitDD bounds, relatively, the error of each double-word operation of
// the band kernel (linalg.SymBandDD; ddfloat's bounds are at most
// 15u^2 + 56u^3 < 2^-100 = 64 u^2).
const unitDD = 0x1p-100

// bandSetup computes, once per workload, the band case's double-word
// L L^T (gdd), the bound absL >= || |L| |L|^T ||_2 and the proven lower
// bound llLo on lambda_min(L L^T) (L = A^{-1}) that bandRelErr needs
// (gramBandDD). It returns an error when L L^T cannot be shown positive
// definite in double-word arithmetic.
func (e *structuredEvaluator) bandSetup() error {
	if e.llLo > 0 {
		return nil
	}
	inv, _ := e.w.InverseBand()
	var err error
	e.gdd, e.absL, e.llLo, err = gramBandDD(inv, len(e.accH), e.k, e.ddWork)
	// L L^T rounded to float64 (the high parts), for the estimates.
	e.llt = linalg.SymBand{N: e.gdd.N, K: e.gdd.K, Data: e.gdd.Hi}
	return err
}

// gramBandDD returns L L^T in double-word arithmetic
// (linalg.GramBandDD) for the lower-triangular band matrix L (inv, of
// order n with k subdiagonals), a bound absL >= || |L| |L|^T ||_2
// (Gershgorin on the magnitudes, raised by a relative 1e-12) and a lower
// bound llLo on lambda_min(L L^T), proven by a double-word LDL^T of
// L L^T - x I with positive pivots at x (from a float64 estimate, halved
// until it has): under the kernel's backward error model lambda_min >=
// x - ddBandModel(k) absL. work has length
// linalg.ScaledInverseDiagWork(n, k). It returns an error when L L^T
// cannot be shown positive definite that way.
func gramBandDD(inv *mat.TriBandDense, n, k int, work []float64) (g linalg.SymBandDD, absL, llLo float64, err error) {
	g = linalg.GramBandDD(n, k, inv.At)
	for i := 0; i < n; i++ {
		r := 0.0
		for j := max(0, i-k); j <= min(n-1, i+k); j++ {
			a := 0.0
			for p := max(0, max(i, j)-k); p <= min(i, j); p++ {
				a += math.Abs(inv.At(i, p) * inv.At(j, p))
			}
			r += a
		}
		absL = math.Max(absL, r)
	}
	absL *= 1 + 1e-12
	llt := linalg.SymBand{N: n, K: k, Data: g.Hi}
	lo, _ := llt.Bounds(0, make([]float64, n*(k+1)+n))
	x := lo * (1 - 1e-6)
	if !(x > 0) {
		x = absL * 0x1p-60
	}
	for range 200 {
		if g.PositiveDefiniteAbove(x, nil, work) {
			if llLo = x - ddBandModel(k)*absL; llLo > 0 {
				return g, absL, llLo, nil
			}
		}
		x /= 2
	}
	return g, absL, 0, fmt.Errorf("factorize: numerical breakdown: L L^T of the workload's inverse (order %d, %d subdiagonals) is not positive definite in double-word arithmetic", n, k)
}

// bandModel is the backward error, relative to || |L| |L|^T ||, of forming
// L L^T + s V in double-word arithmetic (each entry a sum of at most k + 1
// exact products and the exact s v_i) and of the LDL^T factorization and
// selected inversion (see ddBandModel).
func (e *structuredEvaluator) bandModel() float64 { return ddBandModel(e.k) }

// ddBandModel is the modelled backward error of linalg.SymBandDD's kernels
// on a band of k off-diagonals, relative to the norm of the sum of the
// magnitudes of the terms that form the matrix: the float64 kernels'
// model c u, c = 2 (k + 5), with u replaced by unitDD (above every
// double-word operation's relative bound), plus twice the componentwise
// bound of the kernels' sums of at most k + 1 products (ddfloat.AddProd,
// normalized once: (1.5 m (m + 1) + 12 m + 4) u^2 of the terms'
// magnitudes for m terms). A model, as for the float64 kernels, not a
// theorem (docs/solver.md).
func ddBandModel(k int) float64 {
	return 2*float64(k+5)*unitDD + 2*ddSumBound(float64(k+1))
}

// ddSumBound is ddfloat.AddProd's componentwise bound for m terms
// (products of double-words), (1.5 m (m + 1) + 12 m + 4) u^2, u = 2^-53.
func ddSumBound(m float64) float64 {
	return (1.5*m*(m+1) + 12*m + 4) * 0x1p-106
}

// bandRelErr bounds the relative error of each phi_i in the band case
// (k >= 2; see phi). With L = A^{-1}, D = diag(sqrt(v)) and V = D^2,
// (T + s I)^{-1} = D Y D, Y = (L L^T + s V)^{-1}, so the kernel computes
// Z_ii = v_i Y_ii without forming T. A backward error F of L L^T + s V with
// ||F||_2 <= bandModel absL moves Y to (L L^T + s V + F)^{-1}; as
// L L^T + s V >= llLo I, F is within delta = bandModel absL / llLo of it
// in the Loewner order, so every Z_ii moves by a relative
// delta / (1 - delta) at most, for every shift. The weighted sum over the
// K shifts (positive weights and terms, accumulated by ddfloat.AddProd)
// adds ddSumBound(K), its rounding to float64 u. The rational approximation adds its own relative error
// (RelErr, measured in float64 on its interval, which covers T's
// spectrum) and, for that measurement's own rounding, (K + 3) u (the
// float64 evaluation of r(x) sqrt(x), positive terms). The sum of the
// parts is raised by a relative 1e-6 for their products.
func (e *structuredEvaluator) bandRelErr() float64 {
	delta := e.bandModel() * e.absL / e.llLo
	if !(delta < 0.5) {
		return math.Inf(1)
	}
	u := 0x1p-53
	nq := float64(len(e.q.Shifts))
	return (e.q.RelErr + (nq+4)*u + ddSumBound(nq) + delta/(1-delta)) * (1 + 1e-6)
}

// gramBand returns L L^T for the lower-triangular band matrix L (inv, of
// order n with k subdiagonals): a symmetric band matrix with k
// off-diagonals, entry (i, j), j <= i, the sum over p from max(0, i - k) to
// j of L[i][p] L[j][p] in that order.
func gramBand(inv *mat.TriBandDense, n, k int) linalg.SymBand {
	g := linalg.NewSymBand(n, k)
	for i := 0; i < n; i++ {
		for j := max(0, i-k); j <= i; j++ {
			s := 0.0
			for p := max(0, i-k); p <= j; p++ {
				s += inv.At(i, p) * inv.At(j, p)
			}
			g.Set(i, j, s)
		}
	}
	return g
}

func (e *structuredEvaluator) root(ctx context.Context, v []float64) ([]float64, error) {
	if err := e.setup(v, quadTol); err != nil {
		return nil, err
	}
	n := len(v)
	y := make([]float64, n*n)
	if e.k == 1 && len(e.work) < 2*n {
		e.work = make([]float64, 2*n) // the bidiagonal kernel's work (2 R)
	}
	for j, s := range e.q.Shifts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if e.k == 1 {
			e.bi.AddShiftedInverse(y, n, s, e.q.Weights[j], e.work)
		} else {
			e.band.AddShiftedInverse(y, s, e.q.Weights[j], e.work)
		}
	}
	return y, nil
}

// rowSq returns the squared row norms of B for the feasible X = D^{-1}
// (D S D)^{1/2} D^{-1} of multipliers v (before any scaling), or nil when the
// workload is not a (weighted) prefix sum. With L = A^{-1} and
// T = D^{-1} L L^T D^{-1}, B B^T = A X^{-1} A^T = L^T D^{-1} T^{-1/2} D A^T;
// row r of L^T D^{-1} has two entries (r and r+1) and column r of D A^T is
// D a with a's entries after r set to zero (A[r][j] = a_j for j <= r), so
// [BidiagGram.PrefixSolveEnds] gives all n diagonal entries in O(n) per
// shift. Their sum is tr(T^{-1/2}), the loss.
func (e *structuredEvaluator) rowSq(v []float64) []float64 {
	if e.k != 1 || (e.w.Name() != "prefix" && e.w.Name() != "weighted") {
		return nil
	}
	// MaxSE is a reported metric, not part of the certificate: the
	// accuracy the certifying iteration used (below tol relative) is
	// enough, and costs fewer shifts than full accuracy.
	if e.setup(v, e.want) != nil {
		return nil // v was evaluated by phi; MaxSE is then not computed
	}
	inv, _ := e.w.InverseBand()
	n := len(v)
	rhs := make([]float64, n)
	for j := range rhs {
		rhs[j] = math.Sqrt(v[j]) / inv.At(j, j)
	}
	// Row r of L^T D^{-1} is (G[r][r], G[r+1][r]) = (Diag[r], Sub[r+1]).
	// The shifts go in two fixed halves, each summed into its own vector
	// in the order of the shifts, and the halves are added at the end.
	// The solves run on up to rowSqWorkers goroutines; each adds its
	// shift's terms only after the shift before it in its half, so the
	// result does not depend on the number of goroutines.
	g, h := e.bi.Diag, e.bi.Sub
	ns := len(e.q.Shifts)
	out, second := make([]float64, n), make([]float64, n)
	// added[j] is closed once shift j's terms are in its half's sum.
	added := make([]chan struct{}, ns)
	for j := range added {
		added[j] = make(chan struct{})
	}
	var next atomic.Int64
	solve := func() {
		zr, zr1, work := make([]float64, n), make([]float64, n), make([]float64, 2*n)
		for {
			j := int(next.Add(1) - 1)
			if j >= ns {
				return
			}
			e.bi.PrefixSolveEnds(e.q.Shifts[j], rhs, zr, zr1, work)
			sum := second
			if j < ns/2 {
				sum = out
			}
			if j != 0 && j != ns/2 {
				<-added[j-1]
			}
			wt := e.q.Weights[j]
			for r := 0; r < n-1; r++ {
				sum[r] += wt * (g[r]*zr[r] + h[r+1]*zr1[r])
			}
			sum[n-1] += wt * (g[n-1] * zr[n-1])
			close(added[j])
		}
	}
	workers := rowSqWorkers(n, ns)
	var wg sync.WaitGroup
	for range workers - 1 {
		wg.Go(solve)
	}
	solve()
	wg.Wait()
	for r := range out {
		out[r] += second[r]
	}
	return out
}

// rowSqWorkers returns the number of goroutines of [structuredEvaluator.rowSq]
// at order n with ns shifts: up to GOMAXPROCS, ns and 8, and at most as many
// as keep their buffers (32 n bytes each) within 512 MiB, though never fewer
// than two where GOMAXPROCS and ns allow (the two fixed halves of before).
// At R = 10^6 that is 8 goroutines and 256 MB, at R = 10^7 two and 640 MB.
func rowSqWorkers(n, ns int) int {
	return max(min(runtime.GOMAXPROCS(0), ns, 8, max(2, (512<<20)/(32*max(n, 1)))), 1)
}
