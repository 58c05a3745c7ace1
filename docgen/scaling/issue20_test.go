package main

import (
	"context"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/internal/ceiling"
	"github.com/dpmf/dpmf/internal/testutil"
	"github.com/dpmf/dpmf/npy"
	"gonum.org/v1/gonum/mat"
)

// interleave alternates the GOMAXPROCS values (1, 2, 2, 1, 1, 2), takes the
// medians of each, and stops at the first error.
func TestInterleave(t *testing.T) {
	var order []int
	times := map[int][]float64{1: {3, 1, 2}, 2: {10, 30, 20}}
	ms := interleave(3, []int{1, 2}, func(p int) (i20Sample, error) {
		order = append(order, p)
		n := 0
		for _, q := range order {
			if q == p {
				n++
			}
		}
		return i20Sample{Seconds: times[p][n-1], CPU: 2 * times[p][n-1], RSS: int64(n), Value: float64(p)}, nil
	})
	if want := []int{1, 2, 2, 1, 1, 2}; !slices.Equal(order, want) {
		t.Errorf("order %v, want %v", order, want)
	}
	if ms[0].Procs != 1 || ms[0].Runs != 3 || ms[0].Seconds != 2 || ms[0].CPU != 4 || ms[0].RSS != 3 {
		t.Errorf("at 1: %+v, want 3 runs, median 2 s, CPU 4 s, RSS 3", ms[0])
	}
	if ms[1].Procs != 2 || ms[1].Runs != 3 || ms[1].Seconds != 20 {
		t.Errorf("at 2: %+v, want 3 runs, median 20 s", ms[1])
	}

	// The slowest first run sets the number of passes: one above 60 s.
	calls := 0
	ms = interleave(5, []int{1, 2}, func(p int) (i20Sample, error) {
		calls++
		return i20Sample{Seconds: 30 * float64(3-p)}, nil // 60 s at 1, 30 s at 2
	})
	if calls != 6 || ms[0].Runs != 3 {
		t.Errorf("60 s first run: %d calls, %d runs; want 6, 3 (at most 3 above 10 s)", calls, ms[0].Runs)
	}
	calls = 0
	interleave(5, []int{1, 2}, func(p int) (i20Sample, error) { calls++; return i20Sample{Seconds: 61}, nil })
	if calls != 2 {
		t.Errorf("61 s first run: %d calls, want 2", calls)
	}

	calls = 0
	ms = interleave(3, []int{1, 2}, func(p int) (i20Sample, error) {
		calls++
		if calls == 4 { // the second pass's run at 1
			return i20Sample{Seconds: 7}, errors.New("boom")
		}
		return i20Sample{Seconds: 1}, nil
	})
	if calls != 4 || ms[0].Err != "boom" || ms[0].Runs != 1 || ms[1].Runs != 2 || ms[1].Err != "" {
		t.Errorf("after an error: %d calls, %+v; want 4 calls, the error at 1 after 1 run, 2 runs at 2", calls, ms)
	}
}

func TestSameResult(t *testing.T) {
	a := i20Sample{Value: 100, Gap: 1e-8}
	for _, tc := range []struct {
		b    i20Sample
		ok   bool
		text string
	}{
		{i20Sample{Value: 100, Gap: 1e-8}, true, "identical bits"},
		{i20Sample{Value: 100 * (1 + 1.5e-8), Gap: 1e-8}, true, "within the gaps"},
		{i20Sample{Value: 100 * (1 + 3e-8), Gap: 1e-8}, false, "NOT within"},
		{i20Sample{Value: 100, Gap: 1e-8, Digest: "x"}, false, "outputs differ"},
	} {
		got, ok := sameResult(a, tc.b)
		if ok != tc.ok || !strings.Contains(got, tc.text) {
			t.Errorf("sameResult(%+v, %+v) = %q, %v; want %q, %v", a, tc.b, got, ok, tc.text, tc.ok)
		}
	}
	if got, ok := sameResult(i20Sample{Value: 1, Digest: "d"}, i20Sample{Value: 1, Digest: "d"}); !ok || !strings.Contains(got, "outputs") {
		t.Errorf("same digests: %q, %v", got, ok)
	}
}

