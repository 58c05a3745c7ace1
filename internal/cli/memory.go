package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// MemAvailable returns the memory available to a new process in bytes:
// MemAvailable from /proc/meminfo, or MemTotal on kernels that do not report
// MemAvailable. It is an error where /proc/meminfo does not exist; the
// memory check is then skipped.
func MemAvailable() (uint64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return parseMeminfo(f)
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

// parseMeminfo reads the MemAvailable (or else MemTotal) line, in kB, of a
// /proc/meminfo file.
func parseMeminfo(r io.Reader) (uint64, error) {
	fields := map[string]uint64{}
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
		fields[name] = v * 1024
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	if v, ok := fields["MemAvailable"]; ok {
		return v, nil
	}
	if v, ok := fields["MemTotal"]; ok {
		return v, nil
	}
	return 0, errors.New("no MemAvailable or MemTotal line in /proc/meminfo")
}

// FormatBytes formats n bytes with a decimal unit: "1.9 TB", "22.9 GB".
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
	return fmt.Sprintf("%.1f %s", n, units[i])
}
