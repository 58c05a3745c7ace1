package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/fednet"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/internal/cli"
	"github.com/dpmf/dpmf/internal/testutil"
	"github.com/dpmf/dpmf/plan"
)

// combo is one run configuration of the enumeration: an algorithm, its
// strategy ("" for the algorithms without one) and the epochs.
type combo struct {
	algo, strategy string
	epochs         int
}

func (c combo) flags() []string {
	f := []string{"-algo", c.algo, "-epochs", strconv.Itoa(c.epochs)}
	if c.strategy != "" {
		f = append(f, "-strategy", c.strategy)
	}
	return f
}

func (c combo) String() string {
	return c.algo + "/" + c.strategy + "/epochs:" + strconv.Itoa(c.epochs)
}

// combos enumerates strategies x participation x algorithm: every strategy
// of the factorize registry (factorize.Strategies) under single
// participation and 2 epochs for the algorithms with correlated noise, and
// the independent and nonprivate algorithms under both. With short, a
// covering subset: every strategy, participation and algorithm at least
// once, and semiseparable under epochs with both correlated algorithms.
func combos(short bool) []combo {
	var cs []combo
	correlated := []string{fedopt.Correlated.String(), fedopt.BaselineCorrelated.String()}
	for i, s := range factorize.Strategies() {
		for j, algo := range correlated {
			for k, epochs := range []int{1, 2} {
				keep := (i+j+k)%3 == 0 || s == factorize.StrategySemisep && epochs == 2
				if !short || keep {
					cs = append(cs, combo{algo, s, epochs})
				}
			}
		}
	}
	for _, algo := range []string{fedopt.Independent.String(), fedopt.NonPrivate.String()} {
		for _, epochs := range []int{1, 2} {
			cs = append(cs, combo{algo, "", epochs})
		}
	}
	return cs
}

// Every combination that ofl runs also runs as ofl server, learners and
// ofl evaluate, with identical models: for a few rounds at small n, R and
// d, the models the server releases over loopback gRPC (server and
// learners in this process, each behind its own gRPC connection) are bit
// for bit those of the in-process roles (fedopt.Simulate of the same
// plan), whose last is ofl's own final model, and ofl evaluate on the
// server's state reports what ofl -reps 1 reports.
func TestEveryCombinationRunsNetworked(t *testing.T) {
	const n, R = 2, 4
	base := []string{"-learners", strconv.Itoa(n), "-tau", "1", "-rounds", strconv.Itoa(R), "-dim", "3", "-seed", "5", "-eps", "3"}
	seen := map[string]bool{}
	for _, c := range combos(testing.Short()) {
		seen[c.strategy] = true
		t.Run(strings.ReplaceAll(c.String(), "/", "_"), func(t *testing.T) {
			run := append(c.flags(), base...)
			if c.algo == fedopt.NonPrivate.String() {
				run = slices.Delete(run, len(run)-2, len(run)) // no -eps
			}
			sim := runOfl(t, append([]string{"-reps", "1", "-json", "-eval-every", "1"}, run...)...)
			if sim.code != cli.ExitOK {
				// Not a combination ofl runs: the server must refuse it too.
				t.Logf("ofl refuses %v: %s", c, sim.stderr)
				r := runOfl(t, append([]string{"server", "-insecure", "-state", t.TempDir(), "-listen", "127.0.0.1:0"}, run...)...)
				if r.code == cli.ExitOK {
					t.Errorf("ofl refuses %v but ofl server runs it", c)
				}
				return
			}
			want, final := simulated(t, run)
			requireSame(t, "in-process roles against ofl's final model", want[len(want)-1], final)
			state := serveLoopback(t, run, n, "5")
			got := readModels(t, state, R)
			for r := range want {
				requireSame(t, "x^"+strconv.Itoa(r), got[r], want[r])
			}
			ev := runOfl(t, append([]string{"evaluate", "-state", state, "-json", "-eval-every", "1"}, run...)...)
			if ev.code != cli.ExitOK {
				t.Fatalf("ofl evaluate: exit %d: %s", ev.code, ev.stderr)
			}
			// Without the run flags, from the plan alone: the same report.
			bare := runOfl(t, "evaluate", "-state", state, "-json", "-eval-every", "1", "-seed", "5")
			if bare.code != cli.ExitOK {
				t.Fatalf("ofl evaluate without run flags: exit %d: %s", bare.code, bare.stderr)
			}
			s, e, b := reportOf(t, sim.stdout), reportOf(t, ev.stdout), reportOf(t, bare.stdout)
			if !reflect.DeepEqual(e, s) || !reflect.DeepEqual(b, s) {
				t.Errorf("ofl evaluate reports\n%v\nand without flags\n%v\nofl -reps 1 reports\n%v", e, b, s)
			}
		})
	}
	for _, s := range factorize.Strategies() {
		if !seen[s] {
			t.Errorf("strategy %s not enumerated", s)
		}
	}
}

