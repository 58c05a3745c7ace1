package optim

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// The kernels of the compact direction, as dispatched (the assembly where
// the CPU has AVX2 and FMA) and as their Go loops, against exact sums
// (big.Float) within the rounding bound of any order of summation, for
// every length up to 40 and a few long ones, each slice at an offset in a
// larger array with NaN beyond its end (a read outside shows as NaN) and
// every destination followed by guard values (a write outside shows), dst
// aliasing src for the update.

// exactDot returns sum a_i g_i and sum |a_i g_i|, exactly rounded.
func exactDot[T float32 | float64](g []T, a []float32) (float64, float64) {
	s, abs := new(big.Float).SetPrec(2000), new(big.Float).SetPrec(2000)
	for i := range g {
		p := new(big.Float).SetPrec(2000).Mul(big.NewFloat(float64(g[i])), big.NewFloat(float64(a[i])))
		s.Add(s, p)
		abs.Add(abs, new(big.Float).Abs(p))
	}
	v, _ := s.Float64()
	w, _ := abs.Float64()
	return v, w
}

// within32 returns v in an array of len(v)+8 entries at offset off, NaN
// after it.
func within32(v []float32, off int) []float32 {
	arr := make([]float32, off+len(v)+8)
	for i := range arr {
		arr[i] = float32(math.NaN())
	}
	copy(arr[off:], v)
	return arr[off : off+len(v)]
}

func within64(v []float64, off int) []float64 {
	arr := make([]float64, off+len(v)+8)
	for i := range arr {
		arr[i] = math.NaN()
	}
	copy(arr[off:], v)
	return arr[off : off+len(v)]
}

func TestCompactKernelsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	type dots struct {
		name string
		d64  func(g []float64, a, b, c, d []float32) (float64, float64, float64, float64)
		d32  func(g []float32, a, b, c, d []float32) (float64, float64, float64, float64)
		axpy func(dst, src []float64, ca, cb, cc, cd float64, a, b, c, d []float32)
	}
	sets := []dots{
		{"go", dot4[float64], dot4[float32], axpy4},
		{"dispatched", dot4x64Impl, dot4x32Impl, axpy4Impl},
	}
	lengths := []int{}
	for n := 0; n <= 40; n++ {
		lengths = append(lengths, n)
	}
	lengths = append(lengths, 1000, 1023, 4099)
	const eps = 0x1p-53
	for _, set := range sets {
		for _, n := range lengths {
			off := n % 5
			vs := make([][]float32, 4)
			for j := range vs {
				v := make([]float32, n)
				for i := range v {
					v[i] = float32(rng.NormFloat64() * math.Exp(3*rng.NormFloat64()))
				}
				vs[j] = within32(v, (off+j)%8)
			}
			g64 := make([]float64, n)
			g32 := make([]float32, n)
			for i := range g64 {
				g64[i] = rng.NormFloat64()
				g32[i] = float32(rng.NormFloat64())
			}
			g64, g32 = within64(g64, off), within32(g32, off+1)
			var got64, got32 [4]float64
			got64[0], got64[1], got64[2], got64[3] = set.d64(g64, vs[0], vs[1], vs[2], vs[3])
			got32[0], got32[1], got32[2], got32[3] = set.d32(g32, vs[0], vs[1], vs[2], vs[3])
			for j := range vs {
				w, abs := exactDot(g64, vs[j])
				if !(math.Abs(got64[j]-w) <= float64(n+1)*eps*abs) {
					t.Errorf("%s: dot4 (float64 g), n = %d, vector %d: %v, exact %v", set.name, n, j, got64[j], w)
				}
				w, abs = exactDot(g32, vs[j])
				if !(math.Abs(got32[j]-w) <= float64(n+1)*eps*abs) {
					t.Errorf("%s: dot4 (float32 g), n = %d, vector %d: %v, exact %v", set.name, n, j, got32[j], w)
				}
			}
			// The update, into a separate dst with guards and in place.
			cs := [4]float64{rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()}
			src := make([]float64, n)
			for i := range src {
				src[i] = rng.NormFloat64() * 10
			}
			src = within64(src, off)
			for _, inPlace := range []bool{false, true} {
				arr := make([]float64, n+3)
				for i := range arr {
					arr[i] = 7
				}
				dst := arr[:n]
				s := src
				if inPlace {
					copy(dst, src)
					s = dst
				}
				want := make([]float64, n)
				bound := make([]float64, n)
				for i := range want {
					e := new(big.Float).SetPrec(2000).SetFloat64(src[i])
					abs := math.Abs(src[i])
					for j, c := range cs {
						p := new(big.Float).SetPrec(2000).Mul(big.NewFloat(c), big.NewFloat(float64(vs[j][i])))
						e.Add(e, p)
						abs += math.Abs(c * float64(vs[j][i]))
					}
					want[i], _ = e.Float64()
					bound[i] = 6 * eps * abs
				}
				set.axpy(dst, s, cs[0], cs[1], cs[2], cs[3], vs[0], vs[1], vs[2], vs[3])
				for i := range want {
					if !(math.Abs(dst[i]-want[i]) <= bound[i]) {
						t.Errorf("%s: axpy4 (in place %v), n = %d, entry %d: %v, exact %v", set.name, inPlace, n, i, dst[i], want[i])
						break
					}
				}
				for i := n; i < len(arr); i++ {
					if arr[i] != 7 {
						t.Errorf("%s: axpy4, n = %d: wrote entry %d beyond dst", set.name, n, i)
					}
				}
			}
		}
	}
}
