package audit

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/fedopt"
)

// TestCanaryNetwork: the canary audit over gRPC (a fednet server on
// 127.0.0.1 and fednet.RunLearner goroutines with the adversarial model)
// releases the same models x^0..x^R as the in-process run of the same
// plan, bit for bit, so its scores and mu-hat are the in-process audit's;
// its 99% interval holds the analytic mu and it reports no violation.
func TestCanaryNetwork(t *testing.T) {
	for _, name := range []string{"optimal", "tree"} {
		s := mustSetup(t, canaryPlan(name, 5, 11))
		var local, remote [][]float64
		want, err := canary(context.Background(), s, CanaryOptions{}, &hooks{models: &local})
		if err != nil {
			t.Fatal(err)
		}
		got, err := canary(context.Background(), s, CanaryOptions{Network: true}, &hooks{models: &remote})
		if err != nil {
			t.Fatal(err)
		}
		if !got.Network || want.Network {
			t.Errorf("%s: report's network flags %v (network run) and %v (in process)", name, got.Network, want.Network)
		}
		R := s.Plan.Rounds
		if len(local) != R+1 || len(remote) != R+1 {
			t.Fatalf("%s: %d models in process, %d over gRPC, want %d", name, len(local), len(remote), R+1)
		}
		for r := range local {
			if len(remote[r]) != len(local[r]) {
				t.Fatalf("%s: x^%d of dimension %d over gRPC, %d in process", name, r, len(remote[r]), len(local[r]))
			}
			for k := range local[r] {
				if math.Float64bits(remote[r][k]) != math.Float64bits(local[r][k]) {
					t.Fatalf("%s: x^%d_%d = %v over gRPC, %v in process", name, r, k, remote[r][k], local[r][k])
				}
			}
		}
		// The last model moved: the canaries' pushes and the noise reached it.
		moved := 0.0
		for k, v := range remote[R] {
			moved = math.Max(moved, math.Abs(v-remote[0][k]))
		}
		if !(moved > 0) {
			t.Fatalf("%s: x^R = x^0", name)
		}
		for j, v := range want.AllIterates.Scores {
			if got.AllIterates.Scores[j] != v || got.FinalModel.Scores[j] != want.FinalModel.Scores[j] {
				t.Fatalf("%s: canary %d scores differ", name, j)
			}
		}
		o := got.AllIterates
		t.Logf("%s over gRPC: m %d, analytic mu %.4f, mu-hat %.4f [%.4f, %.4f], %.2fs (in process %.2fs)",
			name, got.Canaries, o.MuAnalytic, o.Mu.Mu, o.Mu.Lo, o.Mu.Hi, got.Seconds, want.Seconds)
		for _, o := range []Observer{got.AllIterates, got.FinalModel} {
			if !(o.Mu.Lo <= o.MuAnalytic && o.MuAnalytic <= o.Mu.Hi) || !o.Contains {
				t.Errorf("%s: interval [%v, %v] misses the analytic mu %v", name, o.Mu.Lo, o.Mu.Hi, o.MuAnalytic)
			}
		}
		if got.Violation {
			t.Errorf("%s: violation reported for a correct networked run", name)
		}
	}
}

// TestCanaryNetworkHalvedNoise: the networked server draws its noise from
// the audit's mechanism (hooks included): with the noise halved while the
// mechanism reports the calibrated std, the networked audit reports a
// violation.
func TestCanaryNetworkHalvedNoise(t *testing.T) {
	s := mustSetup(t, canaryPlan("optimal", 5, 12))
	rep, err := canary(context.Background(), s, CanaryOptions{Network: true}, &hooks{noiseScale: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	o := rep.AllIterates
	if !(o.Mu.Lo > rep.MuClaimed) || !rep.Violation {
		t.Errorf("halved noise over gRPC not flagged: interval [%v, %v], claimed %v, violation %v", o.Mu.Lo, o.Mu.Hi, rep.MuClaimed, rep.Violation)
	}
}

// TestReplayNetwork: ReplayNetwork runs D's federation over gRPC as well;
// for Algorithm 1 (single participation) and for a baseline under fixed
// epochs, the networked run releases the in-process run's models bit for
// bit ("networked release" passes), and every other check and the ratio
// are those of Replay.
func TestReplayNetwork(t *testing.T) {
	single := smallPlan("optimal", 1)
	epochs := smallPlan("blt", 2)
	epochs.Algorithm = fedopt.BaselineCorrelated
	epochs.Participation = factorize.Participation{Kind: factorize.KindEpochs, K: 2}
	for _, p := range []Plan{single, epochs} {
		s := mustSetup(t, p)
		want, err := Replay(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ReplayNetwork(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		last := got.Checks[len(got.Checks)-1]
		t.Logf("%v %s: %s: %v (%s)", p.Algorithm, s.Factorization.Strategy, last.Name, last.OK, last.Detail)
		if !got.Network || want.Network || last.Name != "networked release" || !last.OK || !got.OK {
			t.Errorf("%v: network %v, checks %+v", p.Algorithm, got.Network, got.Checks)
		}
		if got.Ratio != want.Ratio || len(got.Checks) != len(want.Checks)+1 {
			t.Errorf("%v: ratio %v over gRPC, %v in process; %d and %d checks", p.Algorithm, got.Ratio, want.Ratio, len(got.Checks), len(want.Checks))
		}
	}
	// A dropout plan cannot run over gRPC (fednet's learners submit every round).
	p := smallPlan("optimal", 1)
	p.Dropout = 0.2
	if _, err := ReplayNetwork(context.Background(), mustSetup(t, p)); err == nil {
		t.Error("networked replay with dropouts: no error")
	}
}

// TestReplayNetworkComparison: the networked release check compares every
// bit: against in-process models with one entry of x^R moved by one ulp
// (a test-only hook), the same networked run fails it and the report.
func TestReplayNetworkComparison(t *testing.T) {
	s := mustSetup(t, smallPlan("optimal", 1))
	h := &hooks{tamper: func(xs [][]float64) {
		x := slices.Clone(xs[len(xs)-1])
		x[1] = math.Nextafter(x[1], math.Inf(1))
		xs[len(xs)-1] = x
	}}
	rep, err := replayWith(context.Background(), s, h, true)
	if err != nil {
		t.Fatal(err)
	}
	last := rep.Checks[len(rep.Checks)-1]
	if last.Name != "networked release" || last.OK || rep.OK {
		t.Errorf("one ulp off not caught: %+v, ok %v", last, rep.OK)
	}
}
