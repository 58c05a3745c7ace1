package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dpmf/dpmf/dataset"
	"github.com/dpmf/dpmf/fednet"
	"github.com/dpmf/dpmf/internal/cli"
	"github.com/dpmf/dpmf/internal/testutil"
	"github.com/dpmf/dpmf/plan"
)

// writeCSV writes rows of "label,f1,f2" to a file named name in a fresh
// directory: the labels alternate, the features follow from k.
func writeCSV(t *testing.T, name string, rows int, k float64) string {
	t.Helper()
	var b strings.Builder
	for i := range rows {
		fmt.Fprintf(&b, "%d,%g,%g\n", 2*(i%2)-1, k*float64(i%7)+0.1*float64(i), float64(i%5)-k)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// A server given -data records in run.json the data's source as given and
// the SHA-256 of the data set as the learners deal it (the digest of the
// same file dealt by package dataset directly), and ofl evaluate refuses,
// as a usage error naming both, data that is not the run's: another
// -split of the same file, another file of the same width, other
// synthetic parameters. Before, evaluate checked only the number of
// features and silently evaluated the models on the wrong data. A run
// whose plan records no data (a server without -data, as every run before
// this change) still evaluates, and evaluate says that the data could not
// be checked.
func TestEvaluateChecksTheData(t *testing.T) {
	csvA := writeCSV(t, "a.csv", 40, 1)
	csvB := writeCSV(t, "b.csv", 40, 2)
	shape := []string{"-learners", "2", "-tau", "1", "-rounds", "4", "-seed", "5", "-eps", "5", "-strategy", "sqrt"}
	state := serveLoopbackWith(t, append([]string{"-data", csvA, "-split", "label"}, shape...), []string{"-data", csvA, "-split", "label"}, 2, "5")

	tab, err := dataset.LoadCSV(csvA)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := tab.Deal(2, 4, 1, dataset.Split{Kind: dataset.ByLabel}, 5)
	if err != nil {
		t.Fatal(err)
	}
	want := plan.Data{Source: "csv:a.csv", Split: "label", SHA256: ds.SHA256()}
	if got := readPlan(t, state).Data; got == nil || *got != want {
		t.Fatalf("run.json records data %+v, want %+v", got, want)
	}
	if r := runOfl(t, "evaluate", "-state", state, "-seed", "5", "-data", csvA, "-split", "label", "-json"); r.code != cli.ExitOK || r.stderr != "" {
		t.Errorf("the run's own data: exit %d, stderr %q; want exit 0 and nothing on stderr", r.code, r.stderr)
	}
	iid, err := tab.Deal(2, 4, 1, dataset.Split{}, 5)
	if err != nil {
		t.Fatal(err)
	}
	where := filepath.Join(state, "run.json")
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"another split", []string{"-data", csvA, "-split", "iid"},
			"-data " + csvA + " -split iid contradicts the run's plan in " + where + ": the data given is csv:a.csv, split iid, SHA-256 " + iid.SHA256() +
				", the run's is csv:a.csv, split label, SHA-256 " + want.SHA256},
		{"another file of the same width", []string{"-data", csvB, "-split", "label"},
			"-data " + csvB + " -split label contradicts the run's plan in " + where + ": the data given is csv:b.csv, split label, SHA-256 "},
	} {
		r := runOfl(t, append([]string{"evaluate", "-state", state, "-seed", "5"}, c.args...)...)
		if r.code != cli.ExitUsage || r.stdout != "" || !strings.HasPrefix(strings.TrimSpace(r.stderr), "ofl evaluate: "+c.want) || !strings.HasSuffix(strings.TrimSpace(r.stderr), want.SHA256) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit %d and a line starting %q and ending in the run's digest", c.name, r.code, r.stdout, r.stderr, cli.ExitUsage, "ofl evaluate: "+c.want)
		}
	}

	// Synthetic data: the parameters are part of the record.
	syn := []string{"-learners", "2", "-tau", "1", "-rounds", "2", "-dim", "3", "-seed", "5"}
	state = serveLoopbackWith(t, append([]string{"-data", "synthetic:alpha=0.5,beta=0.5"}, syn...), []string{"-data", "synthetic:alpha=0.5,beta=0.5"}, 2, "5")
	sd, err := dataset.Synthetic{Alpha: 0.5, Beta: 0.5, Dim: 3}.Dataset(2, 2, 1, 5)
	if err != nil {
		t.Fatal(err)
	}
	if got := readPlan(t, state).Data; got == nil || *got != (plan.Data{Source: "synthetic:alpha=0.5,beta=0.5", SHA256: sd.SHA256()}) {
		t.Fatalf("run.json records synthetic data %+v, want source synthetic:alpha=0.5,beta=0.5 and SHA-256 %s", got, sd.SHA256())
	}
	if r := runOfl(t, "evaluate", "-state", state, "-seed", "5", "-data", "synthetic:alpha=0.5,beta=0.5"); r.code != cli.ExitOK || r.stderr != "" {
		t.Errorf("the run's own synthetic data: exit %d, stderr %q", r.code, r.stderr)
	}
	r := runOfl(t, "evaluate", "-state", state, "-seed", "5")
	if w := "ofl evaluate: -data synthetic contradicts the run's plan in " + filepath.Join(state, "run.json") + ": the data given is synthetic:alpha=0.1,beta=0.1, SHA-256 "; r.code != cli.ExitUsage || !strings.HasPrefix(strings.TrimSpace(r.stderr), w) {
		t.Errorf("the default synthetic data against alpha = beta = 0.5: exit %d, stderr %q; want exit %d and a line starting %q", r.code, r.stderr, cli.ExitUsage, w)
	}

	// A run that records no data: evaluated, with a line that says so.
	state = serveLoopback(t, syn, 2, "5")
	if p := readPlan(t, state); p.Data != nil {
		t.Fatalf("a server without -data recorded %+v", p.Data)
	}
	r = runOfl(t, "evaluate", "-state", state, "-seed", "5", "-json")
	if w := "ofl evaluate: the run's plan in " + filepath.Join(state, "run.json") + " records no data"; r.code != cli.ExitOK || r.stdout == "" || !strings.HasPrefix(r.stderr, w) || !strings.Contains(r.stderr, "could not be checked") {
		t.Errorf("a run without a data record: exit %d, stderr %q; want exit 0, the report, and a line starting %q", r.code, r.stderr, w)
	}
}

