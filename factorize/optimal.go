package factorize

import (
	"context"
	"errors"
)

// Optimal returns the factorization that minimises ||A C^{-1}||_F^2 subject to
// every column of C having unit norm (Denisov, McMahan, Rush, Smith, Thakurta
// 2022, Theorem 3.2).
//
// TODO(solver): implementation in progress.
func Optimal(ctx context.Context, w *Workload, opt Options) (*Factorization, error) {
	if _, err := opt.withDefaults(); err != nil {
		return nil, err
	}
	return nil, errors.New("factorize: optimal not implemented yet")
}
