package factorize

import (
	"fmt"
	"math"

	"github.com/dpmf/dpmf/internal/sysmem"
)

// machineBytes returns the memory the machine can give a process in all,
// physical memory and swap ([sysmem.Limit]); 0 where it is unknown, which
// turns the check off. Tests replace it.
var machineBytes = sysmem.Limit

// checkDenseFits returns a *ParamError (Param "R") when the dense factors
// of an R-round factorization, B and C of at least R x R float64 each,
// need more memory than the machine has in all (machineBytes): such an
// allocation cannot succeed, and the Go runtime's out-of-memory failure
// ends the process rather than panicking, so it is refused up front. It is
// a lower bound on what a dense solve needs (SolveBytes estimates the
// whole), so it never refuses a solve that could fit.
//
// Where the machine's memory is unknown (no /proc/meminfo: Windows, macOS)
// it still refuses an R x R matrix whose bytes an int cannot count,
// 8 R^2 > math.MaxInt: on a 32-bit platform R above 16383, where R^2 itself
// wraps from R = 46341 (R = 65536: 0) and the identity strategy allocated
// an empty B and panicked with an index out of range.
func checkDenseFits(r int) error {
	if r > maxDenseRounds {
		return &ParamError{Param: "R", Value: r, Want: fmt.Sprintf("a number of rounds whose dense R x R factors (%.3g GB each) this platform's int can index (at most %d rounds; a loss-only strategy needs no dense factors)", 8*float64(r)*float64(r)/1e9, maxDenseRounds)}
	}
	have := machineBytes()
	need := 2 * 8 * float64(r) * float64(r)
	if have == 0 || need <= have {
		return nil
	}
	return &ParamError{Param: "R", Value: r, Want: fmt.Sprintf("a number of rounds whose dense B and C (%.3g GB) fit in this machine's %.3g GB of memory (a loss-only strategy needs no dense factors)", need/1e9, have/1e9)}
}

// maxDenseRounds is the largest R whose R x R float64 matrix has at most
// math.MaxInt bytes (R <= (MaxInt/8)/R in integer arithmetic, which
// float64 cannot decide near 2^63): 16383 on a 32-bit platform, 2^30 - 1
// on a 64-bit one.
var maxDenseRounds = func() int {
	fits := func(r int) bool { return r <= (math.MaxInt/8)/r }
	r := int(math.Sqrt(math.MaxInt / 8))
	for fits(r + 1) {
		r++
	}
	for !fits(r) {
		r--
	}
	return r
}()

// checkBandFits returns a *ParamError (Param "bands") when the banded
// solver's largest arrays for R = n, b bands and a workload inverse of
// bandwidth p, n (2 (b + p) + 1) float64s (its rows of Z and Z^2), have
// more bytes than an int counts: a loss-only solve forms no dense factors,
// so checkDenseFits does not bound it, and on 386 R = 10^5 with 5 10^4
// bands wrapped n (2 kq + 1) and panicked in makeslice. (The commands
// check the memory the solve needs first; this bounds the library call.)
func checkBandFits(n, b, p int) error {
	if elems := float64(n) * (2*(float64(b)+float64(p)) + 1); 8*elems >= math.MaxInt {
		return &ParamError{Param: "bands", Value: b, Want: fmt.Sprintf("fewer bands for R = %d: the banded solver's arrays of %.3g GB each exceed what this platform's int can index", n, 8*elems/1e9)}
	}
	return nil
}
