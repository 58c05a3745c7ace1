package model

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/floats"

	"github.com/dpmf/dpmf/dataset"
)

// Model is a per-sample loss f(x; a, y) of a parameter vector x on one
// client's sample: a feature vector a and a label y. The loss of a set of
// samples is the average of the per-sample losses, so any regularization
// term belongs in the per-sample loss (it is then also clipped with the
// gradient, which keeps the sensitivity bound of the private algorithms
// unconditional).
//
// Methods must not modify their arguments other than dst, and must be safe
// for concurrent use (the optimiser calls them from several goroutines).
type Model interface {
	// NumParams returns the length of x for features of dimension d.
	NumParams(d int) int
	// Loss returns f(x; a, y).
	Loss(x, a []float64, y float64) float64
	// Grad writes the gradient of f(.; a, y) at x into dst, which has the
	// length of x.
	Grad(dst, x, a []float64, y float64)
}

// Minimizer is implemented by models that can minimise their average loss
// over a set of samples themselves (for example by Newton's method). Models
// without it are minimised by [LBFGS] from their gradient.
type Minimizer interface {
	// Minimize writes into dst a point at which the gradient of the average
	// loss over s has Euclidean norm at most tol, starting from x0. It
	// returns an error if it cannot reach tol (for example when the minimum
	// is not attained).
	Minimize(ctx context.Context, dst, x0 []float64, s dataset.Samples, tol float64) error
}

// Classifier is implemented by models whose prediction can be right or wrong
// on a sample; the optimiser then reports accuracy.
type Classifier interface {
	// Correct reports whether the model x predicts the label y of a.
	Correct(x, a []float64, y float64) bool
}

// AverageLoss returns the average of m's loss over the samples s at x.
func AverageLoss(m Model, x []float64, s dataset.Samples) float64 {
	sum := 0.0
	for j := 0; j < s.Len(); j++ {
		sum += m.Loss(x, s.Row(j), s.Y[j])
	}
	return sum / float64(s.Len())
}

// AverageGrad writes the gradient of the average loss over s at x into dst,
// using buf (of the length of x) as scratch.
func AverageGrad(m Model, dst, buf, x []float64, s dataset.Samples) {
	clear(dst)
	for j := 0; j < s.Len(); j++ {
		m.Grad(buf, x, s.Row(j), s.Y[j])
		floats.Add(dst, buf)
	}
	floats.Scale(1/float64(s.Len()), dst)
}

// Accuracy returns the fraction of samples m classifies correctly at x, and
// false if m is not a [Classifier].
func Accuracy(m Model, x []float64, s dataset.Samples) (float64, bool) {
	c, ok := m.(Classifier)
	if !ok {
		return math.NaN(), false
	}
	n := 0
	for j := 0; j < s.Len(); j++ {
		if c.Correct(x, s.Row(j), s.Y[j]) {
			n++
		}
	}
	return float64(n) / float64(s.Len()), true
}

// checkSamples panics if s is inconsistent: a programmer error.
func checkSamples(s dataset.Samples) {
	if s.Dim <= 0 || len(s.X) != s.Dim*len(s.Y) {
		panic(fmt.Sprintf("model: %d features for %d samples of dimension %d", len(s.X), len(s.Y), s.Dim))
	}
}
