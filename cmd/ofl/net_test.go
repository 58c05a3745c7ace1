package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dpmf/dpmf/experiment"
	"github.com/dpmf/dpmf/fednet"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/internal/cli"
	"github.com/dpmf/dpmf/internal/testpki"
	"github.com/dpmf/dpmf/internal/testutil"
	"github.com/dpmf/dpmf/mechanism"
	dpmodel "github.com/dpmf/dpmf/model"
	"github.com/dpmf/dpmf/plan"
)

var (
	buildOnce sync.Once
	oflBin    string
	buildErr  error
)

// buildOfl builds the ofl binary once per test run.
func buildOfl(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ofl-bin-")
		if err != nil {
			buildErr = err
			return
		}
		oflBin = filepath.Join(dir, "ofl")
		out, err := exec.Command("go", "build", "-o", oflBin, ".").CombinedOutput()
		if err != nil {
			buildErr = err
			t.Logf("%s", out)
		}
	})
	if buildErr != nil {
		t.Fatalf("go build: %v", buildErr)
	}
	return oflBin
}

// simulated returns x^0..x^R of the in-process simulation of ofl's
// configuration args (repetition 0 of ofl -seed S: data seed S, noise seed
// RepSeed(S, 0)), and the final model of ofl's own path
// (experiment.Experiment, what "ofl -reps 1" runs).
func simulated(t *testing.T, args []string) (xs [][]float64, final []float64) {
	t.Helper()
	ctx := context.Background()
	c, err := parseArgs(append(slices.Clone(args), "-reps", "1"))
	if err != nil {
		t.Fatal(err)
	}
	ds, err := loadData(c)
	if err != nil {
		t.Fatal(err)
	}
	cfg := c.optimiser()
	exp := experiment.Experiment{Config: cfg, Seed: c.seed, Seeded: true, Repeat: experiment.RepeatOptions{Reps: 1}}
	if c.algo.Private() {
		exp.Plan = c.runPlan(ds.Dim)
	}
	var m mechanism.Mechanism
	if c.algo.Private() {
		f, priv, err := buildNoise(ctx, exp.Plan)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Privacy = priv
		if m, err = mechanism.New(f, ds.Dim, priv.NoiseStd, mechanism.WithSeed(experiment.RepSeed(c.seed, 0))); err != nil {
			t.Fatal(err)
		}
	}
	shape := fedopt.Shape{Learners: c.learners, Rounds: c.rounds, Tau: c.tau, Dim: ds.Dim}
	srv, err := fedopt.NewServer(cfg, shape, m)
	if err != nil {
		t.Fatal(err)
	}
	model := dpmodel.Logistic{L2: c.l2}
	ls := make([]*fedopt.Learner, c.learners)
	for i := range ls {
		if ls[i], err = fedopt.NewLearner(model, ds.Stream(i), cfg, c.tau, ds.Dim); err != nil {
			t.Fatal(err)
		}
	}
	err = fedopt.Simulate(ctx, srv, ls, fedopt.SimOptions{Observe: func(r int, x []float64) error {
		xs = append(xs, slices.Clone(x))
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := experiment.NewProblem(ctx, ds, model, experiment.ProblemOptions{NoDynamic: true})
	if err != nil {
		t.Fatal(err)
	}
	exp.Problem = p
	res, err := exp.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return xs, res.Summary.Traces[0].X
}

// servingRe matches the server's "serving" log line.
var servingRe = regexp.MustCompile(`msg=serving addr=(\S+)`)

// servingAddr waits for the address in the "serving" line of an in-process
// server's log; done receives the server's exit status if it ends first.
func servingAddr(t *testing.T, log *testutil.SyncBuffer, done <-chan int) string {
	t.Helper()
	for {
		if m := servingRe.FindStringSubmatch(log.String()); m != nil {
			return m[1]
		}
		select {
		case code := <-done:
			t.Fatalf("server exited with %d: %s", code, log.String())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// proc is a started ofl process.
type proc struct {
	cmd  *exec.Cmd
	done chan error
	log  *strings.Builder
	mu   *sync.Mutex
}

// start runs ofl with args; addr, if not nil, receives the address from
// the server's "serving" log line.
func start(t *testing.T, bin string, args []string, addr chan<- string) *proc {
	t.Helper()
	return startCmd(t, exec.Command(bin, args...), addr)
}

// startCmd starts cmd, an ofl command, as start does.
func startCmd(t *testing.T, cmd *exec.Cmd, addr chan<- string) *proc {
	t.Helper()
	args := cmd.Args[1:]
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, done: make(chan error, 1), log: new(strings.Builder), mu: new(sync.Mutex)}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.log.WriteString(line + "\n")
			p.mu.Unlock()
			if m := servingRe.FindStringSubmatch(line); m != nil && addr != nil {
				addr <- m[1]
			}
		}
		io.Copy(io.Discard, stderr)
		p.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		if t.Failed() {
			p.mu.Lock()
			t.Logf("ofl %s:\n%s", strings.Join(args, " "), p.log.String())
			p.mu.Unlock()
		}
	})
	return p
}

func (p *proc) wait(t *testing.T, name string, timeout time.Duration) {
	t.Helper()
	select {
	case err := <-p.done:
		if err != nil {
			p.mu.Lock()
			defer p.mu.Unlock()
			t.Fatalf("%s: %v\n%s", name, err, p.log.String())
		}
	case <-time.After(timeout):
		p.cmd.Process.Kill()
		t.Fatalf("%s did not finish within %v", name, timeout)
	}
}

// logOf returns p's log so far.
func logOf(p *proc) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// startServer starts "ofl server" on a free loopback port and returns it
// with its address.
func startServer(t *testing.T, bin, state string, run []string) (*proc, string) {
	t.Helper()
	return startServerArgs(t, bin, append([]string{"server", "-insecure", "-state", state, "-listen", "127.0.0.1:0", "-linger", "3s", "-round-timeout", "20s"}, run...))
}

// startServerArgs starts ofl with args and returns it with the address it
// serves at.
func startServerArgs(t *testing.T, bin string, args []string) (*proc, string) {
	t.Helper()
	return startServerCmd(t, exec.Command(bin, args...))
}

// startServerCmd starts cmd, an ofl server command, and returns it with
// the address it serves at; it fails t if the server exits first or does
// not serve within 30 s.
func startServerCmd(t *testing.T, cmd *exec.Cmd) (*proc, string) {
	t.Helper()
	addr := make(chan string, 1)
	p := startCmd(t, cmd, addr)
	select {
	case a := <-addr:
		return p, a
	case err := <-p.done:
		t.Fatalf("server exited: %v\n%s", err, logOf(p))
	case <-time.After(30 * time.Second):
		t.Fatal("server did not start within 30 s")
	}
	return nil, ""
}

func readModels(t *testing.T, dir string, R int) [][]float64 {
	t.Helper()
	xs := make([][]float64, R+1)
	for r := range xs {
		rel, err := fednet.ReadRound(dir, r)
		if err != nil {
			t.Fatal(err)
		}
		xs[r] = rel.X
	}
	return xs
}

func readModelFile(t *testing.T, path string) []float64 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var x []float64
	for _, f := range strings.Fields(string(data)) {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			t.Fatal(err)
		}
		x = append(x, v)
	}
	return x
}

