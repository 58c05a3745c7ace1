//go:build amd64 && !purego && !noasm

package factorize

// recordedArith reports whether this build computes with the arithmetic
// that recorded losses in tests were measured with: amd64, linalg's
// assembly kernels (not -tags purego), gonum's (not -tags noasm) and Go's
// amd64 math.Exp. (The CPU must also have AVX2 and FMA: see
// skipUnlessRecordedArith.)
const recordedArith = true
