package ceiling

import (
	"math"
	"runtime"
	"slices"
	"testing"
)

// The kernels against closed forms: x = x a + b from x0 is
// 1 + (x0 - 1) a^n (its fixed point b / (1 - a) is 1), and a stream's sum
// is passes times the array's sum; the pieces come back in order at any
// GOMAXPROCS.
func TestKernels(t *testing.T) {
	const n, a = 100000, 0.999999
	want := 0.0
	for k := range 4 {
		want += 1 + (2.5+float64(k)-1)*math.Pow(a, n)
	}
	if got := Compute(n, 2.5); math.Abs(got-want) > 1e-9*want {
		t.Errorf("Compute(%d, 2.5) = %.15g, want %.15g", n, got, want)
	}
	if got := Stream([]float64{1, 2, 3, 4, 5, 6, 7}, 3); got != 84 {
		t.Errorf("Stream(1..7, 3 passes) = %v, want 84", got)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, p := range []int{1, 2, 3} {
		runtime.GOMAXPROCS(p)
		if got := Split(5, func(i int) float64 { return float64(i * i) }); !slices.Equal(got, []float64{0, 1, 4, 9, 16}) {
			t.Errorf("Split at GOMAXPROCS=%d: %v, want squares in order", p, got)
		}
	}
}
