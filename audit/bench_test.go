package audit

import (
	"context"
	"testing"
)

// BenchmarkReplay200: the replay falsifier for a 200-round, 10-learner run
// (tau = 10, d = 60, optimal factorization), factorization included.
func BenchmarkReplay200(b *testing.B) {
	for b.Loop() {
		s := mustSetup(b, Plan{Rounds: 200, Seed: 1})
		if _, err := Replay(context.Background(), s); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCanaryFig4: the canary audit of the paper's Fig. 4 setting
// (n = 10, R = 800, tau = 10, optimal factorization, (5, 1e-3); m = 1595
// canaries), factorization included. The target is 2 minutes on 2 cores.
func BenchmarkCanaryFig4(b *testing.B) {
	if testing.Short() {
		b.Skip("the Fig. 4 canary audit takes seconds")
	}
	for b.Loop() {
		s := mustSetup(b, Plan{Seed: 1})
		if _, err := Canary(context.Background(), s, CanaryOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
