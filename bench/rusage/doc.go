// Command rusage runs a command and prints, on standard error after the
// command's own output, its wall time, its CPU time (user + system) and its
// peak resident memory, as one line:
//
//	rusage LABEL wall 25.068 cpu 44.432 rss_MB 316.8 rc 0 GOMAXPROCS=2
//
// It is what bench/quietpair.sh times each run with, on machines without
// GNU time. The exit code is the command's (1 if it could not be run). CPU
// time and peak memory come from the child's rusage (getrusage(2)), so they
// are reported on Unix only; elsewhere they are 0.
//
// Usage:
//
//	rusage LABEL COMMAND [ARG...]
package main
