package mechanism

import (
	"fmt"

	"github.com/dpmf/dpmf/internal/sysmem"
)

// machineBytes returns the memory the machine can give a process in all,
// physical memory and swap ([sysmem.Limit]); 0 where it is unknown, which
// turns the check off. Tests replace it.
var machineBytes = sysmem.Limit

// checkFits returns a *ParamError naming param when an allocation of need
// bytes exceeds the machine's memory in all (machineBytes): it cannot
// succeed, and the Go runtime's out-of-memory failure ends the process
// rather than panicking, so it is refused up front.
func checkFits(param string, value any, what string, need float64) error {
	have := machineBytes()
	if have == 0 || need <= have {
		return nil
	}
	return &ParamError{Param: param, Value: value, Want: fmt.Sprintf("a size whose %s (%.3g GB) fits in this machine's %.3g GB of memory", what, need/1e9, have/1e9)}
}
