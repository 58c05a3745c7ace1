//go:build !amd64 || purego || noasm

package factorize

// recordedArith reports whether this build computes with the arithmetic
// that recorded losses in tests were measured with (see
// arith_asm_test.go): not this one.
const recordedArith = false
