package factorize

import (
	"fmt"
	"math"
	"runtime"

	"github.com/dpmf/dpmf/internal/par"
	"github.com/dpmf/dpmf/linalg"
	"gonum.org/v1/gonum/mat"
)

// semisepX returns the feasible X of multipliers v in quasiseparable form:
// X = D^{-1} r(T) D^{-1} / cmax with its diagonal raised to 1, where
// r(T) = sum_t w_t (T + s_t I)^{-1} is the structured evaluator's rational
// approximation of T^{-1/2} and cmax = max_i r(T)_ii / v_i. Each shifted
// inverse of the tridiagonal T is semiseparable of rank one, so X is
// quasiseparable of order K = len(q.Shifts), with generators
//
//	P[i][t] = rho_t[i] / sqrt(v_i),  A[i][t] = rho_t[i],
//	Q[j][t] = w_t diag_t[j] / (sqrt(v_j) cmax)
//
// (see [linalg.BidiagGram.ShiftedInverseGen]). With normalized (the
// second-order bound's point, see [secondOrder]) X is r(T) scaled to unit
// diagonal instead: 1 / sqrt(v_i) becomes 1 / sqrt(r(T)_ii) and cmax = 1.
// This is the matrix that factorsFromRoot forms densely, without the
// O(R^2 K) dense sum. It needs a bidiagonal A^{-1} (e.k == 1, so R >= 2).
func (e *structuredEvaluator) semisepX(v []float64, q linalg.InvSqrtRational, normalized bool) linalg.QuasiSep {
	n := len(v)
	k := len(q.Shifts)
	x := linalg.NewQuasiSep(n, k)
	// The shifted inverses are independent (each O(n), a few divisions an
	// entry): groups of shiftGroup shifts, a cache line of a generator row,
	// on the available cores. Each worker has its own pair of vectors.
	const shiftGroup = 8
	groups := (k + shiftGroup - 1) / shiftGroup
	workers := par.Workers(groups, float64(n)*float64(k)*shiftWork)
	scratch := make([][2][]float64, workers)
	par.Pool(groups, workers, func(wk, g int) bool {
		sc := &scratch[wk]
		if sc[0] == nil {
			sc[0], sc[1] = make([]float64, n), make([]float64, n)
		}
		diag, rho := sc[0], sc[1]
		for t := g * shiftGroup; t < min(k, (g+1)*shiftGroup); t++ {
			e.bi.ShiftedInverseGen(q.Shifts[t], diag, rho)
			wt := q.Weights[t]
			for i := 0; i < n; i++ {
				x.P[i*k+t] = rho[i]
				x.A[i*k+t] = rho[i]
				x.Q[i*k+t] = wt * diag[i]
			}
		}
		return true
	})
	// Y's diagonal, sum_t w_t diag_t[i], summed over t in order.
	ydiag := make([]float64, n)
	for i := range ydiag {
		d := 0.0
		for _, y := range x.Q[i*k : i*k+k] {
			d += y
		}
		ydiag[i] = d
	}
	isq := make([]float64, n)
	for i, vi := range v {
		isq[i] = 1 / math.Sqrt(vi)
		if normalized {
			isq[i] = 1 / math.Sqrt(ydiag[i])
		}
	}
	// The same scaling as factorsFromRoot: X = D^{-1} Y D^{-1}, divided by
	// its largest diagonal entry, diagonal raised to 1.
	cmax := 0.0
	for i, d := range ydiag {
		cmax = math.Max(cmax, d*isq[i]*isq[i])
	}
	if normalized {
		cmax = 1
	}
	for j := 0; j < n; j++ {
		f := isq[j] / cmax
		for t := 0; t < k; t++ {
			x.P[j*k+t] *= isq[j]
			x.Q[j*k+t] *= f
		}
		x.Diag[j] = 1
	}
	return x
}

// shiftWork is the work of one entry of a shifted inverse's generators in
// [structuredEvaluator.semisepX], in par's units (about a multiply-add
// each, see [par.Grain]): about 30 for its three divisions and the stores
// of three generators.
const shiftWork = 30

