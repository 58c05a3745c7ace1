package fedopt

import (
	"math"

	"gonum.org/v1/gonum/floats"
)

// Clip scales g in place to Euclidean norm at most bound (bound > 0) and
// returns the norm g had. A vector of norm at most bound is left unchanged.
func Clip(g []float64, bound float64) float64 {
	ss := 0.0
	for _, v := range g {
		ss += v * v
	}
	norm := math.Sqrt(ss)
	if math.IsInf(ss, 1) {
		norm = floats.Norm(g, 2) // the scaled algorithm does not overflow
	}
	if norm > bound {
		floats.Scale(bound/norm, g)
	}
	return norm
}