// ofl server refuses -data without -seed (the data cannot be dealt as the
// learners deal it), and a restart whose data is not the recorded data
// (other data, data given to a run that records none, none given to a run
// that records some) before any work, as a usage error naming both.
func TestServerDataFlags(t *testing.T) {
	r := runOfl(t, "server", "-insecure", "-state", filepath.Join(t.TempDir(), "s"), "-data", "synthetic", "-learners", "2", "-rounds", "2", "-tau", "1", "-dim", "3")
	if w := "ofl server: -data without -seed"; r.code != cli.ExitUsage || !strings.HasPrefix(strings.TrimSpace(r.stderr), w) {
		t.Errorf("-data without -seed: exit %d, stderr %q; want exit %d and %q", r.code, r.stderr, cli.ExitUsage, w)
	}
	csvA := writeCSV(t, "a.csv", 40, 1)
	shape := []string{"-learners", "2", "-tau", "1", "-rounds", "2", "-seed", "5"}
	// startRun starts a run in a fresh state directory and stops the
	// server before any learner comes.
	startRun := func(args ...string) string {
		state := filepath.Join(t.TempDir(), "state")
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var srvLog testutil.SyncBuffer
		code := run(ctx, append([]string{"server", "-insecure", "-state", state, "-listen", "127.0.0.1:0", "-join-timeout", "1ms"}, args...), env{stdout: io.Discard, stderr: &srvLog})
		if _, err := fednet.ReadPlan(state); err != nil {
			t.Fatalf("server %v: exit %d, no run.json (%v): %s", args, code, err, srvLog.String())
		}
		return state
	}
	state := startRun(append([]string{"-data", csvA}, shape...)...)
	if readPlan(t, state).Data == nil {
		t.Fatal("no data recorded")
	}
	none := startRun(append([]string{"-dim", "2"}, shape...)...)
	r = runOfl(t, append([]string{"server", "-insecure", "-state", none, "-listen", "127.0.0.1:0", "-data", csvA}, shape...)...)
	if w := "ofl server: -data " + csvA + " -split iid contradicts the run's plan in " + filepath.Join(none, "run.json") + ": the run records no data"; r.code != cli.ExitUsage || !strings.HasPrefix(strings.TrimSpace(r.stderr), w) {
		t.Errorf("data given to a run without: exit %d, stderr %q; want exit %d and a line starting %q", r.code, r.stderr, cli.ExitUsage, w)
	}
	where := filepath.Join(state, "run.json")
	csvB := writeCSV(t, "b.csv", 40, 2)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"another file", append([]string{"-data", csvB}, shape...), "-data " + csvB + " -split iid contradicts the run's plan in " + where + ": the data given is csv:b.csv, split iid, SHA-256 "},
		{"another split", append([]string{"-data", csvA, "-split", "label"}, shape...), "-data " + csvA + " -split label contradicts the run's plan in " + where},
		{"no data", append([]string{"-dim", "2"}, shape...), "-data is missing: the run's plan in " + where + " records its data (csv:a.csv, split iid, SHA-256 "},
	} {
		r := runOfl(t, append([]string{"server", "-insecure", "-state", state, "-listen", "127.0.0.1:0"}, c.args...)...)
		if r.code != cli.ExitUsage || !strings.HasPrefix(strings.TrimSpace(r.stderr), "ofl server: "+c.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d and a line starting %q", c.name, r.code, r.stderr, cli.ExitUsage, "ofl server: "+c.want)
		}
	}
}

