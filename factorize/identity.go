package factorize

import (
	"context"

	"gonum.org/v1/gonum/mat"
)

// StrategyIdentity is the name of [IdentityStrategy].
const StrategyIdentity = "identity"

func init() {
	register(StrategyInfo{
		Name: StrategyIdentity, rank: 10, Doc: "C = I: independent noise each round",
		Stream:        "0",
		Workloads:     "every workload",
		proto:         IdentityStrategy{},
		streamVectors: func(Strategy, int) int { return 0 },
		// The factors and a copy of A.
		solveBytes: func(_ Strategy, r int, _ Participation, _ bool) float64 {
			return factorBytes(r, r) + 8*float64(r)*float64(r)
		},
	})
}

// IdentityStrategy is C = I, B = A: independent noise every round. For
// the prefix-sum workload its loss is R(R+1)/2.
type IdentityStrategy struct{}

// Name returns "identity".
func (IdentityStrategy) Name() string { return StrategyIdentity }

// Spec returns "identity".
func (s IdentityStrategy) Spec() string { return specOf(s) }

// Factorize returns the factorization with metrics under p.
func (s IdentityStrategy) Factorize(ctx context.Context, w *Workload, p Participation) (f *Factorization, err error) {
	defer keyed(s, &f, &err)
	return under(ctx, w, p, true, func() (*Factorization, error) { return newIdentity(w) })
}

// newIdentity returns the factorization C = I, B = A of w.
func newIdentity(w *Workload) (*Factorization, error) {
	if err := checkWorkload(w); err != nil {
		return nil, err
	}
	r := w.R()
	b, c := denseOfTri(w.Matrix()), mat.NewDense(r, r, nil)
	for i := 0; i < r; i++ {
		c.Set(i, i, 1)
	}
	return finish(StrategyIdentity, identityOp{r}, w, b, c), nil
}
