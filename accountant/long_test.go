package accountant

import "os"

// longTests reports whether the slow cases are enabled (DPMF_LONG=1): go
// test ./... (and CI) runs a subset of the costliest tests' cases that
// still meets every kind of truth they check, DPMF_LONG=1 all of them.
func longTests() bool { return os.Getenv("DPMF_LONG") != "" }
