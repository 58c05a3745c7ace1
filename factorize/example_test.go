package factorize_test

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/dpmf/dpmf/factorize"
)

// The optimal factorization of the prefix-sum workload for 100 rounds,
// certified to a relative duality gap of 1e-10, against independent noise.
func ExampleOptimal() {
	w, err := factorize.Prefix(100)
	if err != nil {
		panic(err)
	}
	f, err := factorize.Optimal(context.Background(), w, factorize.Options{})
	if err != nil {
		panic(err)
	}
	id, _ := factorize.IdentityStrategy{}.Factorize(context.Background(), w, factorize.SingleParticipation())
	fmt.Printf("optimal:  loss %.4f, RMSE %.4f, gap <= 1e-10: %t\n", f.Metrics.Loss, f.Metrics.RMSE, f.Gap <= 1e-10)
	fmt.Printf("identity: loss %.0f, RMSE %.4f\n", id.Metrics.Loss, id.Metrics.RMSE)
	fmt.Printf("noise operator %v\n", f.Operator)
	b, _, err := f.Factors() // formed densely only when asked for
	if err != nil {
		panic(err)
	}
	fmt.Printf("B is %d x %d, C is lower-triangular: %t\n", b.RawMatrix().Rows, b.RawMatrix().Cols, f.CheckCausal() == nil)
	// Output:
	// optimal:  loss 499.7443, RMSE 2.2355, gap <= 1e-10: true
	// identity: loss 5050, RMSE 7.1063
	// noise operator semiseparable(K=29)
	// B is 100 x 100, C is lower-triangular: true
}

// Only the loss, in O(R) memory: no dense matrix is formed.
func ExampleOptimal_lossOnly() {
	w, _ := factorize.Prefix(5000)
	f, err := factorize.Optimal(context.Background(), w, factorize.Options{LossOnly: true, Tol: 1e-8})
	if err != nil {
		panic(err)
	}
	fmt.Printf("R = 5000: RMSE %.4f (certified gap %.0e or better)\n", f.Metrics.RMSE, 1e-8)
	// Output:
	// R = 5000: RMSE 3.4524 (certified gap 1e-08 or better)
}

// Every strategy reports the same metrics, under the participation it is
// given: here single participation and 4 epochs of 16 rounds.
// A workload without a banded inverse takes the general (dense) path:
// here sums over a sliding window of 4 rounds, from its matrix as a file
// would give it. Options.Method = Dense forces that path on any workload,
// which cross-checks the structured one on prefix sums.
func ExampleOptimal_dense() {
	const r = 60
	a := mat.NewDense(r, r, nil)
	for i := 0; i < r; i++ {
		for j := max(0, i-3); j <= i; j++ {
			a.Set(i, j, 1)
		}
	}
	w, err := factorize.NewWorkload(a)
	if err != nil {
		panic(err)
	}
	_, banded := w.InverseBand()
	f, err := factorize.Optimal(context.Background(), w, factorize.Options{LossOnly: true})
	if err != nil {
		panic(err)
	}
	// Independent noise (C = I) has loss ||A||_F^2 = 4 R - (1 + 2 + 3).
	fmt.Printf("window: banded inverse %t, gap <= 1e-10 %t, below the identity's %d: %t\n", banded, f.Gap <= 1e-10, 4*r-6, f.Metrics.Loss < 4*r-6)

	p, _ := factorize.Prefix(r)
	structured, _ := factorize.Optimal(context.Background(), p, factorize.Options{LossOnly: true})
	dense, _ := factorize.Optimal(context.Background(), p, factorize.Options{LossOnly: true, Method: factorize.Dense})
	fmt.Printf("prefix: structured and dense agree within 2e-10: %t\n", math.Abs(dense.Metrics.Loss/structured.Metrics.Loss-1) <= 2e-10)
	// Output:
	// window: banded inverse false, gap <= 1e-10 true, below the identity's 234: true
	// prefix: structured and dense agree within 2e-10: true
}

