// Package sysmem reads how much memory the machine has, from Linux's
// /proc/meminfo, for the checks that refuse an allocation that cannot
// succeed before it is made (the Go runtime's out-of-memory failure ends
// the process rather than panicking). Where /proc/meminfo is missing the
// readers report nothing and the checks are skipped.
package sysmem

import (
	"bufio"
	"errors"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Info is the memory /proc/meminfo reports, in bytes; a field is 0 where
// its line is missing.
type Info struct {
	// Total is MemTotal, Available MemAvailable (missing on kernels
	// before 3.14), Swap SwapTotal.
	Total, Available, Swap uint64
}

// Read returns the machine's memory, or an error where /proc/meminfo
// cannot be read or has no MemTotal line.
func Read() (Info, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return Info{}, err
	}
	defer f.Close()
	return Parse(f)
}

// Parse reads a /proc/meminfo file: lines "Name: value kB". It is an error
// if the file cannot be read or has no MemTotal line.
func Parse(r io.Reader) (Info, error) {
	var m Info
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			continue
		}
		v, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			continue
		}
		switch name {
		case "MemTotal":
			m.Total = v * 1024
		case "MemAvailable":
			m.Available = v * 1024
		case "SwapTotal":
			m.Swap = v * 1024
		}
	}
	if err := sc.Err(); err != nil {
		return Info{}, err
	}
	if m.Total == 0 {
		return Info{}, errors.New("no MemTotal line in /proc/meminfo")
	}
	return m, nil
}

// Limit returns the most memory the machine can give a process in all,
// physical memory and swap (MemTotal + SwapTotal), read once; 0 where it
// is unknown. An allocation above it cannot succeed. On a 32-bit platform
// it is at most 4 GiB, the process's address space (before, a 386 process
// on a machine of 24 GiB passed checks for 8 GiB that only the runtime's
// out-of-memory failure then ended).
var Limit = sync.OnceValue(func() float64 {
	m, err := Read()
	if err != nil {
		return 0
	}
	return min(float64(m.Total)+float64(m.Swap), addressSpace)
})

// addressSpace is the bytes a pointer can address: 2^32 on 32-bit
// platforms, 2^64 on 64-bit ones.
const addressSpace = float64(math.MaxUint) + 1
