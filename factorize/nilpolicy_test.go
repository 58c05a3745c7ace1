package factorize

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"gonum.org/v1/gonum/mat"
)

// The package doc's policy: a nil matrix (also a typed nil in the
// interface) and a number of rounds out of range are errors, never panics.
// Before, the sensitivity rules, Bands and Gamma dereferenced a
// (*mat.SymDense)(nil) or (*mat.Dense)(nil), and Prefix(2^62) panicked in
// makeslice.
func TestNilMatricesAndHugeRAreErrors(t *testing.T) {
	var sym *mat.SymDense
	var dense *mat.Dense
	assert.NotPanics(t, func() {
		_, err := EpochSensitivity(sym, 1)
		assert.Error(t, err)
		_, err = MinSepSensitivity(sym, 1, 1)
		assert.Error(t, err)
		_, err = MinSepBanded(sym, 1, 1)
		assert.Error(t, err)
		_, err = MinSepBound(sym, 1, 1)
		assert.Error(t, err)
		assert.True(t, math.IsNaN(Gamma(dense)))
		assert.True(t, math.IsNaN(Gamma(nil)))
		for _, R64 := range []int64{MaxRounds + 1, 1 << 62, math.MaxInt} {
			if R64 > math.MaxInt {
				continue // 64-bit only
			}
			R := int(R64)
			_, err = Prefix(R)
			assert.Error(t, err, "Prefix(%d)", R)
			_, err = Momentum(R, 0.5)
			assert.Error(t, err, "Momentum(%d)", R)
		}
	})
}