// ofl server -data-sha256 HEX records the operator's digest of the data
// the learners deal with -data's source: a private run with a random noise
// key (no -seed, so the server cannot deal the data) records its data all
// the same, and ofl evaluate checks its data against the digest. The
// expected digest comes from package dataset dealing the file directly.
// The flag's form is checked (64 hexadecimal digits), it needs -data, and
// with -seed it must be the digest of the data the server deals: each of
// these is a one-line usage error. Before, such a run recorded no data
// and evaluate could not check it.
func TestServerDataSHA256(t *testing.T) {
	csvA := writeCSV(t, "a.csv", 40, 1)
	tab, err := dataset.LoadCSV(csvA)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := tab.Deal(2, 4, 1, dataset.Split{Kind: dataset.ByLabel}, 5)
	if err != nil {
		t.Fatal(err)
	}
	digest := ds.SHA256()
	shape := []string{"-learners", "2", "-tau", "1", "-rounds", "4", "-eps", "5", "-strategy", "sqrt"}
	data := []string{"-data", csvA, "-split", "label"}
	other := strings.Repeat("ab", 32)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"too short", append([]string{"-data-sha256", "abc"}, data...), `-data-sha256 "abc": want the data set's SHA-256 as 64 hexadecimal digits`},
		{"not hexadecimal", append([]string{"-data-sha256", strings.Repeat("g", 64)}, data...), `-data-sha256 "` + strings.Repeat("g", 64) + `": want`},
		{"65 digits", append([]string{"-data-sha256", digest + "0"}, data...), `-data-sha256 "` + digest + `0": want`},
		{"without -data", []string{"-data-sha256", digest, "-dim", "2"}, "-data-sha256 without -data: "},
		{"another digest than -data and -seed deal", append([]string{"-data-sha256", other, "-seed", "5"}, data...),
			"-data-sha256 " + other + " contradicts -data " + csvA + " -split label with -seed 5: the data set they deal has SHA-256 " + digest},
	} {
		state := filepath.Join(t.TempDir(), "s")
		r := runOfl(t, append(append([]string{"server", "-insecure", "-state", state, "-listen", "127.0.0.1:0"}, c.args...), shape...)...)
		if r.code != cli.ExitUsage || strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, "ofl server: "+c.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d and one line starting %q", c.name, r.code, r.stderr, cli.ExitUsage, "ofl server: "+c.want)
		}
		if _, err := os.Stat(state); err == nil {
			t.Errorf("%s: the state directory was created", c.name)
		}
	}

	// With -seed, the digest the server deals, given in capitals, is
	// accepted and recorded in lower case.
	state := serveLoopbackWith(t, append(append([]string{"-data-sha256", strings.ToUpper(digest), "-seed", "5"}, data...), shape...), data, 2, "5")
	want := plan.Data{Source: "csv:a.csv", Split: "label", SHA256: digest}
	if got := readPlan(t, state).Data; got == nil || *got != want {
		t.Errorf("-data-sha256 with -seed: run.json records %+v, want %+v", got, want)
	}

	// Without -seed: a noise key from crypto/rand, and the data record.
	state = serveLoopbackWith(t, append(append([]string{"-data-sha256", digest}, data...), shape...), data, 2, "5")
	p := readPlan(t, state)
	if got := p.Data; got == nil || *got != want {
		t.Fatalf("-data-sha256 without -seed: run.json records %+v, want %+v", got, want)
	}
	if p.SeedSHA256 != "" {
		t.Fatalf("a server without -seed recorded a seed digest %s", p.SeedSHA256)
	}
	if r := runOfl(t, "evaluate", "-state", state, "-seed", "5", "-data", csvA, "-split", "label", "-json"); r.code != cli.ExitOK || r.stderr != "" {
		t.Errorf("evaluate on the recorded data: exit %d, stderr %q; want exit 0 and nothing on stderr", r.code, r.stderr)
	}
	for _, args := range [][]string{{"-seed", "5", "-split", "iid"}, {"-seed", "6", "-split", "label"}} {
		r := runOfl(t, append([]string{"evaluate", "-state", state, "-data", csvA}, args...)...)
		if w := "contradicts the run's plan in " + filepath.Join(state, "run.json"); r.code != cli.ExitUsage || !strings.Contains(r.stderr, w) || !strings.HasSuffix(strings.TrimSpace(r.stderr), digest) {
			t.Errorf("evaluate %v: exit %d, stderr %q; want exit %d, %q and the recorded digest", args, r.code, r.stderr, cli.ExitUsage, w)
		}
	}
}
