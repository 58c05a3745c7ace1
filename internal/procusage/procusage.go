// Package procusage reads the CPU time and peak resident memory of a
// process, from getrusage(2), for the commands that report them beside
// wall-clock times (docgen/scaling, bench/rusage). Where the platform has
// no getrusage (Known is false) every reader reports 0.
package procusage
