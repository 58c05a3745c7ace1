package factorize

import (
	"context"
	"errors"
)

// Banded returns a factorization whose C is lower-triangular and banded with
// opt.Bands bands. TODO(mechanism helper).
func Banded(ctx context.Context, w *Workload, opt Options) (*Factorization, error) {
	return nil, errors.New("factorize: banded not implemented yet")
}