// optimalFactor returns the causal factor of the feasible X of
// multipliers v on a workload with a bidiagonal inverse, by the structure
// of X (docs/solver.md): X in quasiseparable form
// ([structuredEvaluator.semisepX]) and its reverse Cholesky factor C in
// the same form, in O(R K^2) ([linalg.QuasiSep.ReverseCholesky]).
func (e *structuredEvaluator) optimalFactor(v []float64, normalized bool) (linalg.QuasiSep, error) {
	if err := e.setup(v, quadTol); err != nil {
		return linalg.QuasiSep{}, err
	}
	// The factor's order K is the number of nodes, which is the state its
	// noise stream keeps: use the fewest nodes of full accuracy, not the
	// whole groups of nodes the solver's kernel evaluates at large R.
	q := e.q
	if e.grouped() {
		q = linalg.NewInvSqrtRational(e.qlo, e.qhi, quadTol)
	}
	cf, err := e.semisepX(v, q, normalized).ReverseCholesky()
	if err != nil {
		return linalg.QuasiSep{}, fmt.Errorf("factorize: optimal X (R = %d): %w", len(v), err)
	}
	return cf, nil
}

// quasiSepFactors forms the dense factors of the causal factor cf of a
// workload w with a bidiagonal inverse: C written densely
// (quasiSepC) and B = A C^{-1} row by row by forward substitution
// (quasiSepB), O(R^2 K) in all. The two are independent (B comes from
// C's generators, not from the dense C) and are formed at once, each
// split over the available cores: the runtime clears the memory it hands
// out again in the goroutine that allocates it (about 0.1 s for each
// factor at R = 10^4), so the two clearings overlap too. It agrees with
// factorsFromRoot (the dense Cholesky factorization and triangular
// inverse, O(R^3)) up to rounding.
func quasiSepFactors(cf linalg.QuasiSep, w *Workload) (b, c *mat.Dense) {
	return formBoth(func() *mat.Dense { return quasiSepB(cf, w) }, func() *mat.Dense { return quasiSepC(cf) })
}

// formBoth returns formB() and formC(), the first computed on a goroutine
// of its own while the caller computes the second.
func formBoth(formB, formC func() *mat.Dense) (b, c *mat.Dense) {
	bc := make(chan *mat.Dense, 1)
	go func() { bc <- formB() }()
	c = formC()
	return <-bc, c
}

// quasiSepC forms the quasiseparable C densely, split over the available
// cores ([linalg.QuasiSep.Dense]).
func quasiSepC(cf linalg.QuasiSep) *mat.Dense {
	n := cf.N
	data := make([]float64, n*n)
	cf.Dense(data, runtime.GOMAXPROCS(0))
	return mat.NewDense(n, n, data)
}

// quasiSepB forms B = A C^{-1} densely for the quasiseparable C and the
// workload w with a bidiagonal inverse L = A^{-1}: row i of B is
// (row i of C^{-1} - L[i][i-1] B[i-1]) / L[i][i]. The columns are swept in
// blocks (linalg.ColumnBlocks) over the available cores; each column's
// arithmetic is the same whatever the number of workers.
func quasiSepB(cf linalg.QuasiSep, w *Workload) *mat.Dense {
	n := cf.N
	dst := make([]float64, n*n)
	inv, _ := w.InverseBand()
	linalg.ColumnBlocks(n, runtime.GOMAXPROCS(0), func(c0, c1 int) {
		cf.InverseRows(c0, c1, func(i int, row []float64) {
			// dst is zero above the diagonal, so B[i-1][i] reads as 0.
			out := dst[i*n+c0 : i*n+c0+len(row)]
			d := inv.At(i, i)
			if i == 0 {
				for j, x := range row {
					out[j] = x / d
				}
				return
			}
			l := inv.At(i, i-1)
			prev := dst[(i-1)*n+c0 : (i-1)*n+c0+len(row)]
			for j, x := range row {
				out[j] = (x - l*prev[j]) / d
			}
		})
	})
	return mat.NewDense(n, n, dst)
}

// denseMetrics is [ComputeMetrics] under single participation for dense
// factors, reading the raw rows (the same sums in the same order).
func denseMetrics(b, c *mat.Dense) Metrics {
	r, m := b.Dims()
	colSq := make([]float64, r)
	for i := 0; i < m; i++ {
		for j, x := range c.RawRowView(i) {
			colSq[j] += x * x
		}
	}
	gamma2 := 0.0
	for _, s := range colSq {
		gamma2 = math.Max(gamma2, s)
	}
	frob, maxRow := 0.0, 0.0
	for i := 0; i < r; i++ {
		s := 0.0
		for _, x := range b.RawRowView(i) {
			s += x * x
		}
		frob += s
		maxRow = math.Max(maxRow, s)
	}
	return singleMetrics(r, math.Sqrt(gamma2), frob, maxRow)
}