// smallRows returns the rows at the small sizes, not run.
func smallRows(t *testing.T, long bool) []i20Row {
	t.Helper()
	e := &i20Env{ctx: context.Background(), tmp: t.TempDir(), sizes: i20SizeSets["small"], long: long, log: io.Discard}
	rows, err := e.i20Rows()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// rowNamed returns the first row whose name starts with prefix.
func rowNamed(t *testing.T, rows []i20Row, prefix string) i20Row {
	t.Helper()
	for _, r := range rows {
		if strings.HasPrefix(r.Name, prefix) {
			return r
		}
	}
	t.Fatalf("no row %q", prefix)
	return i20Row{}
}

// The checks of each kind of row, against hand-made measurements.
func TestIssue20Evaluate(t *testing.T) {
	rows := smallRows(t, false)
	meas := func(procs int, secs float64, s i20Sample) i20Meas {
		s.Seconds = secs
		return i20Meas{Procs: procs, Runs: 3, Seconds: secs, RSS: s.RSS, Last: s}
	}
	ok := i20Sample{Value: 5, Gap: 5e-9}

	r := rowNamed(t, rows, "structured optimum, R = 10000,")
	r.M = []i20Meas{meas(1, 12, ok), meas(2, 6, ok)}
	r.evaluate()
	if r.Ratio != 2 || !r.pass() || r.Same != "identical bits" {
		t.Errorf("2x, 6 s, same loss: ratio %v, checks %v, same %q; want 2, none, identical bits", r.Ratio, r.Checks, r.Same)
	}
	r = rowNamed(t, rows, "structured optimum, R = 10000,")
	r.M = []i20Meas{meas(1, 15, ok), meas(2, 9, i20Sample{Value: 5, Gap: 2e-8})}
	r.evaluate()
	want := []string{"ratio 1.67 < 1.7", "gap 2.0e-08 at GOMAXPROCS=2, want <= 1e-08", "9.00 s at GOMAXPROCS=2 > 8.00 s"}
	if !slices.Equal(r.Checks, want) || r.pass() {
		t.Errorf("checks %q, want %q", r.Checks, want)
	}

	r = rowNamed(t, rows, "structured optimum, R = 100000,")
	r.M = []i20Meas{meas(2, 100, i20Sample{Value: 5, Gap: 9e-9, RSS: 3.5e9})}
	r.evaluate()
	if !slices.Equal(r.Checks, []string{"peak RSS 3500.0 MB > 3000.0 MB"}) || r.Ratio != 0 {
		t.Errorf("single run over 3 GB: checks %q, ratio %v", r.Checks, r.Ratio)
	}

	r = rowNamed(t, rows, "PLD accountant, q = 0.01, sigma = 1,")
	r.M = []i20Meas{meas(1, 4, i20Sample{Value: 2, Other: 1.997, Gap: 1.5e-3}), meas(2, 2, i20Sample{Value: 2, Other: 1.9999, Gap: 5e-5})}
	r.evaluate()
	if len(r.Checks) != 1 || !strings.Contains(r.Checks[0], "width 1.5e-03 at GOMAXPROCS=1") {
		t.Errorf("wide at 1: checks %q", r.Checks)
	}

	long := rowNamed(t, rows, "banded under min-separation, R = 2000,")
	if long.NotRun != "not run (-long)" || long.pass() {
		t.Errorf("long row without -long: %q", long.NotRun)
	}
	if long := rowNamed(t, smallRows(t, true), "banded under min-separation, R = 2000,"); long.NotRun != "" {
		t.Errorf("long row with -long at small sizes: %q, want run", long.NotRun)
	}
	if est := estimate(rows, 3, 1); est <= 0 || math.IsNaN(est) {
		t.Errorf("estimate %v", est)
	}
}

// bltTestResult returns BLT rows whose verdicts are known: at R = 100 the
// loss rises at K = 3, at R = 200 K >= 6 is 0.2% above sqrt-normalized and
// the last fit took 70 s, at R = 300 sqrt-normalized is missing; under
// min-separation K = 2 is above bsr.
func bltTestResult() *i20Result {
	res := &i20Result{SqrtNorm: map[int]float64{100: 100, 200: 100}, SqrtNormNote: map[int]string{300: "no path"}, MinSepR: 50, MinSepB: 16}
	for _, r := range []int{100, 200, 300} {
		for k := 1; k <= 8; k++ {
			loss := 100.0 - float64(k)/10
			switch {
			case r == 100 && k == 3:
				loss = 101
			case r == 200:
				loss = 100.2
			}
			row := bltRow{Spec: "blt", R: r, K: k, Loss: loss, Seconds: 1, Runs: 1, How: "dense"}
			if r == 200 && k == 8 {
				row.Seconds = 70
			}
			res.BLT = append(res.BLT, row)
		}
	}
	for k := 1; k <= 8; k++ {
		res.MinSep = append(res.MinSep, bltRow{R: 50, K: k, Loss: 10 - float64(k)/10})
		bsr := 20.0
		if k == 2 {
			bsr = 9
		}
		res.BSR = append(res.BSR, bltRow{R: 50, K: k, Loss: bsr})
	}
	return res
}

func TestBLTChecks(t *testing.T) {
	res := bltTestResult()
	v := res.bltChecks()
	if len(v.Mono) != 1 || !strings.Contains(v.Mono[0], "R = 100: K = 3") {
		t.Errorf("monotone: %q, want R = 100, K = 3", v.Mono)
	}
	if len(v.NearSqrt) != 3 || !strings.Contains(v.NearSqrt[0], "R = 200, K = 6: +0.200%") {
		t.Errorf("near sqrt-normalized: %q, want K = 6, 7, 8 at R = 200", v.NearSqrt)
	}
	if !slices.Equal(v.Skipped, []string{"R = 300: sqrt-normalized not computed (no path)"}) {
		t.Errorf("skipped: %q", v.Skipped)
	}
	// R = 200 is not the largest R: its 70 s is not the time target.
	if len(v.Fast) != 0 {
		t.Errorf("time: %q, want none (the largest R took 1 s)", v.Fast)
	}
	if len(v.MinSepMono) != 0 || len(v.MinSepBSR) != 1 || !strings.Contains(v.MinSepBSR[0], "K = 2") {
		t.Errorf("min-separation: %q, %q; want none, K = 2 above bsr", v.MinSepMono, v.MinSepBSR)
	}
	res.BLT = res.BLT[:16] // R = 100 and 200: 200 is the largest
	if v := res.bltChecks(); len(v.Fast) != 1 || !strings.Contains(v.Fast[0], "70.00 s") {
		t.Errorf("time at the largest R: %q, want 70.00 s", v.Fast)
	}
	res.BLT[20-8].Err = "no path"
	if v := res.bltChecks(); !slices.Contains(v.Mono, "R = 200, K = 5: no path") {
		t.Errorf("an error is a failed check: %q", v.Mono)
	}
}

// The markdown writer: markers, the pair side by side with its ratio, the
// single run, the row not run, an error, and the BLT verdicts.
func TestIssue20Markdown(t *testing.T) {
	res := bltTestResult()
	res.Sizes, res.Reps, res.NumCPU, res.GOMAXPROCS, res.CPUModel = "full", 3, 2, 2, "test CPU"
	res.LoadBefore, res.LoadAfter, res.Elapsed, res.Estimate = "0.1 0.2 0.3", "0.4 0.5 0.6", 700*time.Second, 720*time.Second
	pair := i20Row{Item: "1", Name: "pair", Command: "mfsolve -R 10", Limit: "ratio >= 1.7", Procs: []int{1, 2},
		M: []i20Meas{{Procs: 1, Runs: 3, Seconds: 3.4, CPU: 3.3, RSS: 2e8, Last: i20Sample{Value: 1.5, Gap: 1e-9, Iters: 7}},
			{Procs: 2, Runs: 3, Seconds: 1.7, CPU: 3.5, RSS: 2.1e8, Last: i20Sample{Value: 1.5, Gap: 1e-9, Iters: 7}}}}
	pair.evaluate()
	single := i20Row{Item: "2", Name: "single", Command: "mfsolve -R 20", Limit: "<= 120 s", Procs: []int{2},
		M: []i20Meas{{Procs: 2, Runs: 1, Seconds: 95, CPU: 180, RSS: 2.5e9, Last: i20Sample{Value: 2, Gap: 1e-9}}}}
	notRun := i20Row{Item: "3", Name: "long", Command: "mfsolve -R 30", Procs: []int{2}, NotRun: "not run (-long)"}
	failed := i20Row{Item: "5", Name: "acct", Command: "dpacct epsilon", Procs: []int{1, 2},
		M: []i20Meas{{Procs: 1, Err: "exit status 1: bad"}, {Procs: 2}}}
	res.Rows = []i20Row{pair, single, notRun, failed}
	md := res.markdown("go run ./docgen/scaling -issue20-only", time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC))
	if !strings.HasPrefix(md, issue20Begin+"\n") || !strings.HasSuffix(md, issue20End+"\n") {
		t.Fatalf("markers missing:\n%s", md)
	}
	for _, want := range []string{
		"| 1 | pair | `mfsolve -R 10` | ratio >= 1.7 | 1, 2 / 2 | 3.40 s | 1.70 s | 3, 3 | 3.30 s, 3.50 s | 200.0 MB, 210.0 MB | loss 1.5, gap 1.0e-09, 7 iterations | identical bits | 2.00 | **PASS** |",
		"| 2 | single | `mfsolve -R 20` | <= 120 s | 2 / 2 | — | 95.00 s | —, 1 | —, 180 s | —, 2500.0 MB | loss 2, gap 1.0e-09, 0 iterations (1 run: above 60 s) |  |  | **PASS** |",
		"| 3 | long | `mfsolve -R 30` |  | 2 / 2 | | | | | | not run (-long) | | | not run (-long) |",
		"error at GOMAXPROCS=1: exit status 1: bad",
		"2026-11-26 08:00 UTC in 11m40s (estimated beforehand: 12m0s)",
		"runtime.NumCPU() = 2",
		"| 100 | 3 | 101 | +1.000% | 1.00 s | 1 | dense |",
		"| 300 | 1 | 99.9 | — |",
		"R = 300: not computed (no path)",
		"skipped at R = 300: sqrt-normalized not computed (no path).",
		"- Non-increasing in K at each R: **FAIL** (R = 100: K = 3 (101) above K = 2 (99.8))",
		"- Never above bsr with the same memory: **FAIL** (K = 2: 9.8 above bsr (9))",
		"| 2 | 9.8 | 0 µs | 9 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("section lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "Sizes \"") {
		t.Error("full sizes flagged as a test")
	}
	if !strings.Contains(md, "**FAIL** (error at GOMAXPROCS=1; not run at GOMAXPROCS=2) |") {
		t.Errorf("the error row is not a FAIL:\n%s", md)
	}
}

