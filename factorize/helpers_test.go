package factorize

import "os"

// longTests reports whether the slow tests are enabled (DPMF_LONG=1).
func longTests() bool { return os.Getenv("DPMF_LONG") != "" }
