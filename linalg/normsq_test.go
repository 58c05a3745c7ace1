package linalg

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// exactSumAbs returns the exact value of sum_i prod(terms[i]) and of
// sum_i |prod(terms[i])|, rounded to float64 at the end, for finite
// factors: products and sums in big.Float at a precision exact for them.
func exactSumAbs(terms [][]float64) (sum, abs float64) {
	const prec = 4000
	s, a := new(big.Float).SetPrec(prec), new(big.Float).SetPrec(prec)
	for _, tm := range terms {
		p := new(big.Float).SetPrec(prec).SetFloat64(1)
		for _, f := range tm {
			p.Mul(p, new(big.Float).SetPrec(prec).SetFloat64(f))
		}
		s.Add(s, p)
		a.Add(a, p.Abs(p))
	}
	sum, _ = s.Float64()
	abs, _ = a.Float64()
	return sum, abs
}

// The rows of the backward and forward recursions of ColNormsSq,
// ReverseCholesky and BidiagSolveNormsSq (decayRow, transformRow): every
// kernel set's entries against their exact values (each entry rounds at
// most 3 and 10 times), with guards around the destination, every length
// up to 70 and long ones, every offset; the dispatched kernels give the
// bits of the Go loops (their documented claim: no fused multiply-add),
// also with special values in the inputs.
func TestKernelNormsqRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	sameBits := func(x, y float64) bool {
		return math.Float64bits(x) == math.Float64bits(y) || (math.IsNaN(x) && math.IsNaN(y))
	}
	check := func(got, exact, abs float64, rounds int, msg string) {
		t.Helper()
		if bound := gamma(rounds)*abs + float64(rounds)*0x1p-1074; math.Abs(got-exact) > bound {
			t.Fatalf("%s: got %v, exact %v: error %v above the bound %v", msg, got, exact, math.Abs(got-exact), bound)
		}
	}
	ref := kernelSets()[0]
	for _, ks := range kernelSets() {
		for _, n := range testLengths() {
			for off := 0; off < 8; off++ {
				if n > 70 && off%3 != 0 {
					continue
				}
				special := off%2 == 1
				msg := fmt.Sprintf("%s n=%d off=%d special=%v", ks.name, n, off, special)
				vecs := make([][]float64, 7)
				for i := range vecs {
					vecs[i], _ = inArray(randomVec(rng, n, special), (off+i+1)%8)
				}
				wv := randomVec(rng, n, special)
				var c [8]float64
				for i := range c {
					c[i] = rng.NormFloat64()
				}
				gr, ar := rng.NormFloat64(), rng.NormFloat64()

				// decayRow: w[u] = gr g[u] + (ar w[u]) a[u].
				g, a := vecs[0], vecs[1]
				w, wArr := inArray(wv, off)
				ks.decayRow(w, g, a, gr, ar)
				checkGuards(t, wArr, off, n, "decayRow "+msg)
				wRef := append([]float64(nil), wv...)
				ref.decayRow(wRef, g, a, gr, ar)
				for u := 0; u < n; u++ {
					if !sameBits(w[u], wRef[u]) {
						t.Fatalf("decayRow %s: w[%d] = %v, Go %v", msg, u, w[u], wRef[u])
					}
					if !special {
						e, abs := exactSumAbs([][]float64{{gr, g[u]}, {ar, wv[u], a[u]}})
						check(w[u], e, abs, 3, fmt.Sprintf("decayRow %s w[%d]", msg, u))
					}
				}

				// transformRow, c = (da, p1, p2, zaa, zba, q1, q2, xa).
				delta, za, zb, wy1, wy2, x := vecs[1], vecs[2], vecs[3], vecs[4], vecs[5], vecs[6]
				w, wArr = inArray(wv, off)
				ks.transformRow(w, delta, za, zb, wy1, wy2, x, &c)
				checkGuards(t, wArr, off, n, "transformRow "+msg)
				wRef = append(wRef[:0], wv...)
				ref.transformRow(wRef, delta, za, zb, wy1, wy2, x, &c)
				for b := 0; b < n; b++ {
					if !sameBits(w[b], wRef[b]) {
						t.Fatalf("transformRow %s: w[%d] = %v, Go %v", msg, b, w[b], wRef[b])
					}
					if !special {
						e, abs := exactSumAbs([][]float64{
							{c[0], wv[b], delta[b]}, {c[1], za[b]}, {c[2], zb[b]},
							{c[3], wy1[b], delta[b]}, {c[4], wy2[b], delta[b]},
							{c[5], za[b]}, {c[6], zb[b]}, {c[7], x[b]},
						})
						check(w[b], e, abs, 10, fmt.Sprintf("transformRow %s w[%d]", msg, b))
					}
				}
			}
		}
	}
}
