package main

import (
	"context"
	"fmt"
	"testing"

	"github.com/dpmf/dpmf/factorize"
)

// TestFactorizationWork checks factorizationWork against the operations of
// small solves counted from their measured iterations: each solve's
// Iterations (the solver's own count of fixed-point iterations) times the
// operations of one iteration, plus those done once (factorizationCost;
// the per-iteration counts are closed forms of the algorithms, for the
// dense path Golub and Van Loan's 4/3 R^3 for a Householder
// tridiagonalization and again for its orthogonal factor). The estimate
// assumes more iterations than measured, so it must be at least the
// count, and, to stay useful, at most maxOver times it.
func TestFactorizationWork(t *testing.T) {
	const maxOver = 4
	ctx := context.Background()
	cases := []struct {
		spec, part string
		r          int
	}{
		{"optimal", "single", 64}, {"optimal", "single", 512}, {"optimal", "minsep:8", 256},
		{"semiseparable", "single", 256}, {"optimal", "epochs:96", 96}, {"blt", "single", 128},
		{"banded", "epochs:4", 128}, {"optimal:path=dense", "single", 64},
		{"optimal", "epochs:2", 60}, {"optimal", "epochs:4", 96}, {"optimal", "epochs:8", 120},
		// Longer (seconds each).
		{"optimal:path=dense", "single", 240}, {"optimal", "epochs:2", 240},
		{"optimal", "epochs:12", 240}, {"optimal", "epochs:16", 240},
	}
	if testing.Short() {
		cases = cases[:len(cases)-4]
	}
	for _, c := range cases {
		name := fmt.Sprintf("%s %s R=%d", c.spec, c.part, c.r)
		s, err := factorize.ParseStrategy(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		p, err := factorize.ParseParticipation(c.part)
		if err != nil {
			t.Fatal(err)
		}
		w, err := factorize.Prefix(c.r)
		if err != nil {
			t.Fatal(err)
		}
		f, err := s.Factorize(ctx, w, p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		iters, perIter, once := factorizationCost(s, p, c.r)
		if (iters == 0) != (f.Iterations == 0) {
			t.Errorf("%s: %d iterations measured, %v assumed: want both zero or neither", name, f.Iterations, iters)
		}
		counted := float64(f.Iterations)*perIter + once
		est := factorizationWork(s, p, c.r)
		if !(est >= counted && est <= maxOver*counted) {
			t.Errorf("%s: estimate %.3g operations, counted %.3g (%d iterations of %.3g, and %.3g once): want the estimate in [1, %v] times the count", name, est, counted, f.Iterations, perIter, once, maxOver)
		}
	}
}

// TestWorkCountsIterations: the estimate of the factorization counts its
// solver's iterations: optimal:path=dense at R = 20000 is 32 iterations
// of 8/3 R^3 + 384 R^2 (2.15e13 each, 6.88e14 in all) and R^3 for the
// factors, 6.96e14; with the whitener's R^3 and the rest, 7.04e14, refused
// without -force. Before, it counted R^3 for the factorization, 1.6e13
// in all, and the audit ran (32 iterations of about 4000 s each, from
// the 0.5 s an iteration measured at R = 1000: a day and a half).
func TestWorkCountsIterations(t *testing.T) {
	o := &options{}
	o.plan.Rounds, o.plan.Learners, o.plan.Tau, o.plan.Dim = 20000, 2, 1, 3
	o.plan.Strategy = factorize.OptimalStrategy{Options: factorize.Options{Method: factorize.Dense}}
	r := 20000.0
	want := 32*(8.0/3*r*r*r+384*r*r) + r*r*r + // the factorization
		2*r*2*1*(3+stepOps) + 2*r*2*2*3 + (1.5*r+r)*r*3 + r*r*r + // the run, the probes, the checks, the whitener
		2*r*r // the worst sample's search: n columns of R rows for each of the R single rounds
	if got := workNeed("replay", o, false); got != want || got <= maxWork {
		t.Errorf("workNeed = %.4g, want %.4g (above maxWork %.0e)", got, want, maxWork)
	}
	if err := checkWork("replay", o, false); err == nil {
		t.Errorf("checkWork: nil, want a refusal")
	}
}

// TestPatternRounds checks patternRounds, the rounds summed over the
// patterns that the replay's worst-sample search tries, against the
// patterns enumerated by their definition (docs/audit.md: every round
// under single participation; every residue class of the period R / K
// under epochs:K; under minsep:B[,K] the rounds c, c + B, ..., at most K
// of them, K = ceil(R / B) when not given, from every start c), at every
// R up to 40 and every separation up to R + 1, including the edges R = 1,
// B = R, K = 1.
func TestPatternRounds(t *testing.T) {
	for r := 1; r <= 40; r++ {
		if got := patternRounds(factorize.SingleParticipation(), r); got != float64(r) {
			t.Errorf("single R=%d: %v, want %d", r, got, r)
		}
		for k := 1; k <= r; k++ {
			if r%k != 0 {
				continue
			}
			count := 0
			for c := 0; c < r/k; c++ {
				for x := c; x < r; x += r / k {
					count++
				}
			}
			if got := patternRounds(factorize.Participation{Kind: factorize.KindEpochs, K: k}, r); got != float64(count) {
				t.Errorf("epochs:%d R=%d: %v, want %d", k, r, got, count)
			}
		}
		for b := 1; b <= r+1; b++ {
			for k := 0; k <= 5; k++ {
				kk := k
				if k == 0 {
					kk = (r + b - 1) / b
				}
				count := 0
				for c := 0; c < r; c++ {
					for x, n := c, 0; x < r && n < kk; x, n = x+b, n+1 {
						count++
					}
				}
				if got := patternRounds(factorize.Participation{Kind: factorize.KindMinSep, B: b, K: k}, r); got != float64(count) {
					t.Errorf("minsep:%d,%d R=%d: %v, want %d", b, k, r, got, count)
				}
			}
		}
	}
}

// TestWorkCountsWorstSample: the replay's search for the worst sample sums
// n columns of C (m rows) for every round of every pattern it tries; under
// minsep:1 at R = 10^4 the patterns hold R (R + 1) / 2 = 5.0005e7 rounds,
// so with n = 1000 learners the search is 1000 * 10^4 * 5.0005e7 = 5e14
// operations, above maxWork. Before, the estimate left it out and said
// about 1.05e12 (the whitener's R^3 and the factorization), so the audit
// started for days unannounced; now it is refused without -force.
func TestWorkCountsWorstSample(t *testing.T) {
	o := &options{}
	o.plan.Rounds, o.plan.Learners, o.plan.Tau, o.plan.Dim = 10000, 1000, 1, 1
	o.plan.Strategy = factorize.OptimalStrategy{}
	o.plan.Participation = factorize.Participation{Kind: factorize.KindMinSep, B: 1}
	search := 1000 * 1e4 * (1e4 * (1e4 + 1) / 2)
	got := workNeed("replay", o, false)
	if !(got >= search && got > maxWork) {
		t.Errorf("workNeed = %.4g, want at least the search's %.4g (above maxWork %.0e)", got, search, maxWork)
	}
	if err := checkWork("replay", o, false); err == nil {
		t.Errorf("checkWork: nil, want a refusal")
	}
}