func requireSame(t *testing.T, what string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: length %d, want %d", what, len(got), len(want))
	}
	for k := range got {
		if got[k] != want[k] || (got[k] == 0 && (1/got[k] > 0) != (1/want[k] > 0)) {
			t.Fatalf("%s: entry %d is %v, want %v (bit for bit)", what, k, got[k], want[k])
		}
	}
}

// A server and three learners as separate processes on 127.0.0.1 release
// the models of the in-process simulation of the same flags, bit for bit,
// and end with ofl's own final model.
func TestProcessesMatchSimulation(t *testing.T) {
	bin := buildOfl(t)
	run := []string{"-learners", "3", "-tau", "2", "-rounds", "12", "-dim", "6", "-seed", "11", "-eps", "2", "-epochs", "2"}
	want, final := simulated(t, run)
	requireSame(t, "simulation against ofl's experiment path", want[len(want)-1], final)
	state := t.TempDir()
	srv, addr := startServer(t, bin, state, run)
	learners := make([]*proc, 3)
	for i := range learners {
		learners[i] = start(t, bin, []string{"learner", "-insecure", "-server", addr, "-id", strconv.Itoa(i), "-seed", "11",
			"-out", filepath.Join(state, "final-"+strconv.Itoa(i)+".txt"), "-give-up", "20s", "-call-timeout", "5s", "-wait-timeout", "5s"}, nil)
	}
	for i, l := range learners {
		l.wait(t, "learner "+strconv.Itoa(i), 30*time.Second)
	}
	srv.wait(t, "server", 30*time.Second)
	got := readModels(t, state, 12)
	for r := range want {
		requireSame(t, "x^"+strconv.Itoa(r), got[r], want[r])
	}
	for i := range learners {
		requireSame(t, "learner "+strconv.Itoa(i)+"'s final model", readModelFile(t, filepath.Join(state, "final-"+strconv.Itoa(i)+".txt")), final)
	}
	// The observer of the released models reports what ofl reports for
	// the simulation (all but the run time).
	sameReports(t, state, "3", run)
}

