//go:build !unix

package main

import "os"

// usage reports nothing where getrusage(2) is not available.
func usage(*os.ProcessState) (cpu, rssMB float64) { return 0, 0 }
