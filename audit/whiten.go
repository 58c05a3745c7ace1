package audit

import (
	"fmt"
	"math"

	"github.com/dpmf/dpmf/factorize"
	"gonum.org/v1/gonum/mat"
)

// whitener undoes the correlation of the noise. The mechanism's noise
// vectors are the rows of W = V M Z with M = A^{-1} B (R x m) and Z of
// independent standard normal entries; per coordinate W has covariance
// V^2 Sigma, Sigma = M M^T. For a square C, M = C^{-1} and C W = V Z; for
// a tall C (the tree) the whitener is L^{-1} with Sigma = L L^T.
type whitener struct {
	c     *mat.Dense    // square C, or nil
	chol  *mat.Cholesky // Sigma = L L^T for a tall C
	prec  *mat.Dense    // P = Sigma^{-1} (C^T C for a square C), if asked for
	lastB float64       // ||M^T 1|| = ||B[R-1, :]||: the final model's noise scale
}

// newWhitener returns the whitener of f's noise; withPrec also forms the
// precision matrix P (an O(R^3) product the replay does not need).
func newWhitener(f *factorize.Factorization, withPrec bool) (*whitener, error) {
	if f.B == nil || f.C == nil || !f.Workload.IsPrefix() {
		return nil, fmt.Errorf("audit: whitening needs the factors of a prefix-sum factorization")
	}
	m, r := f.C.Dims()
	w := &whitener{}
	last := f.B.RawRowView(r - 1)
	w.lastB = math.Sqrt(dot(last, last))
	if m == r {
		w.c = f.C
		if withPrec {
			w.prec = mat.NewDense(r, r, nil)
			w.prec.Mul(f.C.T(), f.C)
		}
		return w, nil
	}
	// M = A^{-1} B: row r of M is B_r - B_{r-1} for prefix sums.
	var mm mat.Dense
	mm.Apply(func(i, j int, v float64) float64 {
		if i > 0 {
			return v - f.B.At(i-1, j)
		}
		return v
	}, f.B)
	var sig mat.SymDense
	sig.SymOuterK(1, &mm)
	w.chol = &mat.Cholesky{}
	if !w.chol.Factorize(&sig) {
		return nil, fmt.Errorf("audit: the noise covariance of %q is not positive definite", f.Strategy)
	}
	if !withPrec {
		return w, nil
	}
	var inv mat.SymDense
	if err := w.chol.InverseTo(&inv); err != nil {
		return nil, fmt.Errorf("audit: inverting the noise covariance of %q: %v", f.Strategy, err)
	}
	w.prec = mat.DenseCopyOf(&inv)
	return w, nil
}

// whiten returns the whitened rows of w (R x d): independent N(0, V^2 I)
// rows if w is the mechanism's noise.
func (wh *whitener) whiten(w *mat.Dense) *mat.Dense {
	var out mat.Dense
	if wh.c != nil {
		out.Mul(wh.c, w)
		return &out
	}
	var l mat.TriDense
	wh.chol.LTo(&l)
	r, d := w.Dims()
	out.CloneFrom(w)
	for j := 0; j < d; j++ {
		col := mat.NewVecDense(r, nil)
		col.CloneFromVec(out.ColView(j))
		_ = col.SolveVec(&l, col)
		out.SetCol(j, col.RawVector().Data)
	}
	return &out
}

// dot returns the inner product of a and b, summed in order (the audit's
// reports are reproducible to the last bit).
func dot(a, b []float64) float64 {
	s := 0.0
	for i, v := range a {
		s += v * b[i]
	}
	return s
}
