package main

import (
	"testing"

	"github.com/dpmf/dpmf/internal/procusage"
)

// The table cells and the RSS check: measured values where the platform has
// getrusage, "unknown" and a failed check where it does not.
func TestUsageCells(t *testing.T) {
	if !procusage.Known {
		if rssCell(2e8) != unknownUsage || cpuCell(1.5) != unknownUsage {
			t.Errorf("cells %q, %q; want %q", rssCell(2e8), cpuCell(1.5), unknownUsage)
		}
		if got, want := rssCheck(1, 3e9), "peak RSS unknown, limit 3000.0 MB not checked"; got != want {
			t.Errorf("rssCheck: %q, want %q", got, want)
		}
		return
	}
	if rssCell(2e8) != "200.0 MB" || cpuCell(1.5) != "1.50 s" {
		t.Errorf("cells %q, %q; want 200.0 MB, 1.50 s", rssCell(2e8), cpuCell(1.5))
	}
	if got, want := rssCheck(3.5e9, 3e9), "peak RSS 3500.0 MB > 3000.0 MB"; got != want {
		t.Errorf("rssCheck over: %q, want %q", got, want)
	}
	if got := rssCheck(3e9, 3e9); got != "" {
		t.Errorf("rssCheck at the limit: %q, want none", got)
	}
}
