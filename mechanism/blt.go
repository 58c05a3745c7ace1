package mechanism

import (
	"fmt"
	"math"

	"github.com/dpmf/dpmf/factorize"
)

// blt streams the noise of a buffered-linear-Toeplitz factorization
// (Dvijotham, McMahan, Pillutla, Steinke, Thakurta 2024): with the
// parameters of [factorize.BLTParams], C^{-1} = diag(scale) T_d and
// d_k = sum_i w_i lambda_i^(k-1) for k >= 1, so
//
//	(T_d z)_r = z_r + sum_i w_i s_i(r),  s_i(r) = sum_{k=1}^{r} lambda_i^(k-1) z_{r-k},
//
// and s_i(r+1) = lambda_i s_i(r) + z_r: one buffer per geometric sequence.
type blt struct {
	w, lambda, scale []float64
	s                [][]float64 // s[i] = s_i(r), one vector per buffer
	dim              int
}

// newBLT takes the parameters that [factorize.BLT] recorded for f, and
// checks them against C's diagonal (C[r][r] = 1/scale[r]).
func newBLT(f *factorize.Factorization, dim int) (*blt, error) {
	p, ok := factorize.BLTParamsOf(f)
	if !ok {
		return nil, fmt.Errorf("mechanism: the BLT factorization has no streaming parameters (its BLT field is nil); use WithDense to stream it from C")
	}
	r, _ := f.C.Dims()
	if len(p.Scale) != r {
		return nil, fmt.Errorf("mechanism: BLT parameters have %d scales for %d rounds", len(p.Scale), r)
	}
	for i := 0; i < r; i++ {
		if c := f.C.At(i, i); math.Abs(c*p.Scale[i]-1) > 1e-12 {
			return nil, fmt.Errorf("mechanism: BLT parameters do not match C: C[%d][%d] = %v, want %v", i, i, c, 1/p.Scale[i])
		}
	}
	k := &blt{w: p.Weights, lambda: p.Lambdas, scale: p.Scale, s: make([][]float64, len(p.Weights)), dim: dim}
	for i := range k.s {
		k.s[i] = make([]float64, dim)
	}
	return k, nil
}

func (k *blt) prepare(int) {}

func (k *blt) block(g *gen, r, lo int, dst []float64) {
	if g.scratch == nil {
		g.scratch = make([]float64, blockLen)
	}
	z := g.scratch[:len(dst)]
	g.fill(r, lo, z)
	copy(dst, z)
	hi := lo + len(dst)
	for b, s := range k.s {
		s := s[lo:hi]
		w, l := k.w[b], k.lambda[b]
		for i, v := range s {
			dst[i] += w * v
			s[i] = l*v + z[i]
		}
	}
	sc := k.scale[r]
	for i := range dst {
		dst[i] *= sc
	}
}

func (k *blt) stateBytes() int64 { return int64(len(k.s)) * int64(k.dim) * 8 }

func (k *blt) String() string { return fmt.Sprintf("blt(k=%d)", len(k.s)) }