// sameReports checks that ofl evaluate on the released models in state
// reports what ofl -reps 1 reports for the simulated run (all but the run
// time), both evaluated every `every` rounds.
func sameReports(t *testing.T, state, every string, run []string) {
	t.Helper()
	report := func(args ...string) map[string]any {
		r := runOfl(t, args...)
		if r.code != cli.ExitOK {
			t.Fatalf("ofl %v: exit %d: %s", args, r.code, r.stderr)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(r.stdout), &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "seconds")
		return m
	}
	ev := report(append([]string{"evaluate", "-state", state, "-json", "-eval-every", every}, run...)...)
	sim := report(append([]string{"-reps", "1", "-json", "-eval-every", every}, run...)...)
	if !reflect.DeepEqual(ev, sim) {
		t.Errorf("ofl evaluate reports\n%v\nofl -reps 1 reports\n%v", ev, sim)
	}
}

// The server is killed with SIGKILL mid-run and restarted on its state
// directory: the learners carry on, and every released model equals the
// uninterrupted simulation's (the noise stream continues exactly).
func TestServerSIGKILLResumes(t *testing.T) {
	bin := buildOfl(t)
	const R = 300
	run := []string{"-learners", "3", "-tau", "2", "-rounds", strconv.Itoa(R), "-dim", "10", "-seed", "4"}
	want, _ := simulated(t, run)
	state := t.TempDir()
	srv, addr := startServer(t, bin, state, run)
	learners := make([]*proc, 3)
	for i := range learners {
		learners[i] = start(t, bin, []string{"learner", "-insecure", "-server", addr, "-id", strconv.Itoa(i), "-seed", "4",
			"-give-up", "30s", "-call-timeout", "5s", "-wait-timeout", "5s"}, nil)
	}
	// Kill the server once a few rounds are out.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(state, "round-00000005.x")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no round released within 30 s")
		}
		time.Sleep(2 * time.Millisecond)
	}
	// A second server on the same state directory is refused: it would
	// release the same rounds with the same noise from other updates.
	second := runOfl(t, append([]string{"server", "-insecure", "-state", state, "-listen", "127.0.0.1:0"}, run...)...)
	if second.code != cli.ExitFailure || !strings.Contains(second.stderr, "in use by another server (pid ") {
		t.Errorf("second server on one state directory: exit %d, %q", second.code, second.stderr)
	}
	if err := srv.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-srv.done
	if _, err := os.Stat(filepath.Join(state, "round-"+strconv.Itoa(100000000 + R)[1:]+".x")); err == nil {
		t.Fatal("the run finished before the kill: nothing was tested")
	}
	killedAt := 0
	for _, e := range must(os.ReadDir(state)) {
		if strings.HasPrefix(e.Name(), "round-") {
			killedAt++
		}
	}
	t.Logf("killed after round %d of %d", killedAt-1, R)
	// Restart on the same port, which the learners keep calling.
	srv2 := start(t, bin, append([]string{"server", "-insecure", "-state", state, "-listen", addr, "-linger", "3s", "-round-timeout", "20s"}, run...), nil)
	for i, l := range learners {
		l.wait(t, "learner "+strconv.Itoa(i), 60*time.Second)
	}
	srv2.wait(t, "restarted server", 30*time.Second)
	srv2.mu.Lock()
	resumed := strings.Contains(srv2.log.String(), "msg=resumed")
	srv2.mu.Unlock()
	if !resumed {
		t.Error("the restarted server did not log that it resumed")
	}
	got := readModels(t, state, R)
	for r := range want {
		requireSame(t, "x^"+strconv.Itoa(r), got[r], want[r])
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// The networked subcommands check their flags: one line, exit status 2.
func TestNetUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"server", "-insecure"}, "ofl server: -state is required"},
		{[]string{"server", "-state", "d"}, "the server needs -tls-cert and -tls-key"},
		{[]string{"server", "-state", "d", "-insecure", "-tls-cert", "c.pem"}, "-insecure excludes the TLS flags"},
		{[]string{"server", "-state", "d", "-insecure", "-reps", "3"}, "flag provided but not defined: -reps"},
		{[]string{"server", "-state", "d", "-insecure", "-learners", "0"}, "-learners 0"},
		{[]string{"server", "-state", "d", "-insecure", "-min-learners", "11"}, "-min-learners 11: want 0..10"},
		{[]string{"server", "-state", "d", "-insecure", "-round-timeout", "0s"}, "-round-timeout 0s"},
		{[]string{"server", "-state", "d", "-insecure", "-max-connections", "-1"}, "-max-connections -1: want a number of connections >= 1, or 0 for 4 per learner plus 16"},
		{[]string{"server", "-state", "d", "-insecure", "-secure-aggregation", "-min-learners", "8"}, "-min-learners 8 with -secure-aggregation"},
		{[]string{"learner", "-insecure", "-seed", "1"}, "ofl learner: -id is required"},
		{[]string{"learner", "-insecure", "-id", "0"}, "-seed is required"},
		{[]string{"learner", "-id", "0", "-seed", "1"}, "the learner needs -ca"},
		{[]string{"learner", "-insecure", "-id", "0", "-seed", "1", "-data", ""}, "-data is empty"},
		{[]string{"learner", "-insecure", "-id", "0", "-seed", "1", "-give-up", "0s"}, "-give-up 0s: want a duration > 0"},
		{[]string{"learner", "-insecure", "-id", "0", "-seed", "1", "-call-timeout", "-1s"}, "-call-timeout -1s: want a duration > 0"},
		{[]string{"learner", "-insecure", "-id", "-1", "-seed", "1"}, "ofl learner: -id -1: want a learner's index >= 0"},
		{[]string{"server", "-state", "d", "-insecure", "-listen", "127.0.0.1:99999"}, `-listen "127.0.0.1:99999": want host:port with a port number 0..65535`},
		{[]string{"server", "-state", "d", "-insecure", "-listen", "127.0.0.1"}, `-listen "127.0.0.1": want host:port`},
		{[]string{"server", "-state", "-insecure"}, "ofl server: -state -insecure: want a directory, not a flag"},
		{[]string{"learner", "-insecure", "-id", "0", "-seed", "1", "-state", "-new-run"}, "ofl learner: -state -new-run: want a directory, not a flag"},
		{[]string{"learner", "-insecure", "-id", "0", "-seed", "1", "-state", ""}, "-state is empty"},
		{[]string{"learner", "-insecure", "-id", "0", "-seed", "1", "-new-run"}, "-new-run without -state"},
		{[]string{"learner", "-insecure", "-id", "0", "-seed", "1", "-colluders", "-1"}, "ofl learner: -colluders -1: want a number of learners 0..2147483647"},
		// A port out of range was dialled, and retried for -give-up (2m).
		{[]string{"learner", "-insecure", "-id", "0", "-seed", "1", "-server", "127.0.0.1:99999"}, `-server "127.0.0.1:99999": want host:port with a port number 1..65535`},
		{[]string{"learner", "-id", "0", "-seed", "1", "-ca", "ca.pem", "-server", "localhost:65536"}, `-server "localhost:65536": want host:port`},
		{[]string{"learner", "-id", "0", "-seed", "1", "-ca", "ca.pem", "-server", "localhost:-1"}, `-server "localhost:-1": want host:port`},
		{[]string{"learner", "-insecure", "-id", "0", "-seed", "1", "-server", "127.0.0.1:0"}, `-server "127.0.0.1:0": want host:port`},
		{[]string{"learner", "-insecure", "-id", "0", "-seed", "1", "-server", "127.0.0.1:no-such-service"}, `-server "127.0.0.1:no-such-service": want host:port`},
		{[]string{"evaluate", "-seed", "1"}, "ofl evaluate: -state is required"},
		{[]string{"evaluate", "-state", "d"}, "-seed is required"},
		{[]string{"evaluate", "-state", "d", "-seed", "1", "-seed", "2"}, `ofl evaluate: invalid value "2" for flag -seed: given twice (first "1")`},
		{[]string{"server", "-state", "d", "-eps", "1", "-eps", "8"}, `ofl server: invalid value "8" for flag -eps: given twice (first "1")`},
		{[]string{"learner", "-id", "0", "-id", "1"}, `ofl learner: invalid value "1" for flag -id: given twice (first "0")`},
	} {
		r := runOfl(t, c.args...)
		if r.code != cli.ExitUsage || !strings.HasPrefix(r.stderr, "ofl ") || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and one line containing %q", c.args, r.code, r.stderr, cli.ExitUsage, c.want)
		}
	}
	// Files that the flags name are checked before any work: exit status
	// 1, one line naming the flag, nothing created.
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.pem")
	dangling := filepath.Join(t.TempDir(), "dangling")
	if err := os.Symlink(filepath.Join(dir, "nothing"), dangling); err != nil {
		t.Fatal(err)
	}
	pki := t.TempDir()
	ca := testpki.New(t, pki, "ca")
	srvCert, srvKey := ca.Issue(t, "server", true)
	cliCert, cliKey := ca.Issue(t, "learner-0", false)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"server", "-insecure", "-state", file}, "ofl server: -state " + file + " is not a directory"},
		{[]string{"server", "-state", filepath.Join(dir, "s"), "-tls-cert", missing, "-tls-key", missing}, "ofl server: -tls-cert " + missing + ": no such file or directory"},
		{[]string{"server", "-state", filepath.Join(dir, "s"), "-tls-cert", file, "-tls-key", dir}, "ofl server: -tls-key " + dir + " is a directory, want a PEM file"},
		{[]string{"learner", "-id", "0", "-seed", "1", "-ca", missing}, "ofl learner: -ca " + missing + ": no such file or directory"},
		{[]string{"learner", "-id", "0", "-seed", "1", "-insecure", "-state", file}, "ofl learner: -state " + file + " is not a directory"},
		// A -state that cannot become a directory (it failed after the
		// factorization: "state directory: mkdir DIR: file exists").
		{[]string{"server", "-insecure", "-state", dangling}, "ofl server: -state " + dangling + " is a symbolic link to nothing, want a directory"},
		{[]string{"server", "-insecure", "-state", filepath.Join(file, "s")}, "ofl server: -state " + filepath.Join(file, "s") + ": not a directory"},
		{[]string{"learner", "-id", "0", "-seed", "1", "-insecure", "-state", dangling}, "ofl learner: -state " + dangling + " is a symbolic link to nothing"},
		// A -data file that is missing or a directory: before the learner
		// joins (it dialled the server first, and retried for -give-up).
		{[]string{"learner", "-id", "0", "-seed", "1", "-insecure", "-data", missing}, "ofl learner: -data " + missing + ": no such file or directory (want synthetic, synthetic:alpha=A,beta=B or a CSV file)\n"},
		{[]string{"learner", "-id", "0", "-seed", "1", "-insecure", "-data", pki}, "ofl learner: -data " + pki + " is a directory, want a CSV file"},
		// PEM files that do not hold what the flag wants: named by flag,
		// before the factorization (they said "server certificate: tls:
		// failed to find any PEM data in certificate input", after it).
		{[]string{"server", "-state", filepath.Join(dir, "s"), "-tls-cert", file, "-tls-key", srvKey}, "ofl server: -tls-cert " + file + ", -tls-key " + srvKey + ": tls: failed to find any PEM data in certificate input"},
		{[]string{"server", "-state", filepath.Join(dir, "s"), "-tls-cert", srvCert, "-tls-key", cliKey}, "ofl server: -tls-cert " + srvCert + ", -tls-key " + cliKey + ": tls: private key does not match public key"},
		{[]string{"server", "-state", filepath.Join(dir, "s"), "-tls-cert", srvCert, "-tls-key", srvKey, "-client-ca", file}, "ofl server: -client-ca " + file + ": holds no PEM certificate"},
		{[]string{"learner", "-id", "0", "-seed", "1", "-ca", file}, "ofl learner: -ca " + file + ": holds no PEM certificate"},
		{[]string{"learner", "-id", "0", "-seed", "1", "-ca", ca.File, "-tls-cert", cliCert, "-tls-key", file}, "ofl learner: -tls-cert " + cliCert + ", -tls-key " + file + ": tls: failed to find any PEM data in key input"},
	} {
		r := runOfl(t, c.args...)
		if r.code != cli.ExitFailure || strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and one line starting %q", c.args, r.code, r.stderr, cli.ExitFailure, c.want)
		}
	}
	// A -listen address in use is found before the factorization (it was
	// found after it: "msg=privacy" logged, then the error).
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	r := runOfl(t, "server", "-insecure", "-state", filepath.Join(dir, "s"), "-listen", busy.Addr().String())
	if r.code != cli.ExitFailure || strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, "ofl server: -listen: ") || !strings.Contains(r.stderr, "address already in use") {
		t.Errorf("server on a -listen address in use: exit %d, stderr %q; want exit %d and one line naming -listen", r.code, r.stderr, cli.ExitFailure)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the checks created files: %v", entries)
	}

	// A state directory of another run is refused: a run flag or -seed
	// that contradicts the recorded plan is a usage error naming both
	// values, before the factorization (it used to be exit status 1 with
	// both plans' JSON in full, after it).
	state := t.TempDir()
	base := []string{"server", "-insecure", "-state", state, "-listen", "127.0.0.1:0", "-learners", "2", "-tau", "1", "-rounds", "5", "-dim", "3"}
	// The server stops soon after opening its state: no learner joins.
	run(context.Background(), append(base, "-seed", "7", "-join-timeout", "1ms"), env{stdout: io.Discard, stderr: io.Discard})
	if _, err := fednet.ReadRound(state, 0); err != nil {
		t.Fatal(err)
	}
	where := filepath.Join(state, "run.json")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-seed", "7", "-epochs", "5"}, "-epochs 5 contradicts the run's plan in " + where + ": epochs 1"},
		{[]string{"-seed", "7", "-eta", "0.004"}, "-eta 0.004 contradicts the run's plan in " + where + ": eta 0.003"},
		{[]string{"-seed", "7", "-eps", "3"}, "-eps 3 contradicts the run's plan in " + where + ": eps 5"},
		{[]string{"-seed", "7", "-strategy", "tree"}, "-strategy tree contradicts the run's plan in " + where + ": strategy optimal"},
		{[]string{"-seed", "7", "-strategy", "optimal:tol=1e-8"}, "-strategy optimal:tol=1e-08 contradicts the run's plan in " + where + ": strategy optimal"},
		{[]string{"-seed", "7", "-algo", "nonprivate"}, "-algo nonprivate contradicts the run's plan in " + where + ": algo correlated"},
		{[]string{"-seed", "7", "-clip", "4"}, "-clip 4 contradicts the run's plan in " + where + ": clip 5"},
		{[]string{"-seed", "8"}, "-seed 8 contradicts the run's plan in " + where + ": its seed has SHA-256 " + plan.SeedDigest(7)},
		{nil, "-seed is missing: the run's plan in " + where + " records a seed (SHA-256 " + plan.SeedDigest(7) + ")"},
	} {
		args := append(slices.Clone(base), c.args...)
		r := runOfl(t, args...)
		if r.code != cli.ExitUsage || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("server on another run's state, %v: exit %d, %q; want exit %d and one line containing %q", c.args, r.code, r.stderr, cli.ExitUsage, c.want)
		}
	}
	// The same flags resume the run (and stop: no learner joins), also
	// with the recorded strategy's default written out (it was refused as
	// a contradiction: "-strategy optimal:tol=1e-10 contradicts ...:
	// strategy optimal").
	for _, extra := range [][]string{nil, {"-strategy", "optimal:tol=1e-10"}} {
		if r := runOfl(t, append(append(slices.Clone(base), "-seed", "7", "-join-timeout", "1ms"), extra...)...); r.code != cli.ExitFailure || !strings.Contains(r.stderr, "msg=resumed") || !strings.Contains(r.stderr, "too few learners") {
			t.Errorf("server restarted with its run's flags %v: exit %d, %q; want it to resume, then stop for want of learners", extra, r.code, r.stderr)
		}
	}
}

