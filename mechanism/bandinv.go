package mechanism

import (
	"fmt"

	"github.com/dpmf/dpmf/factorize"
)

// bandInverse streams C^{-1} Z when C^{-1} = T_u is lower-triangular
// banded Toeplitz with p coefficients (the bisr and bandinv strategies of
// factorize; Kalinin, McKenna, Upadhyay, Lampert 2025):
//
//	y_r = sum_{k=0}^{min(r, p-1)} u_k z_{r-k},
//
// which needs the last p-1 rows of Z: p-1 buffers.
type bandInverse struct {
	u    []float64
	past [][]float64 // past[r mod (p-1)] = z_r
	dim  int
}

// newBandInverse reads u from f.C (factorize.InverseBandOf).
func newBandInverse(f *factorize.Factorization, dim int) (*bandInverse, error) {
	u, err := factorize.InverseBandOf(f)
	if err != nil {
		return nil, fmt.Errorf("mechanism: strategy %q declares a banded C^{-1}: %v (use WithDense)", f.Strategy, err)
	}
	k := &bandInverse{u: u, past: make([][]float64, len(u)-1), dim: dim}
	for i := range k.past {
		k.past[i] = make([]float64, dim)
	}
	return k, nil
}

func (k *bandInverse) prepare(int) {}

func (k *bandInverse) block(g *gen, r, lo int, dst []float64) {
	if g.scratch == nil {
		g.scratch = make([]float64, blockLen)
	}
	z := g.scratch[:len(dst)]
	g.fill(r, lo, z)
	hi := lo + len(dst)
	u0 := k.u[0]
	for i, v := range z {
		dst[i] = u0 * v
	}
	n := len(k.past)
	for d := 1; d <= n && d <= r; d++ {
		c := k.u[d]
		if c == 0 {
			continue
		}
		p := k.past[(r-d)%n][lo:hi]
		for i := range dst {
			dst[i] += c * p[i]
		}
	}
	if n > 0 {
		copy(k.past[r%n][lo:hi], z)
	}
}

func (k *bandInverse) stateBytes() int64 { return int64(len(k.past)) * int64(k.dim) * 8 }

func (k *bandInverse) String() string { return fmt.Sprintf("banded-inverse(p=%d)", len(k.u)) }