// reportOf decodes ofl's -json report, less its run time.
func reportOf(t *testing.T, out string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	delete(m, "seconds")
	return m
}

// serveLoopback runs ofl server with the run flags and n ofl learners
// (data seed seed) in this process over loopback gRPC, to the end, and
// returns the server's state directory.
func serveLoopback(t *testing.T, runFlags []string, n int, seed string) string {
	t.Helper()
	return serveLoopbackWith(t, runFlags, nil, n, seed)
}

// serveLoopbackWith is serveLoopback with learnerFlags (data flags) given
// to every learner.
func serveLoopbackWith(t *testing.T, runFlags, learnerFlags []string, n int, seed string) string {
	t.Helper()
	state := filepath.Join(t.TempDir(), "state")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var srvLog testutil.SyncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"server", "-insecure", "-state", state, "-listen", "127.0.0.1:0", "-linger", "5s"}, runFlags...),
			env{stdout: io.Discard, stderr: &srvLog})
	}()
	addr := servingAddr(t, &srvLog, done)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			var lerr testutil.SyncBuffer
			if code := run(ctx, append([]string{"learner", "-insecure", "-server", addr, "-id", strconv.Itoa(i), "-seed", seed,
				"-call-timeout", "10s", "-wait-timeout", "10s", "-give-up", "20s"}, learnerFlags...), env{stdout: io.Discard, stderr: &lerr}); code != cli.ExitOK {
				t.Errorf("learner %d: exit %d: %s", i, code, lerr.String())
			}
		})
	}
	wg.Wait()
	if code := <-done; code != cli.ExitOK {
		t.Fatalf("server: exit %d: %s", code, srvLog.String())
	}
	return state
}