// The section takes the place of the hand-added accountant section, then
// of its own previous version.
func TestReplaceIssue20(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.md")
	if err := replaceIssue20(path, "x"); err == nil {
		t.Error("missing report accepted")
	}
	acct := accountantBegin + "\nhand\n" + accountantEnd
	os.WriteFile(path, []byte("# r\n\n"+acct+"\n\n## tail\n"), 0o644)
	sec := issue20Begin + "\nv1\n" + issue20End + "\n"
	if err := replaceIssue20(path, sec); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	if want := "# r\n\n" + sec + "\n## tail\n"; string(got) != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if err := replaceIssue20(path, strings.Replace(sec, "v1", "v2", 1)); err != nil {
		t.Fatal(err)
	}
	got, _ = os.ReadFile(path)
	if want := "# r\n\n" + strings.Replace(sec, "v1", "v2", 1) + "\n## tail\n"; string(got) != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestParseFlagsIssue20(t *testing.T) {
	cfg, err := parseFlags([]string{"-issue20-only", "-long", "-issue20-sizes", "small"}, io.Discard)
	if err != nil || !cfg.issue20Only || !cfg.long || cfg.issue20Sizes != "small" {
		t.Errorf("got %+v, %v", cfg, err)
	}
	if cfg, _ := parseFlags(nil, io.Discard); cfg.issue20Sizes != "full" {
		t.Errorf("default sizes %q, want full", cfg.issue20Sizes)
	}
	if _, err := parseFlags([]string{"-issue20-sizes", "huge"}, io.Discard); err == nil || !strings.Contains(err.Error(), "-issue20-sizes huge: want full or small") {
		t.Errorf("bad sizes: %v", err)
	}
}

// withProcs sets GOMAXPROCS for the call only.
func TestWithProcs(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	var inside int
	err := withProcs(before+1, func() error { inside = runtime.GOMAXPROCS(0); return errors.New("kept") })
	if inside != before+1 || runtime.GOMAXPROCS(0) != before || err == nil || err.Error() != "kept" {
		t.Errorf("inside %d (want %d), after %d (want %d), error %v", inside, before+1, runtime.GOMAXPROCS(0), before, err)
	}
}

// Each ceiling run gives the same bits at GOMAXPROCS 1 and 2, keeps the
// size of its first call, and sums what the kernels give alone.
func TestCeilingRun(t *testing.T) {
	z := i20SizeSets["small"]
	z.CeilBytes, z.CeilSeconds = 1<<20, 0.005
	e := &i20Env{ctx: context.Background(), sizes: z}
	for _, kind := range []string{"compute", "memory"} {
		s1, s2 := runPair(t, e.ceilingRun(kind))
		if s1.Iters != s2.Iters || math.Float64bits(s1.Value) != math.Float64bits(s2.Value) || !(s2.Seconds > 0) {
			t.Errorf("%s: %+v at 1, %+v at 2: want the same size and bits", kind, s1, s2)
		}
		want := 0.0
		switch kind {
		case "compute":
			want = ceiling.Compute(s1.Iters, 0) + ceiling.Compute(s1.Iters, 1)
		case "memory":
			// Each 1 MB array holds 131072 values j % 1000 / 1000.
			one := 0.0
			for j := range z.CeilBytes / 8 {
				one += float64(j%1000) / 1000
			}
			want = 2 * float64(s1.Iters) * one
		}
		if math.Abs(s1.Value-want) > 1e-9*want {
			t.Errorf("%s: sum %.15g, want %.15g", kind, s1.Value, want)
		}
	}
	if _, err := e.ceilingRun("disk")(1); err == nil || !strings.Contains(err.Error(), "want compute or memory") {
		t.Errorf("unknown kernel: %v", err)
	}
}

// Forming B and C in process: B C is the prefix-sum workload (ones on and
// below the diagonal), and the bits agree at GOMAXPROCS 1 and 2.
func TestFormRun(t *testing.T) {
	const r = 64
	w, err := factorize.Prefix(r)
	if err != nil {
		t.Fatal(err)
	}
	e := &i20Env{ctx: context.Background()}
	s1, err := e.formRun(w)(1)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := e.formRun(w)(2)
	if err != nil {
		t.Fatal(err)
	}
	if same, ok := sameResult(s1, s2); !ok || s1.Digest == "" {
		t.Errorf("at 1 and 2: %s (digest %q)", same, s1.Digest)
	}
	f, err := factorize.Optimal(context.Background(), w, factorize.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, c, err := f.Factors()
	if err != nil {
		t.Fatal(err)
	}
	if got := denseDigest(b, c); got != s1.Digest {
		t.Errorf("digest %s, want %s (factorize.Optimal's B and C)", s1.Digest, got)
	}
	var bc mat.Dense
	bc.Mul(b, c)
	for i := range r {
		for j := range r {
			want := 0.0
			if j <= i {
				want = 1
			}
			if d := math.Abs(bc.At(i, j) - want); d > 1e-8 {
				t.Fatalf("(B C)[%d][%d] = %v, want %v", i, j, bc.At(i, j), want)
			}
		}
	}
}

// runPair takes one run at GOMAXPROCS 1 and one at 2.
func runPair(t *testing.T, run func(int) (i20Sample, error)) (s1, s2 i20Sample) {
	t.Helper()
	var err error
	if s1, err = run(1); err != nil {
		t.Fatal(err)
	}
	if s2, err = run(2); err != nil {
		t.Fatal(err)
	}
	return s1, s2
}

// The disk reference writes B's and C's shapes: the files read back as
// the lower-triangular arrays 1 + i + j (+1 for C), zeros above, and a
// second run replaces them with the same bytes.
func TestDiskRun(t *testing.T) {
	const r = 40
	e := &i20Env{ctx: context.Background(), tmp: t.TempDir()}
	s1, s2 := runPair(t, e.diskRun(r))
	if same, ok := sameResult(s1, s2); !ok || s1.Digest == "" || s1.Seconds <= 0 {
		t.Errorf("at 1 and 2: %s (digest %q, %v s)", same, s1.Digest, s1.Seconds)
	}
	for k, name := range []string{"disk-B.npy", "disk-C.npy"} {
		a, err := npy.Load(filepath.Join(e.tmp, name))
		if err != nil {
			t.Fatal(err)
		}
		if len(a.Shape) != 2 || a.Shape[0] != r || a.Shape[1] != r {
			t.Fatalf("%s: shape %v", name, a.Shape)
		}
		for i := range r {
			for j := range r {
				want := 0.0
				if j <= i {
					want = float64(1 + i + j + k)
				}
				if got := a.Data[i*r+j]; got != want {
					t.Fatalf("%s[%d][%d] = %v, want %v", name, i, j, got, want)
				}
			}
		}
	}
	if names := testutil.DirNames(t, e.tmp); !slices.Equal(names, []string{"disk-B.npy", "disk-C.npy"}) {
		t.Errorf("files left: %v", names)
	}
}

// The ceiling rows have no target: a ratio below 1.7 is no FAIL, and the
// paths' results give their share of the compute ceiling.
func TestCeilingRows(t *testing.T) {
	full := &i20Env{ctx: context.Background(), sizes: i20SizeSets["full"]}
	fullRows, err := full.i20Rows()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"its own 128 MiB array", "forming B and C, R = 10000 (solve, form and write 1.6 GB)"} {
		if !slices.ContainsFunc(fullRows, func(r i20Row) bool { return strings.Contains(r.Name+" "+r.Command, want) }) {
			t.Errorf("no full-size row says %q", want)
		}
	}
	rows := smallRows(t, false)
	if rows[0].Ceiling != "compute" || rows[1].Ceiling != "memory" || rows[2].Ceiling != "disk" {
		t.Fatalf("first rows %q, %q, %q: want the two ceilings and the disk", rows[0].Name, rows[1].Name, rows[2].Name)
	}
	meas := func(procs int, secs float64) i20Meas {
		return i20Meas{Procs: procs, Runs: 3, Seconds: secs, Last: i20Sample{Value: 1, Iters: 9}}
	}
	c, m, dk := rows[0], rows[1], rows[2]
	c.M, m.M, dk.M = []i20Meas{meas(1, 2), meas(2, 1.25)}, []i20Meas{meas(1, 1.3), meas(2, 1)}, []i20Meas{meas(1, 1.1), meas(2, 1)}
	c.evaluate()
	m.evaluate()
	dk.evaluate()
	if !c.pass() || c.verdict() != "reference" || len(m.Checks) > 0 || dk.verdict() != "reference" {
		t.Errorf("ceilings at 1.6 and 1.3, disk at 1.1: %q %v, %v, %q", c.verdict(), c.Checks, m.Checks, dk.verdict())
	}
	path := rowNamed(t, rows, "forming B and C, R = 500, in process")
	path.M = []i20Meas{meas(1, 3.2), meas(2, 2)}
	path.evaluate()
	res := &i20Result{Sizes: "small", Reps: 3, NumCPU: 2, GOMAXPROCS: 2, Rows: []i20Row{c, m, dk, path}}
	md := res.markdown("test", time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC))
	for _, want := range []string{
		"two-core ceiling (1.60 compute-bound, 1.30 memory-streaming)",
		"| 1.60 | reference |",
		"| 1.30 | reference |",
		"| 1.10 | reference |",
		"The third (ratio 1.10) is the disk",
		"9 steps per piece, sum 1",
		"| 1.60 | **FAIL** (ratio 1.60 < 1.7), 100% of the ceiling |",
		"B and C digest",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("section lacks %q:\n%s", want, md)
		}
	}
}
