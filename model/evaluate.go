package model

import (
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/dpmf/dpmf/dataset"
)

// BatchEvaluator is implemented by models that can evaluate many parameter
// vectors on a set of samples faster than one at a time (for example with
// one matrix product). [experiment.Problem.Evaluate] uses it when available.
type BatchEvaluator interface {
	// EvaluateBatch writes into loss[k] the average loss over s of the
	// parameter vector xs[k], and into acc[k] the fraction of s it
	// classifies correctly (NaN if the model is not a [Classifier]).
	EvaluateBatch(loss, acc []float64, xs [][]float64, s dataset.Samples)
}

// evalBlock is the number of samples per matrix product in EvaluateBatch:
// a block of margins (evalBlock x len(xs)) stays in cache.
const evalBlock = 2048

// EvaluateBatch computes the margins of a block of samples against all
// parameter vectors with one matrix product, then the losses and
// accuracies. The sums run over the samples in order, so the result does
// not depend on scheduling.
func (l Logistic) EvaluateBatch(loss, acc []float64, xs [][]float64, s dataset.Samples) {
	checkSamples(s)
	K, d, m := len(xs), s.Dim, s.Len()
	if len(loss) != K || len(acc) != K {
		panic("model: EvaluateBatch: output length differs from the number of models")
	}
	if K == 0 {
		return
	}
	xt := mat.NewDense(d, K, nil) // column k is xs[k]
	for k, x := range xs {
		xt.SetCol(k, x)
	}
	sum := make([]float64, K)
	correct := make([]int, K)
	var margins mat.Dense
	for start := 0; start < m; start += evalBlock {
		end := min(start+evalBlock, m)
		a := mat.NewDense(end-start, d, s.X[start*d:end*d])
		margins.Reset()
		margins.Mul(a, xt)
		for j := start; j < end; j++ {
			y := s.Y[j]
			row := margins.RawRowView(j - start)
			for k, z := range row {
				sum[k] += softplus(-y * z)
				if (z >= 0) == (y > 0) {
					correct[k]++
				}
			}
		}
	}
	for k := range loss {
		loss[k] = sum[k]/float64(m) + 0.5*l.L2*floats.Dot(xs[k], xs[k])
		acc[k] = float64(correct[k]) / float64(m)
	}
}