// ofl evaluate takes the run from the plan in its state directory: a run
// flag that contradicts it is a usage error naming both values (before, a
// wrong -eps printed a false privacy claim and a wrong -learners, -seed or
// -rounds silently evaluated other data), and the privacy it reports is
// the recorded record.
func TestEvaluateFollowsThePlan(t *testing.T) {
	run := []string{"-learners", "2", "-tau", "1", "-rounds", "4", "-dim", "3", "-seed", "5", "-eps", "5", "-delta", "1e-3", "-strategy", "semiseparable", "-epochs", "2"}
	state := serveLoopback(t, run, 2, "5")
	csv := filepath.Join(t.TempDir(), "two.csv")
	if err := os.WriteFile(csv, []byte(strings.Repeat("1,0.5,0.2\n-1,0.1,0.3\n", 4)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-eps", "1"}, "-eps 1 contradicts the run's plan in " + filepath.Join(state, "run.json") + ": eps 5"},
		{[]string{"-learners", "3"}, "-learners 3 contradicts the run's plan in " + filepath.Join(state, "run.json") + ": learners 2"},
		{[]string{"-rounds", "2"}, "-rounds 2 contradicts the run's plan"},
		{[]string{"-strategy", "optimal"}, "-strategy optimal contradicts the run's plan"},
		{[]string{"-strategy", "semiseparable:tol=1e-8"}, "-strategy semiseparable:tol=1e-8 contradicts the run's plan"},
		{[]string{"-calibration", "paper"}, "-calibration paper contradicts the run's plan"},
		{[]string{"-seed", "6"}, "-seed 6 contradicts the run's plan"},
		// A CSV file of another dimension than the plan's (exit status 1
		// before, "-data has 2 features, the run's plan in ... 3").
		{[]string{"-data", csv}, "-data " + csv + " has 2 features, contradicting the run's plan in " + filepath.Join(state, "run.json") + ": features 3"},
	} {
		args := append([]string{"evaluate", "-state", state, "-json"}, c.args...)
		if !slices.Contains(c.args, "-seed") {
			args = append(args, "-seed", "5")
		}
		r := runOfl(t, args...)
		if r.code != cli.ExitUsage || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want exit %d and one line with %q", c.args, r.code, r.stderr, cli.ExitUsage, c.want)
		}
	}
	// The recorded strategy with a default written out is the same run
	// (it was a usage error: "contradicts the run's plan ...: strategy
	// semiseparable").
	if r := runOfl(t, "evaluate", "-state", state, "-json", "-seed", "5", "-strategy", "semiseparable:tol=1e-10,max-excess=0.001"); r.code != cli.ExitOK {
		t.Errorf("evaluate with the recorded strategy's defaults written out: exit %d, %s", r.code, r.stderr)
	}
	// The reported privacy is the plan's record, as the server logged it.
	r := runOfl(t, "evaluate", "-state", state, "-json", "-seed", "5", "-eps", "5.0")
	if r.code != cli.ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var rep struct {
		Eps      float64 `json:"eps"`
		NoiseStd float64 `json:"noise_std"`
		Strategy string  `json:"strategy"`
		Epochs   int     `json:"epochs"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	pl := readPlan(t, state)
	if rep.Eps != 5 || rep.NoiseStd != pl.Privacy.NoiseStd || rep.Strategy != "semiseparable" || rep.Epochs != 2 {
		t.Errorf("report %+v, plan's record %+v", rep, pl.Privacy)
	}
}

// readPlan reads the plan in a state directory's run.json.
func readPlan(t *testing.T, state string) *plan.Plan {
	t.Helper()
	raw, err := fednet.ReadPlan(state)
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// planArgs inverts runPlan: the flags evaluate takes from a plan give the
// same plan back, for every enumerated combination and odd step sizes.
func TestPlanArgsInvertRunPlan(t *testing.T) {
	for _, c := range combos(false) {
		run := append(c.flags(), "-learners", "3", "-tau", "2", "-rounds", "8", "-dim", "4", "-seed", "9",
			"-eta", "0.1234567890123", "-eta-g", "0.3", "-clip", "1e-3", "-l2", "0")
		if c.algo != fedopt.NonPrivate.String() {
			run = append(run, "-eps", "0.7", "-delta", "3e-7", "-calibration", "paper")
		}
		if c.algo == fedopt.Independent.String() {
			run = append(run, "-eta-ind", "0.05")
		}
		cfg, err := parseArgs(run)
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		p := cfg.runPlan(4)
		args, err := evaluateArgs(map[string]string{"seed": "9"}, p, "run.json")
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		back, err := parseArgs(args)
		if err != nil {
			t.Fatalf("%v: %v: %v", c, args, err)
		}
		if q := back.runPlan(4); !reflect.DeepEqual(p, q) {
			t.Errorf("%v: plan %+v read back as %+v", c, p, q)
		}
	}
}

// The plan records -strategy's full spec, as factorize writes it: the
// settings reach run.json and come back to evaluate, which refuses a
// -strategy with other settings.
func TestRunPlanStrategySpec(t *testing.T) {
	for spec, s := range map[string]factorize.Strategy{
		"banded:bands=4":     factorize.BandedStrategy{Bands: 4},
		"blt:buffers=3":      factorize.BLTStrategy{Buffers: 3},
		"bisr:bands=5":       factorize.BISRStrategy{Bands: 5},
		"optimal:tol=0.0001": factorize.OptimalStrategy{Options: factorize.Options{Tol: 1e-4}},
	} {
		cfg, err := parseArgs([]string{"-strategy", spec, "-learners", "3", "-rounds", "8", "-eps", "1", "-delta", "1e-5", "-seed", "9"})
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		p := cfg.runPlan(4)
		if p.Strategy != s.Spec() {
			t.Errorf("-strategy %s: plan's strategy %q, want %q", spec, p.Strategy, s.Spec())
		}
		args, err := evaluateArgs(map[string]string{"seed": "9"}, p, "run.json")
		if err != nil {
			t.Fatal(err)
		}
		back, err := parseArgs(args)
		if err != nil {
			t.Fatal(err)
		}
		if q := back.runPlan(4); !reflect.DeepEqual(p, q) {
			t.Errorf("%s: plan %+v read back as %+v", spec, p, q)
		}
		if _, err := evaluateArgs(map[string]string{"strategy": s.Name() + ":bands=2"}, p, "run.json"); err == nil {
			t.Errorf("%s: evaluate accepted another -strategy", spec)
		}
	}
}
