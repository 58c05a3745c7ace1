package factorize

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

// machineBytes returns the memory the machine can give a process in all,
// physical memory and swap (MemTotal + SwapTotal of /proc/meminfo), read
// once; 0 where it is unknown (no /proc/meminfo), which turns the check of
// [checkDenseFits] off. Tests replace it.
var machineBytes = sync.OnceValue(func() float64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	total := 0.0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, _ := strings.Cut(sc.Text(), ":")
		if name != "MemTotal" && name != "SwapTotal" {
			continue
		}
		kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
		if err != nil {
			return 0
		}
		total += 1024 * kb
	}
	return total
})

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
