package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/dpmf/dpmf/internal/procusage"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: rusage LABEL COMMAND [ARG...]")
		os.Exit(2)
	}
	cmd := exec.Command(os.Args[2], os.Args[3:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start).Seconds()
	rc := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			fmt.Fprintf(os.Stderr, "rusage: %v\n", err)
			os.Exit(1)
		}
		rc = ee.ExitCode()
	}
	cpu, rss := procusage.Child(cmd.ProcessState)
	fmt.Fprintf(os.Stderr, "rusage %s wall %.3f cpu %.3f rss_MB %.1f rc %d GOMAXPROCS=%s\n",
		os.Args[1], wall, cpu, float64(rss)/(1<<20), rc, os.Getenv("GOMAXPROCS"))
	os.Exit(rc)
}