// The TLS flags: a server with mutual TLS and three learners with their
// certificates release the simulation's models; a learner without a
// certificate is refused at once, with the flags it lacks named.
func TestMutualTLSFlags(t *testing.T) {
	runFlags := []string{"-learners", "3", "-tau", "2", "-rounds", "6", "-dim", "4", "-seed", "2"}
	want, _ := simulated(t, runFlags)
	dir := t.TempDir()
	ca := testpki.New(t, dir, "ca")
	cert, key := ca.Issue(t, "server", true)
	state := filepath.Join(dir, "state")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var srvLog testutil.SyncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"server", "-state", state, "-listen", "127.0.0.1:0", "-linger", "5s",
			"-tls-cert", cert, "-tls-key", key, "-client-ca", ca.File}, runFlags...), env{stdout: io.Discard, stderr: &srvLog})
	}()
	addr := servingAddr(t, &srvLog, done)
	var stranger testutil.SyncBuffer
	if code := run(ctx, []string{"learner", "-server", addr, "-id", "0", "-seed", "2", "-ca", ca.File}, env{stdout: io.Discard, stderr: &stranger}); code != cli.ExitFailure || !strings.Contains(stranger.String(), "certificate required") || !strings.Contains(stranger.String(), "give -tls-cert and -tls-key") {
		t.Errorf("learner without a certificate: exit %d, %q", code, stranger.String())
	}
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			c, k := ca.Issue(t, fednet.LearnerName(i), false)
			var lerr testutil.SyncBuffer
			if code := run(ctx, []string{"learner", "-server", addr, "-id", strconv.Itoa(i), "-seed", "2", "-ca", ca.File, "-tls-cert", c, "-tls-key", k}, env{stdout: io.Discard, stderr: &lerr}); code != cli.ExitOK {
				t.Errorf("learner %d: exit %d: %s", i, code, lerr.String())
			}
		})
	}
	wg.Wait()
	if code := <-done; code != cli.ExitOK {
		t.Fatalf("server: exit %d: %s", code, srvLog.String())
	}
	got := readModels(t, state, 6)
	for r := range want {
		requireSame(t, "x^"+strconv.Itoa(r), got[r], want[r])
	}
}

