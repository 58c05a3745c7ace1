//go:build !amd64 || purego

package linalg

// dualDot returns sum a_t b_t and sum (da_t b_t + a_t db_t) over slices of
// equal length (the value and the derivative of an inner product).
func dualDot(a, da, b, db []float64) (s, ds float64) { return dualDotGo(a, da, b, db) }

var dot = dotGo
