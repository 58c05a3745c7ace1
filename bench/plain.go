package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"
)

// PlainResult is the outcome of PlainDense.
type PlainResult struct {
	// Loss is the best upper bound seen: the loss of a feasible
	// factorization, within the certified gap of the optimum.
	Loss float64
	// Lower is the best dual lower bound seen on the optimal loss.
	Lower float64
	// Gap is (Loss - Lower) / Lower.
	Gap float64
	// Iterations is the number of fixed-point iterations, each one dense
	// symmetric eigendecomposition (one matrix square root).
	Iterations int
	// V holds the last multipliers.
	V []float64
}

// PlainDense computes the optimal loss min tr(S X^{-1}) subject to
// diag(X) = 1, S = A^T A, for the square, lower-triangular, full-rank
// workload a, by the plain fixed point of Denisov, McMahan, Rush, Smith and
// Thakurta (NeurIPS 2022, Theorem 3.2):
//
//	v <- phi(v) = diag((D S D)^{1/2}),  D = diag(sqrt(v)),  v = 1 at the start,
//
// with (D S D)^{1/2} = Q diag(sqrt(lambda)) Q^T from one dense symmetric
// eigendecomposition (gonum's mat.EigenSym) per iteration and no
// acceleration. It is the reference approach that package factorize is
// measured against and does not use that package.
//
// It stops on the same certificate: for every v, the dual value
// 2 tr((D S D)^{1/2}) - sum(v) is a lower bound on the optimum, and
// tr((D S D)^{1/2}) max(1, max_i phi_i / v_i) is the loss of a feasible X
// (D^{-1} (D S D)^{1/2} D^{-1} scaled to a diagonal at most 1, then the
// diagonal raised to 1), an upper bound. The iteration stops when the
// relative gap between the best bounds seen is at most tol, and fails after
// maxIter iterations.
func PlainDense(ctx context.Context, a mat.Matrix, tol float64, maxIter int) (PlainResult, error) {
	r, c := a.Dims()
	if r != c || r == 0 {
		return PlainResult{}, fmt.Errorf("bench: workload is %d x %d, want a nonempty square matrix", r, c)
	}
	if !(tol > 0) || math.IsInf(tol, 1) {
		return PlainResult{}, fmt.Errorf("bench: tolerance %v, want a finite number > 0", tol)
	}
	if maxIter < 1 {
		return PlainResult{}, fmt.Errorf("bench: iteration limit %d, want at least 1", maxIter)
	}
	n := r
	s := mat.NewSymDense(n, nil)
	s.SymOuterK(1, a.T()) // S = A^T A

	v := slices.Repeat([]float64{1}, n)
	phi := make([]float64, n)
	sq := make([]float64, n)
	m := mat.NewSymDense(n, nil)
	sRaw, mRaw := s.RawSymmetric(), m.RawSymmetric() // upper triangles
	var q mat.Dense
	var eig mat.EigenSym
	res := PlainResult{Lower: math.Inf(-1), Loss: math.Inf(1)}
	for it := 1; it <= maxIter; it++ {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		for i := range sq {
			sq[i] = math.Sqrt(v[i])
		}
		for i := 0; i < n; i++ {
			si := sRaw.Data[i*sRaw.Stride : i*sRaw.Stride+n]
			mi := mRaw.Data[i*mRaw.Stride : i*mRaw.Stride+n]
			for j := i; j < n; j++ {
				mi[j] = sq[i] * si[j] * sq[j]
			}
		}
		if !eig.Factorize(m, true) {
			return res, errors.New("bench: eigendecomposition failed")
		}
		lambda := eig.Values(nil)
		eig.VectorsTo(&q)
		tr := 0.0
		for k, l := range lambda {
			lambda[k] = math.Sqrt(math.Max(l, 0))
			tr += lambda[k]
		}
		for i := 0; i < n; i++ {
			row := q.RawRowView(i)
			p := 0.0
			for k, x := range row {
				p += lambda[k] * x * x
			}
			phi[i] = p
		}
		sumV, ratio := 0.0, 1.0
		for i := range v {
			sumV += v[i]
			ratio = math.Max(ratio, phi[i]/v[i])
		}
		res.Lower = math.Max(res.Lower, 2*tr-sumV)
		res.Loss = math.Min(res.Loss, tr*ratio)
		res.Iterations = it
		res.Gap = (res.Loss - res.Lower) / res.Lower
		if res.Lower > 0 && res.Gap <= tol {
			res.V = slices.Clone(phi)
			return res, nil
		}
		v, phi = phi, v
	}
	res.V = slices.Clone(v)
	return res, fmt.Errorf("bench: plain fixed point not certified after %d iterations: gap %.3g, want at most %.3g", maxIter, res.Gap, tol)
}
