package model_test

import (
	"context"
	"fmt"

	"github.com/dpmf/dpmf/dataset"
	"github.com/dpmf/dpmf/experiment"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/model"
)

// Minimize finds the minimiser of a model's average loss; a model without
// a Minimize method of its own (here least squares) is minimised by L-BFGS.
// On y = 2 a_0 - a_1 exactly, least squares recovers (2, -1).
func ExampleMinimize() {
	s := dataset.Samples{
		X:   []float64{1, 0, 0, 1, 1, 1, 2, 1},
		Y:   []float64{2, -1, 1, 3},
		Dim: 2,
	}
	x := make([]float64, 2)
	if err := model.Minimize(context.Background(), squared{}, x, make([]float64, 2), s, 1e-12); err != nil {
		panic(err)
	}
	fmt.Printf("x = (%.6f, %.6f)\n", x[0], x[1])
	// Output: x = (2.000000, -1.000000)
}

// LBFGS minimises any smooth function from its gradient: here
// f(x) = (x_0 - 1)^2 + 10 (x_1 + 2)^2.
func ExampleLBFGS() {
	f := func(x []float64) float64 { return (x[0]-1)*(x[0]-1) + 10*(x[1]+2)*(x[1]+2) }
	grad := func(g, x []float64) { g[0], g[1] = 2*(x[0]-1), 20*(x[1]+2) }
	x := make([]float64, 2)
	if err := model.LBFGS(context.Background(), x, []float64{0, 0}, f, grad, 1e-12); err != nil {
		panic(err)
	}
	fmt.Printf("x = (%.6f, %.6f)\n", x[0], x[1])
	// Output: x = (1.000000, -2.000000)
}

// squared is a model of your own: least squares, f(x; a, y) = (x.a - y)^2 / 2.
// It has no Minimize method, so x* and the per-round minima are found by
// L-BFGS from its gradient.
type squared struct{}

func (squared) NumParams(d int) int { return d }

func (squared) Loss(x, a []float64, y float64) float64 {
	r := -y
	for k := range x {
		r += x[k] * a[k]
	}
	return r * r / 2
}

func (squared) Grad(dst, x, a []float64, y float64) {
	r := -y
	for k := range x {
		r += x[k] * a[k]
	}
	for k := range dst {
		dst[k] = r * a[k]
	}
}

// Plugging in a model: any type with NumParams, Loss and Grad.
func Example_customModel() {
	ctx := context.Background()
	data, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: 5}.Dataset(2, 40, 4, 3)
	if err != nil {
		panic(err)
	}
	p, err := experiment.NewProblem(ctx, data, squared{}, experiment.ProblemOptions{})
	if err != nil {
		panic(err)
	}
	cfg := fedopt.Config{Algorithm: fedopt.NonPrivate, Eta: 0.005, EtaG: 1, EvalEvery: 40}
	tr, err := experiment.Run(ctx, p, cfg, nil)
	if err != nil {
		panic(err)
	}
	fmt.Printf("loss error %.3f -> %.3f\n", tr.LossError[0], tr.LossError[1])
	fmt.Println("accuracy reported:", tr.Accuracy[1] == tr.Accuracy[1]) // NaN: not a Classifier
	// Output:
	// loss error 0.260 -> 0.076
	// accuracy reported: false
}
