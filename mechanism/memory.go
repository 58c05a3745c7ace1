package mechanism

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
// once; 0 where it is unknown, which turns checkFits off. It is the twin of
// package factorize's (both unexported: no package that both may import
// holds it). Tests replace it.
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
