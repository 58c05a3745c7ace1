package factorize

import (
	"context"
	"errors"
)

// BLT returns a buffered-linear-Toeplitz factorization with opt.Buffers
// buffers. TODO(mechanism helper).
func BLT(ctx context.Context, w *Workload, opt Options) (*Factorization, error) {
	return nil, errors.New("factorize: blt not implemented yet")
}
