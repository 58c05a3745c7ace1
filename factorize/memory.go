package factorize

import (
	"fmt"

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
func checkDenseFits(r int) error {
	have := machineBytes()
	need := 2 * 8 * float64(r) * float64(r)
	if have == 0 || need <= have {
		return nil
	}
	return &ParamError{Param: "R", Value: r, Want: fmt.Sprintf("a number of rounds whose dense B and C (%.3g GB) fit in this machine's %.3g GB of memory (a loss-only strategy needs no dense factors)", need/1e9, have/1e9)}
}
