package cli

import (
	"cmp"
	"fmt"

	"github.com/dpmf/dpmf/internal/sysmem"
)

// MemAvailable returns the memory available to a new process in bytes:
// MemAvailable from /proc/meminfo, or MemTotal on kernels that do not report
// MemAvailable ([sysmem.Read]). It is an error where /proc/meminfo cannot be
// read; the memory check is then skipped.
func MemAvailable() (uint64, error) {
	m, err := sysmem.Read()
	if err != nil {
		return 0, err
	}
	return cmp.Or(m.Available, m.Total), nil
}

// Short returns the memory avail reports and whether need bytes are more
// than that; short is false (the check is skipped) when avail is nil or
// fails.
func Short(need float64, avail func() (uint64, error)) (have float64, short bool) {
	if avail == nil {
		return 0, false
	}
	h, err := avail()
	return float64(h), err == nil && need > float64(h)
}

// FormatBytes formats n bytes with a decimal unit: "1.9 TB", "22.9 GB";
// from 1000 EB on in exponent form, "4.8e+09 EB".
func FormatBytes(n float64) string {
	units := []string{"bytes", "kB", "MB", "GB", "TB", "PB", "EB"}
	i := 0
	for n >= 1000 && i < len(units)-1 {
		n /= 1000
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f bytes", n)
	}
	if n >= 1000 {
		// Beyond the largest unit.
		return fmt.Sprintf("%.2g %s", n, units[i])
	}
	return fmt.Sprintf("%.1f %s", n, units[i])
}
