package secagg

import (
	"fmt"
	"testing"
)

// BenchmarkAddMask measures the mask expansion: AES-256-CTR keystream added
// as little-endian uint64, in bytes of mask per second.
//
//	go test -run '^$' -bench AddMask ./secagg/
func BenchmarkAddMask(b *testing.B) {
	for _, d := range []int{1 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("d=%d", d), func(b *testing.B) {
			dst := make([]uint64, d)
			key := make([]byte, 32)
			b.SetBytes(int64(8 * d))
			for b.Loop() {
				addMask(dst, key, false)
			}
		})
	}
}

// BenchmarkRun is a whole in-process run, no dropouts.
//
//	go test -run '^$' -bench Run ./secagg/
func BenchmarkRun(b *testing.B) {
	for _, c := range []struct{ n, d int }{{10, 1e4}, {10, 1e6}} {
		b.Run(fmt.Sprintf("n=%d/d=%d", c.n, c.d), func(b *testing.B) {
			in := randomInputs(1, c.n, c.d)
			ctx := testContext(c.n, 2*c.n/3+1, c.d)
			rng := testRand(1)
			for b.Loop() {
				if _, _, err := Run(ctx, in, nil, rng, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
