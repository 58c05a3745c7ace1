//go:build !linux

package main

import "errors"

// canPin says whether pinToCPUs works on this platform.
const canPin = false

// pinToCPUs fails outside Linux.
func pinToCPUs(int) error {
	return errors.New("pinning to CPUs needs Linux (sched_setaffinity)")
}