// A learner whose -id is outside the server's run (0..n-1) is told so as a
// usage error naming -id and the range, not with the raw gRPC refusal
// ("rpc error: code = InvalidArgument desc = learner 2, want 0..1", exit 1);
// so is one whose -data has another number of features than the run (it
// was exit status 1).
func TestLearnerContradictsTheRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var srvLog testutil.SyncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"server", "-insecure", "-state", filepath.Join(t.TempDir(), "state"), "-listen", "127.0.0.1:0",
			"-learners", "2", "-tau", "1", "-rounds", "2", "-dim", "3", "-seed", "1"}, env{stdout: io.Discard, stderr: &srvLog})
	}()
	addr := servingAddr(t, &srvLog, done)
	for _, id := range []string{"2", "7"} {
		r := runOfl(t, "learner", "-insecure", "-server", addr, "-id", id, "-seed", "1", "-give-up", "20s")
		want := "ofl learner: -id " + id + " contradicts the server's run: want an index in 0..1"
		if r.code != cli.ExitUsage || !strings.HasPrefix(lastLine(r.stderr), want) {
			t.Errorf("learner -id %s of 2: exit %d, %q; want exit %d and a last line starting %q", id, r.code, r.stderr, cli.ExitUsage, want)
		}
	}
	csv := filepath.Join(t.TempDir(), "two.csv")
	if err := os.WriteFile(csv, []byte(strings.Repeat("1,0.5,0.2\n-1,0.1,0.3\n", 4)), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runOfl(t, "learner", "-insecure", "-server", addr, "-id", "0", "-seed", "1", "-data", csv, "-give-up", "20s")
	want := "ofl learner: -data " + csv + " has 2 features, contradicting the server's run: features 3"
	if r.code != cli.ExitUsage || !strings.HasPrefix(lastLine(r.stderr), want) {
		t.Errorf("learner with 2 features of 3: exit %d, %q; want exit %d and a last line starting %q", r.code, r.stderr, cli.ExitUsage, want)
	}
	// A learner that requires secure aggregation against one colluder
	// refuses the plain run after Join, before it asks for a model.
	r = runOfl(t, "learner", "-insecure", "-server", addr, "-id", "0", "-seed", "1", "-colluders", "1", "-give-up", "20s")
	want = "ofl learner: the server's run has no secure aggregation, this learner's minimum colluders is 1"
	if r.code != 1 || !strings.HasPrefix(lastLine(r.stderr), want) {
		t.Errorf("learner -colluders 1 of a plain run: exit %d, %q; want exit 1 and a last line starting %q", r.code, r.stderr, want)
	}
	cancel()
	<-done
}
