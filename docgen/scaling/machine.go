package main

import (
	"bufio"
	"cmp"
	"os"
	"os/exec"
	"runtime"
	"strings"
)

// machine describes where the measurements ran.
type machine struct {
	CPU        string // model name from /proc/cpuinfo
	NumCPU     int
	GOMAXPROCS int
	GoVersion  string // of the toolchain that built this command
	GoOnPath   string // `go version` of the toolchain that builds mfsolve
	OS, Arch   string
	MemTotal   string // from /proc/meminfo
	CoreType   string // OPENBLAS_CORETYPE, if set
	LoadBefore string // /proc/loadavg at the start
	LoadAfter  string // /proc/loadavg at the end
	Kernel     string
}

// describeMachine collects what can be found about the machine; missing
// pieces are "unknown".
func describeMachine() machine {
	m := machine{
		CPU:        procField("/proc/cpuinfo", "model name"),
		NumCPU:     runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		GoVersion:  runtime.Version(),
		OS:         runtime.GOOS,
		Arch:       runtime.GOARCH,
		MemTotal:   procField("/proc/meminfo", "MemTotal"),
		CoreType:   cmp.Or(os.Getenv("OPENBLAS_CORETYPE"), "(not set)"),
		LoadBefore: loadAvg(),
		Kernel:     readTrim("/proc/sys/kernel/osrelease"),
	}
	if out, err := exec.Command("go", "version").Output(); err == nil {
		m.GoOnPath = strings.TrimSpace(string(out))
	} else {
		m.GoOnPath = "unknown"
	}
	return m
}

// procField returns the value of the first "key : value" line of a /proc
// file whose key is key, or "unknown".
func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// loadAvg returns the 1, 5 and 15 minute load averages, or "unknown".
func loadAvg() string {
	f := strings.Fields(readTrim("/proc/loadavg"))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// readTrim returns the trimmed content of a small file, or "unknown".
func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}