func ExampleStrategy() {
	w, _ := factorize.Prefix(64)
	strategies := []factorize.Strategy{
		factorize.IdentityStrategy{},
		factorize.TreeStrategy{},
		factorize.SqrtStrategy{},
		factorize.SqrtStrategy{Normalized: true},
		factorize.BandedStrategy{Bands: 8},
		factorize.OptimalStrategy{},
	}
	for _, p := range []factorize.Participation{factorize.SingleParticipation(), factorize.FixedEpochs(4)} {
		for _, s := range strategies {
			f, err := s.Factorize(context.Background(), w, p)
			if err != nil {
				panic(err)
			}
			m := f.Metrics
			fmt.Printf("%-9s %-16s gamma %.3f  sensitivity %.3f  RMSE %.3f  MaxSE %.2f\n", p, s.Name(), m.Gamma, m.UnitSensitivity.Value, m.RMSE, m.MaxSE)
		}
	}
	// Output:
	// single    identity         gamma 1.000  sensitivity 1.000  RMSE 5.701  MaxSE 64.00
	// single    tree             gamma 2.646  sensitivity 2.646  RMSE 4.594  MaxSE 42.00
	// single    sqrt             gamma 1.546  sensitivity 1.546  RMSE 2.230  MaxSE 5.71
	// single    sqrt-normalized  gamma 1.000  sensitivity 1.000  RMSE 2.128  MaxSE 4.89
	// single    banded           gamma 1.000  sensitivity 1.000  RMSE 2.653  MaxSE 11.00
	// single    optimal          gamma 1.000  sensitivity 1.000  RMSE 2.100  MaxSE 5.30
	// epochs:4  identity         gamma 1.000  sensitivity 2.000  RMSE 11.402  MaxSE 256.00
	// epochs:4  tree             gamma 2.646  sensitivity 6.633  RMSE 11.519  MaxSE 264.00
	// epochs:4  sqrt             gamma 1.546  sensitivity 3.961  RMSE 5.714  MaxSE 37.47
	// epochs:4  sqrt-normalized  gamma 1.000  sensitivity 2.668  RMSE 5.677  MaxSE 34.82
	// epochs:4  banded           gamma 1.000  sensitivity 2.000  RMSE 5.307  MaxSE 44.01
	// epochs:4  optimal          gamma 0.589  sensitivity 1.000  RMSE 4.408  MaxSE 33.48
}

// Streaming the optimum with K = 8 state vectors per coordinate for
// 2000 rounds: no dense matrix is formed, and the loss and sensitivity
// are those of the factor actually used.
func ExampleSemisepStrategy() {
	w, _ := factorize.Prefix(2000)
	f, err := factorize.SemisepStrategy{Buffers: 8}.Factorize(context.Background(), w, factorize.SingleParticipation())
	if err != nil {
		panic(err)
	}
	fmt.Printf("K = %d: sensitivity %.6f, loss within %.0e of the optimum: %t\n",
		f.Semisep.C.K, f.Metrics.Gamma, 1e-4, f.Semisep.Excess < 1e-4)
	// Output:
	// K = 8: sensitivity 1.000000, loss within 1e-04 of the optimum: true
}

// B and C formed apart, each on its own goroutine, as a program that
// writes them to files would form them: the first one ready can be
// written while the other is still being formed.
func ExampleFactorization_FactorsLazily() {
	w, _ := factorize.Prefix(200)
	f, err := factorize.Optimal(context.Background(), w, factorize.Options{})
	if err != nil {
		panic(err)
	}
	lb, lc, err := f.FactorsLazily() // checks f; forms nothing yet
	if err != nil {
		panic(err)
	}
	fmt.Printf("B will be %d x %d, C %d x %d\n", lb.Rows, lb.Cols, lc.Rows, lc.Cols)
	bc := make(chan *mat.Dense, 1)
	go func() { bc <- lb.Form() }()
	c := lc.Form()
	b := <-bc
	// B C = A, the prefix-sum matrix, to rounding.
	var prod mat.Dense
	prod.Mul(b, c)
	worst := 0.0
	for i := range 200 {
		for j := range 200 {
			want := 0.0
			if j <= i {
				want = 1
			}
			worst = math.Max(worst, math.Abs(prod.At(i, j)-want))
		}
	}
	fmt.Printf("max |B C - A| below 1e-12: %t\n", worst < 1e-12)
	// Output:
	// B will be 200 x 200, C 200 x 200
	// max |B C - A| below 1e-12: true
}
