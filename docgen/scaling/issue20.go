package main

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/internal/atomicfile"
	"github.com/dpmf/dpmf/internal/ceiling"
	"github.com/dpmf/dpmf/internal/cli"
	"github.com/dpmf/dpmf/internal/docgen"
	"github.com/dpmf/dpmf/internal/procusage"
	"github.com/dpmf/dpmf/mechanism"
	"github.com/dpmf/dpmf/npy"
	"gonum.org/v1/gonum/mat"
)

// The issue-20 section ("every core, R = 10^7, banded at 10^5, BLT that
// improves with buffers, and a two-sided accountant at production delta"):
// each target of the issue with its command, limit, median, runs, peak RSS,
// GOMAXPROCS and NumCPU. Every speed-up is GOMAXPROCS=1 against 2 in the
// same run, the two runs alternated (1, 2, 2, 1, ...) so that load affects
// both alike. Subprocesses get GOMAXPROCS through their environment;
// in-process rows set runtime.GOMAXPROCS and restore it.

const (
	issue20Begin = "<!-- issue20: begin -->"
	issue20End   = "<!-- issue20: end -->"
	// The hand-added accountant section, which the issue-20 section
	// replaces where it has not been written yet.
	accountantBegin = "<!-- accountant: begin -->"
	accountantEnd   = "<!-- accountant: end -->"
	// speedupTarget is the issue's least ratio of the time on one core to
	// the time on two, on each heavy path.
	speedupTarget = 1.7
	// pldDelta is the delta of the accountant's rows (production federated
	// learning).
	pldDelta = 1e-10
	// bltDenseMax is the largest R at which a strategy without a loss-only
	// path is run with dense B and C.
	bltDenseMax = 10000
	// bltSlack is the relative rounding allowed in "non-increasing in K":
	// the reported losses are recomputed from the factors, not the fit's.
	bltSlack = 1e-12
	// i20Cap stops a subprocess run that takes longer than this.
	i20Cap = 15 * time.Minute
)

// pldPoint is one point of the accountant's grid.
type pldPoint struct {
	Q, Sigma float64
	Steps    int
}

// i20Sizes are the sizes of the section's rows.
type i20Sizes struct {
	Name string
	// Structured and Large: the structured optimum, loss only, at
	// GOMAXPROCS 1 and 2, and at 2 alone.
	Structured, Large int
	Dense             int // the dense path, loss only
	Forms             int // B and C written
	// Banded and BandedLong: banded under Bands-min-separation with Bands
	// bands; BandedLong only with -long.
	Banded, BandedLong, Bands int
	PLD                       []pldPoint
	MechDim, MechRounds       int
	MechBuffers               int
	BLTRs                     []int // single participation, K = 1..8
	MinSepR, MinSepB          int   // BLT against bsr under minsep
	// CeilBytes is the size of each goroutine's array in the memory
	// ceiling, CeilSeconds the time each ceiling kernel is sized to take
	// at GOMAXPROCS=1.
	CeilBytes   int
	CeilSeconds float64
	// EstScale multiplies the estimated times (taken at the full sizes).
	EstScale float64
}

// i20SizeSets are the size sets of -issue20-sizes.
var i20SizeSets = map[string]i20Sizes{
	"full": {
		Name: "full", Structured: 1000000, Large: 10000000, Dense: 2000, Forms: 10000,
		Banded: 10000, BandedLong: 100000, Bands: 64,
		PLD:     []pldPoint{{1e-4, 1, 100000}, {1e-4, 0.5, 1000000}},
		MechDim: 1000000, MechRounds: 20, MechBuffers: 8,
		BLTRs: []int{1000, 10000, 100000}, MinSepR: 1000, MinSepB: 16,
		CeilBytes: 128 << 20, CeilSeconds: 1, EstScale: 1,
	},
	"small": {
		Name: "small", Structured: 10000, Large: 100000, Dense: 200, Forms: 500,
		Banded: 1000, BandedLong: 2000, Bands: 16,
		PLD:     []pldPoint{{1e-2, 1, 100}, {1e-2, 0.5, 1000}},
		MechDim: 10000, MechRounds: 20, MechBuffers: 4,
		BLTRs: []int{100, 300, 1000}, MinSepR: 200, MinSepB: 16,
		CeilBytes: 8 << 20, CeilSeconds: 0.05, EstScale: 0.03,
	},
}

// i20Sample is one run's outcome.
type i20Sample struct {
	Seconds, CPU float64
	RSS          int64
	// Value is the result (loss, or the safe eps), Gap its certified
	// relative gap (or the accountant's width), Other a second value shown
	// (the optimistic eps), Digest a hash of the files or vectors written.
	Value, Gap, Other float64
	Iters             int
	Digest            string
}

// i20Meas is the median of the runs at one GOMAXPROCS.
type i20Meas struct {
	Procs        int
	Runs         int
	Seconds, CPU float64 // medians
	RSS          int64   // largest peak RSS of the runs
	Last         i20Sample
	Err          string
}

// i20Row is one target: a pair (GOMAXPROCS 1 and 2) or a single run at 2.
type i20Row struct {
	Item, Name string
	Command    string // as shown
	Limit      string // as shown
	// InProcess rows run in this process (RSS is the process's peak).
	InProcess bool
	// Ceiling marks the reference rows (this machine's two-core ceiling,
	// "compute" or "memory", and its disk, "disk"): no target; the paths'
	// ratios are read against them.
	Ceiling string
	// show, if not nil, renders the result at 2 of an in-process row.
	show  func(m i20Meas) string
	Procs []int
	M     []i20Meas // one per Procs
	// Ratio is M[0].Seconds / M[1].Seconds for a pair.
	Ratio float64
	// Same says whether the results at 1 and 2 agree.
	Same   string
	NotRun string
	Checks []string // failed checks
	// est is the estimated seconds of one run at each GOMAXPROCS on a quiet
	// 2-core machine at the full sizes.
	est []float64
	// run takes one run at the given GOMAXPROCS.
	run func(procs int) (i20Sample, error)
	// The limits that evaluate checks (0: none): maxGap on the certified
	// gap at each GOMAXPROCS (on the width for the accountant), maxSecs and
	// maxRSS on the time and peak RSS at GOMAXPROCS=2.
	maxGap, maxSecs float64
	maxRSS          int64
}

// pass reports whether the target is met.
func (r i20Row) pass() bool {
	if r.NotRun != "" || len(r.Checks) > 0 || len(r.M) == 0 {
		return false
	}
	for _, m := range r.M {
		if m.Err != "" || m.Runs == 0 {
			return false
		}
	}
	return true
}

// evaluate sets the ratio and the agreement of a measured pair and the
// row's failed checks.
func (r *i20Row) evaluate() {
	if len(r.M) == 2 && r.M[0].Runs > 0 && r.M[1].Runs > 0 {
		r.Ratio = r.M[0].Seconds / r.M[1].Seconds
		same, ok := sameResult(r.M[0].Last, r.M[1].Last)
		r.Same = same
		if !ok {
			r.Checks = append(r.Checks, "results at 1 and 2 differ: "+same)
		}
		if r.Ratio < speedupTarget && r.Ceiling == "" {
			r.Checks = append(r.Checks, fmt.Sprintf("ratio %.2f < %.1f", r.Ratio, speedupTarget))
		}
	}
	for _, m := range r.M {
		switch {
		case r.maxGap == 0 || m.Runs == 0 || m.Last.Gap <= r.maxGap:
		case r.accountant():
			r.Checks = append(r.Checks, fmt.Sprintf("width %.1e at GOMAXPROCS=%d > 1e-3", m.Last.Gap, m.Procs))
		default:
			r.Checks = append(r.Checks, fmt.Sprintf("gap %.1e at GOMAXPROCS=%d, want <= %g", m.Last.Gap, m.Procs, r.maxGap))
		}
	}
	if m, ok := r.at(2); ok && m.Runs > 0 {
		if r.maxSecs > 0 && m.Seconds > r.maxSecs {
			r.Checks = append(r.Checks, fmt.Sprintf("%s at GOMAXPROCS=2 > %s", secs(m.Seconds), secs(r.maxSecs)))
		}
		if r.maxRSS > 0 {
			if c := rssCheck(m.RSS, r.maxRSS); c != "" {
				r.Checks = append(r.Checks, c)
			}
		}
	}
}

// accountant reports whether the row runs dpacct (its gap is a width).
func (r i20Row) accountant() bool { return strings.HasPrefix(r.Command, "dpacct") }

// verdict renders the row's result: PASS, or FAIL with the failed checks
// and errors; a reference row's is "reference".
func (r i20Row) verdict() string {
	if r.Ceiling != "" && r.pass() {
		return "reference"
	}
	if r.pass() {
		return passFail(true)
	}
	bad := slices.Clone(r.Checks)
	for _, m := range r.M {
		if m.Err != "" {
			bad = append(bad, fmt.Sprintf("error at GOMAXPROCS=%d", m.Procs))
		} else if m.Runs == 0 {
			bad = append(bad, fmt.Sprintf("not run at GOMAXPROCS=%d", m.Procs))
		}
	}
	return verdict(bad)
}

// at returns the measurement at procs.
func (r i20Row) at(procs int) (i20Meas, bool) {
	for _, m := range r.M {
		if m.Procs == procs {
			return m, true
		}
	}
	return i20Meas{}, false
}

// bltRow is one BLT (or bsr) loss.
type bltRow struct {
	Spec    string
	R, K    int
	Loss    float64
	Seconds float64
	Runs    int
	How     string // "loss-only" or "dense"
	Err     string
}

// i20Result holds the section's measurements.
type i20Result struct {
	Sizes                 string
	Reps                  int
	Long                  bool
	NumCPU, GOMAXPROCS    int
	CPUModel              string
	LoadBefore, LoadAfter string
	Estimate, Elapsed     time.Duration
	Rows                  []i20Row
	// BLT: single participation at each R (K = 1..8), sqrt-normalized at
	// each R (or the reason it was not run), and under min-separation BLT
	// with K buffers against bsr with K + 1 bands.
	BLT          []bltRow
	SqrtNorm     map[int]float64
	SqrtNormNote map[int]string
	MinSep, BSR  []bltRow
	MinSepR      int
	MinSepB      int
	BLTProcs     int
}

// interleave runs once at each GOMAXPROCS of procs in turn, alternating the
// order (1, 2, 2, 1, ...), as many passes as repeat takes when a pass
// lasts as long as its slowest run (see runsAfter). It stops at the first
// error, which the measurement at that GOMAXPROCS records (with the failed
// run's time where no run succeeded).
func interleave(reps int, procs []int, once func(int) (i20Sample, error)) []i20Meas {
	ms := make([]i20Meas, len(procs))
	secs := make([][]float64, len(procs))
	cpus := make([][]float64, len(procs))
	for i, p := range procs {
		ms[i].Procs = p
	}
	pass := 0
	repeat(reps, func() (float64, error) {
		slowest := 0.0
		for j := range procs {
			i := j
			if pass%2 == 1 {
				i = len(procs) - 1 - j
			}
			s, err := once(procs[i])
			if err != nil {
				ms[i].Err, ms[i].Seconds = oneLine(err), s.Seconds
				return 0, err
			}
			secs[i], cpus[i] = append(secs[i], s.Seconds), append(cpus[i], s.CPU)
			ms[i].RSS, ms[i].Last = max(ms[i].RSS, s.RSS), s
			slowest = max(slowest, s.Seconds)
		}
		pass++
		return slowest, nil
	})
	for i := range ms {
		if ms[i].Runs = len(secs[i]); ms[i].Runs > 0 {
			ms[i].Seconds, ms[i].CPU = docgen.Median(secs[i]), docgen.Median(cpus[i])
		}
	}
	return ms
}

// sameResult compares the results at GOMAXPROCS 1 and 2: identical bits,
// or within the sum of their certified gaps (widths).
func sameResult(a, b i20Sample) (string, bool) {
	if a.Digest != b.Digest {
		return fmt.Sprintf("outputs differ (digests %s, %s)", a.Digest, b.Digest), false
	}
	if math.Float64bits(a.Value) == math.Float64bits(b.Value) {
		if a.Digest != "" {
			return "identical (bits of the values and outputs)", true
		}
		return "identical bits", true
	}
	d := math.Abs(a.Value-b.Value) / math.Abs(b.Value)
	ok := d <= a.Gap+b.Gap
	verdict := "within the gaps"
	if !ok {
		verdict = "NOT within the gaps"
	}
	return fmt.Sprintf("relative difference %.1e, %s (%.1e + %.1e)", d, verdict, a.Gap, b.Gap), ok
}

// estimate returns the estimated seconds of the rows at reps runs.
func estimate(rows []i20Row, reps int, scale float64) float64 {
	total := 0.0
	for _, r := range rows {
		if r.NotRun != "" {
			continue
		}
		slowest, sum := 0.0, 0.0
		for _, e := range r.est {
			slowest, sum = max(slowest, e), sum+e
		}
		total += float64(runsAfter(reps, slowest)) * sum
	}
	return total * scale
}

// i20Env is what the rows' runs need.
type i20Env struct {
	ctx           context.Context
	tmp           string
	mfsolve, acct string
	sizes         i20Sizes
	long          bool
	log           io.Writer
}

// capped runs argv as launch does, with GOMAXPROCS=procs in its
// environment (and, pinned, on the first procs CPUs), stopped after limit
// (0: i20Cap) with an error that says so.
func (e *i20Env) capped(limit time.Duration, procs int, pin bool, argv []string) (cliRun, []byte, error) {
	limit = cmp.Or(limit, i20Cap)
	ctx, cancel := context.WithTimeout(e.ctx, limit)
	defer cancel()
	start := time.Now()
	env := []string{fmt.Sprintf("GOMAXPROCS=%d", procs)}
	if pin {
		env = append(env, fmt.Sprintf("%s=%d", pinEnv, procs))
	}
	r, out, err := launch(ctx, e.tmp, env, argv)
	if err != nil && ctx.Err() == context.DeadlineExceeded {
		r.Seconds = time.Since(start).Seconds()
		return r, nil, fmt.Errorf("stopped after %s (the cap of this row)", limit)
	}
	return r, out, err
}

// commandRun returns a run of bin with args, stopped after limit (0:
// i20Cap), whose standard output read turns into the sample's result;
// pinned, on as many CPUs as GOMAXPROCS.
func (e *i20Env) commandRun(bin string, args []string, limit time.Duration, pin bool, read func(out []byte, s *i20Sample) error) func(int) (i20Sample, error) {
	return func(procs int) (i20Sample, error) {
		r, out, err := e.capped(limit, procs, pin, append([]string{bin}, args...))
		s := i20Sample{Seconds: r.Seconds, CPU: r.CPU, RSS: r.MaxRSS}
		if err != nil {
			return s, err
		}
		return s, read(out, &s)
	}
}

// mfsolveRun returns a run of mfsolve with args, stopped after limit (0:
// i20Cap); digest, if not nil, hashes what it wrote.
func (e *i20Env) mfsolveRun(args []string, limit time.Duration, digest func() (string, error)) func(int) (i20Sample, error) {
	return e.mfsolveRunPinned(args, limit, false, digest)
}

// mfsolveRunPinned is mfsolveRun, pinned to as many CPUs as GOMAXPROCS
// where pin is set.
func (e *i20Env) mfsolveRunPinned(args []string, limit time.Duration, pin bool, digest func() (string, error)) func(int) (i20Sample, error) {
	return e.commandRun(e.mfsolve, args, limit, pin, func(out []byte, s *i20Sample) error {
		var c cliResult
		if err := json.Unmarshal(out, &c); err != nil {
			return fmt.Errorf("output %q is not the JSON summary: %v", out, err)
		}
		s.Value, s.Gap, s.Iters = c.Loss, c.Gap, c.Iterations
		if digest == nil {
			return nil
		}
		var err error
		s.Digest, err = digest()
		return err
	})
}

// dpacctResult is the part of `dpacct epsilon -json` read here.
type dpacctResult struct {
	Eps           float64 `json:"eps"`
	EpsOptimistic float64 `json:"eps_optimistic"`
}

// dpacctRun returns a run of dpacct with args (epsilon ... -json), which
// reads both sides: Value the safe eps, Other the optimistic one, Gap the
// width (safe - optimistic) / safe.
func (e *i20Env) dpacctRun(args []string) func(int) (i20Sample, error) {
	return e.commandRun(e.acct, args, 0, false, func(out []byte, s *i20Sample) error {
		var d dpacctResult
		if err := json.Unmarshal(out, &d); err != nil {
			return fmt.Errorf("output %q is not dpacct's JSON: %v", out, err)
		}
		if !(d.Eps > 0) || !(d.EpsOptimistic <= d.Eps) {
			return fmt.Errorf("eps %v, eps_optimistic %v: want 0 < optimistic <= safe", d.Eps, d.EpsOptimistic)
		}
		s.Value, s.Other, s.Gap = d.Eps, d.EpsOptimistic, (d.Eps-d.EpsOptimistic)/d.Eps
		return nil
	})
}

// fileDigest returns the first 12 hex digits of the SHA-256 of the files.
func fileDigest(paths ...string) (string, error) {
	h := sha256.New()
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return "", err
		}
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:12], nil
}

// withProcs runs fn with runtime.GOMAXPROCS(procs) and restores it.
func withProcs(procs int, fn func() error) error {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	return fn()
}

// inProcess returns an in-process run: fn fills the sample at
// runtime.GOMAXPROCS(procs) (see withProcs), and its RSS is this process's
// peak after it.
func inProcess(fn func(s *i20Sample) error) func(int) (i20Sample, error) {
	return func(procs int) (i20Sample, error) {
		var s i20Sample
		err := withProcs(procs, func() error { return fn(&s) })
		s.RSS = procusage.SelfRSS()
		return s, err
	}
}

// mechRun returns one pass of the mechanism at d = MechDim on f: the
// median seconds per round over MechRounds rounds, and a digest of the
// noise it drew.
func (e *i20Env) mechRun(f *factorize.Factorization) func(int) (i20Sample, error) {
	return inProcess(func(s *i20Sample) error {
		h := sha256.New()
		secs, cpus, err := mechRounds(f, e.sizes.MechDim, e.sizes.MechRounds, h)
		if err != nil {
			return err
		}
		s.Seconds, s.CPU = docgen.Median(secs), docgen.Median(cpus)
		s.Digest = hex.EncodeToString(h.Sum(nil))[:12]
		return nil
	})
}

// mechRounds runs the mechanism on f at dimension dim (seed 1) for rounds
// rounds and returns the wall and CPU seconds of each round; digest, if not
// nil, takes the bits of the noise drawn (outside the timed rounds).
func mechRounds(f *factorize.Factorization, dim, rounds int, digest hash.Hash) (secs, cpus []float64, err error) {
	m, err := mechanism.New(f, dim, 1, mechanism.WithSeed(1))
	if err != nil {
		return nil, nil, err
	}
	dst := make([]float64, dim)
	buf := make([]byte, 0, 8*dim)
	for range rounds {
		start, c0 := time.Now(), procusage.SelfCPU()
		if err := m.Next(dst); err != nil {
			return nil, nil, err
		}
		secs, cpus = append(secs, time.Since(start).Seconds()), append(cpus, procusage.SelfCPU()-c0)
		if digest != nil {
			buf = buf[:0]
			for _, v := range dst {
				buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(v))
			}
			digest.Write(buf)
		}
	}
	return secs, cpus, nil
}

// ceilUnits is the number of independent pieces of work of each ceiling
// kernel: at GOMAXPROCS p, goroutine g takes the pieces i with i % p == g.
const ceilUnits = 2

// ceilingRun returns one run of a ceiling kernel ("compute" or "memory")
// at the given GOMAXPROCS: ceilUnits pieces of work over GOMAXPROCS
// goroutines with no shared data, sized on the first call to take about
// CeilSeconds at GOMAXPROCS=1. Value is the sum of the pieces' results,
// Iters the steps (compute) or passes (memory) of each piece.
func (e *i20Env) ceilingRun(kind string) func(int) (i20Sample, error) {
	size := 0 // steps or passes of each piece, set by the first call
	return inProcess(func(s *i20Sample) error {
		var unit func(i int) float64
		switch kind {
		case "compute":
			if size == 0 {
				const probe = 1 << 22
				start := time.Now()
				ceiling.Compute(probe, 0)
				size = max(probe, int(e.sizes.CeilSeconds/ceilUnits/time.Since(start).Seconds()*probe))
			}
			unit = func(i int) float64 { return ceiling.Compute(size, float64(i)) }
		case "memory":
			runtime.GC() // the previous run's arrays
			arrays := make([][]float64, ceilUnits)
			for i := range arrays {
				arrays[i] = make([]float64, e.sizes.CeilBytes/8)
				for j := range arrays[i] {
					arrays[i][j] = float64(j%1000) / 1000
				}
			}
			if size == 0 {
				start := time.Now()
				ceiling.Stream(arrays[0], 1)
				size = max(1, int(math.Round(e.sizes.CeilSeconds/ceilUnits/time.Since(start).Seconds())))
			}
			unit = func(i int) float64 { return ceiling.Stream(arrays[i], size) }
		default:
			return fmt.Errorf("ceiling kernel %q: want compute or memory", kind)
		}
		runtime.GC()
		start, c0 := time.Now(), procusage.SelfCPU()
		parts := ceiling.Split(ceilUnits, unit)
		s.Seconds, s.CPU = time.Since(start).Seconds(), procusage.SelfCPU()-c0
		for _, v := range parts {
			s.Value += v
		}
		s.Iters = size
		return nil
	})
}

// diskRun returns one run of the disk reference: two r x r arrays with
// the shape and bytes of a lower-triangular B and C (entries 1 + i + j on
// and below the diagonal, zeros above) written at once with npy.Write
// through atomicfile.Write, each on its own goroutine, every byte written,
// over the previous run's files, as mfsolve -o B.npy -C C.npy writes and
// replaces its outputs, with no computation.
// Digest is that of the arrays.
func (e *i20Env) diskRun(r int) func(int) (i20Sample, error) {
	var arrays [2]*mat.Dense // made on the first call
	return inProcess(func(s *i20Sample) error {
		if arrays[0] == nil {
			for k := range arrays {
				data := make([]float64, r*r)
				for i := range r {
					for j := range i + 1 {
						data[i*r+j] = float64(1 + i + j + k)
					}
				}
				arrays[k] = mat.NewDense(r, r, data)
			}
		}
		runtime.GC()
		start, c0 := time.Now(), procusage.SelfCPU()
		var errs [2]error
		var wg sync.WaitGroup
		for k, name := range []string{"disk-B.npy", "disk-C.npy"} {
			wg.Go(func() {
				errs[k] = atomicfile.Write(filepath.Join(e.tmp, name), 0o644, func(w io.Writer) error {
					// Every byte written, as mfsolve writes by default
					// (without -sparse): the writer's ZeroSkipper hidden.
					return npy.Write(struct{ io.Writer }{w}, []int{r, r}, arrays[k].RawMatrix().Data)
				})
			})
		}
		wg.Wait()
		s.Seconds, s.CPU = time.Since(start).Seconds(), procusage.SelfCPU()-c0
		if err := errors.Join(errs[:]...); err != nil {
			return err
		}
		s.Digest = denseDigest(arrays[0], arrays[1])
		return nil
	})
}

// formRun returns one in-process run of what `mfsolve -R R -o B.npy -C
// C.npy` computes, without the writing: factorize.ParseStrategy("optimal")
// on w (the structured path at R = 10^4), then B and C formed
// (Factorization.Factors), after a GC. Digest hashes the bits of B and C.
func (e *i20Env) formRun(w *factorize.Workload) func(int) (i20Sample, error) {
	return inProcess(func(s *i20Sample) error {
		strat, err := factorize.ParseStrategy("optimal")
		if err != nil {
			return err
		}
		runtime.GC()
		start, c0 := time.Now(), procusage.SelfCPU()
		f, err := strat.Factorize(e.ctx, w, factorize.SingleParticipation())
		if err != nil {
			return err
		}
		b, c, err := f.Factors()
		if err != nil {
			return err
		}
		s.Seconds, s.CPU = time.Since(start).Seconds(), procusage.SelfCPU()-c0
		s.Value, s.Gap, s.Iters = f.Metrics.Loss, f.Gap, f.Iterations
		s.Digest = denseDigest(b, c)
		return nil
	})
}

// denseDigest returns 12 hex digits of a 64-bit FNV-1a-style hash of the
// bits of the matrices' entries, row by row (fast enough for 1.6 GB).
func denseDigest(ms ...*mat.Dense) string {
	h := uint64(14695981039346656037)
	for _, m := range ms {
		r, c := m.Dims()
		for i := range r {
			for _, v := range m.RawRowView(i)[:c] {
				h = (h ^ math.Float64bits(v)) * 1099511628211
			}
		}
	}
	return fmt.Sprintf("%016x", h)[:12]
}

// hasLossOnly reports whether the strategy spec has a loss-only path.
func hasLossOnly(spec string) bool {
	s, err := factorize.ParseStrategy(spec)
	if err != nil {
		return false
	}
	_, err = factorize.WithLossOnly(s, true)
	return err == nil
}

// i20Rows returns the section's subprocess and mechanism rows, not yet run.
func (e *i20Env) i20Rows() ([]i20Row, error) {
	z := e.sizes
	both, two := []int{1, 2}, []int{2}
	var rows []i20Row
	add := func(r i20Row) { rows = append(rows, r) }

	ceilShow := func(what string) func(m i20Meas) string {
		return func(m i20Meas) string { return fmt.Sprintf(what+", sum %.10g", m.Last.Iters, m.Last.Value) }
	}
	add(i20Row{Item: "ref", Name: "this machine's two-core ceiling: compute-bound", Ceiling: "compute",
		Command: fmt.Sprintf("in process: %d pieces, each 4 register-resident recurrences x = x*a + b, over GOMAXPROCS goroutines, no shared data, about %s at 1", ceilUnits, secs(z.CeilSeconds)),
		Limit:   "none (reference)", Procs: both, InProcess: true,
		est: []float64{1.2, 0.6}, run: e.ceilingRun("compute"), show: ceilShow("%d steps per piece")})
	add(i20Row{Item: "ref", Name: "this machine's two-core ceiling: memory-streaming", Ceiling: "memory",
		Command: fmt.Sprintf("in process: %d pieces over GOMAXPROCS goroutines, each streaming (summing) its own %d MiB array, no shared data, about %s at 1", ceilUnits, z.CeilBytes>>20, secs(z.CeilSeconds)),
		Limit:   "none (reference)", Procs: both, InProcess: true,
		est: []float64{1.5, 1}, run: e.ceilingRun("memory"), show: ceilShow("%d passes per array")})
	add(i20Row{Item: "ref", Name: fmt.Sprintf("this machine's disk: the bytes of B and C at R = %d written and replaced, no computation", z.Forms), Ceiling: "disk",
		Command: fmt.Sprintf("in process: two %d x %d arrays, lower triangular as B and C are, written at once as mfsolve writes them (each on its own goroutine: temporary file, every byte written as without `-sparse`, fsync, rename over the previous run's file)", z.Forms, z.Forms),
		Limit:   "none (reference)", Procs: both, InProcess: true,
		est: []float64{1.5, 1.5}, run: e.diskRun(z.Forms), show: func(m i20Meas) string { return "arrays digest " + m.Last.Digest }})

	structArgs := func(r int) []string {
		return []string{"-R", fmt.Sprint(r), "-loss-only", "-no-cache", "-json", "-strategy", "optimal:tol=1e-8"}
	}
	a := structArgs(z.Structured)
	add(i20Row{Item: "1, 2", Name: fmt.Sprintf("structured optimum, R = %d, loss only, gap 1e-8", z.Structured),
		Command: "mfsolve " + strings.Join(a, " "), Limit: fmt.Sprintf("ratio >= %.1f; <= 8 s at 2", speedupTarget), Procs: both,
		est: []float64{11, 6.5}, run: e.mfsolveRun(a, 0, nil), maxGap: 1e-8, maxSecs: 8})
	a = structArgs(z.Large)
	add(i20Row{Item: "2", Name: fmt.Sprintf("structured optimum, R = %d, loss only, gap 1e-8", z.Large),
		Command: "mfsolve " + strings.Join(a, " "), Limit: "<= 120 s and 3 GB at 2", Procs: two,
		est: []float64{110}, run: e.mfsolveRun(a, 0, nil), maxGap: 1e-8, maxSecs: 120, maxRSS: 3e9})
	a = []string{"-R", fmt.Sprint(z.Dense), "-strategy", "optimal:path=dense", "-loss-only", "-no-cache", "-json"}
	add(i20Row{Item: "1", Name: fmt.Sprintf("dense path, prefix sums, R = %d, loss only, gap 1e-10", z.Dense),
		Command: "mfsolve " + strings.Join(a, " "), Limit: fmt.Sprintf("ratio >= %.1f", speedupTarget), Procs: both,
		est: []float64{47, 28}, run: e.mfsolveRun(a, 0, nil), maxGap: 1e-10})
	bPath, cPath := filepath.Join(e.tmp, "B.npy"), filepath.Join(e.tmp, "C.npy")
	a = []string{"-R", fmt.Sprint(z.Forms), "-o", "B.npy", "-C", "C.npy", "-no-cache", "-json"}
	add(i20Row{Item: "1", Name: fmt.Sprintf("forming B and C, R = %d (solve, form and write %s)", z.Forms, cli.FormatBytes(16*float64(z.Forms)*float64(z.Forms))),
		Command: "mfsolve " + strings.Join(a, " "), Limit: fmt.Sprintf("ratio >= %.1f", speedupTarget), Procs: both,
		est: []float64{3.5, 2.2}, run: e.mfsolveRun(a, 0, func() (string, error) { return fileDigest(bPath, cPath) }), maxGap: 1e-10})
	pinned := i20Row{Item: "1", Name: fmt.Sprintf("forming B and C, R = %d (solve, form and write %s), pinned to the first 1 and 2 CPUs (as `taskset -c 0` and `taskset -c 0,1`)", z.Forms, cli.FormatBytes(16*float64(z.Forms)*float64(z.Forms))),
		Command: "mfsolve " + strings.Join(a, " "), Limit: fmt.Sprintf("ratio >= %.1f", speedupTarget), Procs: both,
		est: []float64{4, 2.2}, run: e.mfsolveRunPinned(a, 0, true, func() (string, error) { return fileDigest(bPath, cPath) }), maxGap: 1e-10}
	if !canPin {
		pinned.NotRun = "not run: pinning to CPUs needs Linux (sched_setaffinity)"
	}
	add(pinned)

	bandSpec := fmt.Sprintf("banded:bands=%d", z.Bands)
	// bandedArgs adds -loss-only where the strategy spec has that path in
	// this build.
	bandedArgs := func(r int, spec string) []string {
		a := []string{"-R", fmt.Sprint(r), "-strategy", spec, "-participation", fmt.Sprintf("minsep:%d", z.Bands)}
		if hasLossOnly(spec) {
			a = append(a, "-loss-only")
		}
		return append(a, "-no-cache", "-json")
	}
	a = bandedArgs(z.Banded, bandSpec)
	add(i20Row{Item: "1, 3", Name: fmt.Sprintf("banded under min-separation, R = %d, b = %d, gap 1e-8 (banded's default)", z.Banded, z.Bands),
		Command: "mfsolve " + strings.Join(a, " "), Limit: fmt.Sprintf("ratio >= %.1f; <= 20 s at 2", speedupTarget), Procs: both,
		est: []float64{86, 80}, run: e.mfsolveRun(a, 0, nil), maxGap: 1e-8, maxSecs: 20})
	longSpec := bandSpec + ",tol=1e-6"
	a = bandedArgs(z.BandedLong, longSpec)
	long := i20Row{Item: "3", Name: fmt.Sprintf("banded under min-separation, R = %d, b = %d, gap 1e-6", z.BandedLong, z.Bands),
		Command: "mfsolve " + strings.Join(a, " "), Limit: "<= 10 min at 2 (stopped at 15 min)", Procs: two,
		est: []float64{720}, run: e.mfsolveRun(a, 15*time.Minute, nil), maxGap: 1e-6, maxSecs: 600}
	switch {
	case !e.long:
		long.NotRun = "not run (-long)"
	case !hasLossOnly(longSpec) && z.BandedLong > bltDenseMax:
		long.NotRun = "not run: banded has no loss-only path in this build (B and C would not fit)"
	}
	add(long)

	for _, pt := range z.PLD {
		a := []string{"epsilon", "-sigma", fmt.Sprint(pt.Sigma), "-delta", fmt.Sprint(pldDelta), "-sampling", fmt.Sprint(pt.Q), "-steps", fmt.Sprint(pt.Steps), "-json"}
		add(i20Row{Item: "1, 5", Name: fmt.Sprintf("PLD accountant, q = %g, sigma = %g, T = %d, delta = %g, both sides", pt.Q, pt.Sigma, pt.Steps, pldDelta),
			Command: "dpacct " + strings.Join(a, " "), Limit: fmt.Sprintf("ratio >= %.1f; width <= 1e-3; <= 5 s at 2", speedupTarget), Procs: both,
			est: []float64{5, 3.5}, run: e.dpacctRun(a), maxGap: 1e-3, maxSecs: 5})
	}

	w, err := factorize.Prefix(z.MechRounds)
	if err != nil {
		return nil, err
	}
	f, err := factorize.BLT(e.ctx, w, z.MechBuffers)
	if err != nil {
		return nil, err
	}
	add(i20Row{Item: "1", Name: fmt.Sprintf("mechanism, d = %d, BLT with %d buffers (R = %d), seconds per round", z.MechDim, z.MechBuffers, z.MechRounds),
		Command: fmt.Sprintf("in process: `mechanism.New(factorize.BLT(Prefix(%d), %d), %d, 1, WithSeed(1))`, %d rounds of Next, the median round", z.MechRounds, z.MechBuffers, z.MechDim, z.MechRounds),
		Limit:   fmt.Sprintf("ratio >= %.1f", speedupTarget), Procs: both, InProcess: true,
		est: []float64{0.5, 0.4}, run: e.mechRun(f)})
	wf, err := factorize.Prefix(z.Forms)
	if err != nil {
		return nil, err
	}
	add(i20Row{Item: "1", Name: fmt.Sprintf("forming B and C, R = %d, in process (solve and form, not written)", z.Forms),
		Command: fmt.Sprintf("in process: `factorize.ParseStrategy(\"optimal\")` on Prefix(%d), then `Factors()` (as `mfsolve -o B.npy -C C.npy` computes them), GC before each run", z.Forms),
		Limit:   fmt.Sprintf("ratio >= %.1f", speedupTarget), Procs: both, InProcess: true,
		est: []float64{2, 1.1}, run: e.formRun(wf), maxGap: 1e-10,
		show: func(m i20Meas) string {
			return fmt.Sprintf("loss %.12g, gap %.1e, %d iterations, B and C digest %s", m.Last.Value, m.Last.Gap, m.Last.Iters, m.Last.Digest)
		}})
	return rows, nil
}

// runIssue20 measures the section.
func runIssue20(ctx context.Context, cfg config, log io.Writer) (*i20Result, error) {
	z, ok := i20SizeSets[cfg.issue20Sizes]
	if !ok {
		return nil, fmt.Errorf("-issue20-sizes %s: want full or small", cfg.issue20Sizes)
	}
	started := time.Now()
	res := &i20Result{Sizes: z.Name, Reps: cfg.reps, Long: cfg.long, NumCPU: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0),
		CPUModel: procField("/proc/cpuinfo", "model name"), LoadBefore: loadAvg(),
		SqrtNorm: map[int]float64{}, SqrtNormNote: map[int]string{}, MinSepR: z.MinSepR, MinSepB: z.MinSepB}
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "dpmf-issue20-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	e := &i20Env{ctx: ctx, tmp: tmp, mfsolve: filepath.Join(tmp, "mfsolve"), acct: filepath.Join(tmp, "dpacct"), sizes: z, long: cfg.long, log: log}
	rows, err := e.i20Rows()
	if err != nil {
		return nil, err
	}
	// BLT: K = 1..8 at each R (the largest K at the largest R timed), and
	// under min-separation 8 fits and 8 bsr.
	bltEst := 0.0
	if z.Name == "full" {
		// At R = 10^5 the loss of each K costs O(R^2) on top of its fit.
		bltEst = 5 + 40 + 120 + float64(runsAfter(cfg.reps, 25)-1)*25 + 30
	}
	est := estimate(rows, cfg.reps, z.EstScale) + bltEst*z.EstScale
	res.Estimate = time.Duration(est * float64(time.Second))
	logf(log, "issue20: %d rows and the BLT tables at sizes %s, -reps %d: estimated %s on a quiet 2-core machine, and the builds of mfsolve and dpacct", len(rows), z.Name, cfg.reps, res.Estimate.Round(time.Second))
	if err := goBuild(ctx, root, "./cmd/mfsolve", e.mfsolve); err != nil {
		return nil, err
	}
	if err := goBuild(ctx, root, "./cmd/dpacct", e.acct); err != nil {
		return nil, err
	}
	for i := range rows {
		r := &rows[i]
		if r.NotRun != "" {
			logf(log, "issue20: %s: %s", r.Name, r.NotRun)
			continue
		}
		logf(log, "issue20: %s (GOMAXPROCS %v)", r.Name, r.Procs)
		r.M = interleave(cfg.reps, r.Procs, r.run)
		r.evaluate()
	}
	res.Rows = rows
	os.Remove(filepath.Join(tmp, "B.npy"))
	os.Remove(filepath.Join(tmp, "C.npy"))
	res.runBLT(ctx, cfg.reps, z, log)
	res.LoadAfter, res.Elapsed = loadAvg(), time.Since(started)
	return res, nil
}

// factorizeSpec computes the strategy spec on w under part, loss only
// where the strategy has that path, else with dense B and C up to R =
// bltDenseMax.
func factorizeSpec(ctx context.Context, spec string, w *factorize.Workload, part factorize.Participation) (*factorize.Factorization, string, error) {
	s, err := factorize.ParseStrategy(spec)
	if err != nil {
		return nil, "", err
	}
	how := "dense"
	if ls, err := factorize.WithLossOnly(s, true); err == nil {
		s, how = ls, "loss-only"
	} else if w.R() > bltDenseMax {
		return nil, "", fmt.Errorf("%s has no loss-only path in this build, and its dense B and C at R = %d would not fit", spec, w.R())
	}
	f, err := s.Factorize(ctx, w, part)
	return f, how, err
}

// runBLT measures item 4: BLT with 1 to 8 buffers at each R of z.BLTRs
// against sqrt-normalized (single participation), and under
// z.MinSepB-min-separation against bsr with one band more than buffers.
func (res *i20Result) runBLT(ctx context.Context, reps int, z i20Sizes, log io.Writer) {
	res.BLTProcs = runtime.GOMAXPROCS(0)
	one := func(spec string, r, k int, part factorize.Participation, timedReps int) bltRow {
		row := bltRow{Spec: spec, R: r, K: k}
		w, err := factorize.Prefix(r)
		if err != nil {
			row.Err = oneLine(err)
			return row
		}
		logf(log, "issue20: %s, R = %d, %s", spec, r, part)
		var loss float64
		secs, err := repeat(timedReps, func() (float64, error) {
			start := time.Now()
			f, how, err := factorizeSpec(ctx, spec, w, part)
			if err != nil {
				return 0, err
			}
			loss, row.How = f.Metrics.Loss, how
			return time.Since(start).Seconds(), nil
		})
		if err != nil {
			row.Err = oneLine(err)
			return row
		}
		row.Loss, row.Runs, row.Seconds = loss, len(secs), docgen.Median(secs)
		return row
	}
	single := factorize.SingleParticipation()
	for i, r := range z.BLTRs {
		sq := one("sqrt-normalized", r, 0, single, 1)
		if sq.Err != "" {
			res.SqrtNormNote[r] = sq.Err
		} else {
			res.SqrtNorm[r] = sq.Loss
		}
		for k := 1; k <= 8; k++ {
			timed := 1
			if k == 8 && i == len(z.BLTRs)-1 {
				timed = reps
			}
			res.BLT = append(res.BLT, one(fmt.Sprintf("blt:buffers=%d", k), r, k, single, timed))
		}
	}
	ms := factorize.MinSeparation(z.MinSepB, 0)
	for k := 1; k <= 8; k++ {
		res.MinSep = append(res.MinSep, one(fmt.Sprintf("blt:buffers=%d", k), z.MinSepR, k, ms, 1))
		res.BSR = append(res.BSR, one(fmt.Sprintf("bsr:bands=%d", k+1), z.MinSepR, k, ms, 1))
	}
}

// bltVerdicts are the failed checks of item 4 (empty: PASS).
type bltVerdicts struct {
	// Mono: BLT non-increasing in K at each R. NearSqrt: for K >= 6 at
	// most 0.1% above sqrt-normalized; Skipped: the R where
	// sqrt-normalized could not be computed, and why. Fast: the time at
	// the largest R under a minute.
	Mono, NearSqrt, Skipped, Fast []string
	// MinSepMono: non-increasing in K under min-separation; MinSepBSR:
	// never above bsr with the same memory.
	MinSepMono, MinSepBSR []string
}

// bltChecks checks item 4 on the measured rows.
func (res *i20Result) bltChecks() bltVerdicts {
	var v bltVerdicts
	byR := map[int][]bltRow{}
	var rs []int
	for _, b := range res.BLT {
		if _, ok := byR[b.R]; !ok {
			rs = append(rs, b.R)
		}
		byR[b.R] = append(byR[b.R], b)
	}
	nonIncreasing := func(rows []bltRow) []string {
		var bad []string
		for i, b := range rows {
			if b.Err != "" {
				bad = append(bad, fmt.Sprintf("R = %d, K = %d: %s", b.R, b.K, b.Err))
			} else if i > 0 && rows[i-1].Err == "" && b.Loss > rows[i-1].Loss*(1+bltSlack) {
				bad = append(bad, fmt.Sprintf("R = %d: K = %d (%.10g) above K = %d (%.10g)", b.R, b.K, b.Loss, rows[i-1].K, rows[i-1].Loss))
			}
		}
		return bad
	}
	for _, r := range rs {
		v.Mono = append(v.Mono, nonIncreasing(byR[r])...)
		sq, ok := res.SqrtNorm[r]
		if !ok {
			v.Skipped = append(v.Skipped, fmt.Sprintf("R = %d: sqrt-normalized not computed (%s)", r, res.SqrtNormNote[r]))
			continue
		}
		for _, b := range byR[r] {
			if b.K >= 6 && b.Err == "" && b.Loss > sq*1.001 {
				v.NearSqrt = append(v.NearSqrt, fmt.Sprintf("R = %d, K = %d: %+.3f%% over sqrt-normalized", r, b.K, 100*(b.Loss/sq-1)))
			}
		}
	}
	if len(rs) > 0 {
		last := byR[rs[len(rs)-1]]
		if b := last[len(last)-1]; b.Err == "" && b.Seconds >= 60 {
			v.Fast = append(v.Fast, fmt.Sprintf("R = %d, K = %d: %s", b.R, b.K, secs(b.Seconds)))
		}
	}
	v.MinSepMono = nonIncreasing(res.MinSep)
	for i, b := range res.MinSep {
		switch {
		case i >= len(res.BSR):
		case res.BSR[i].Err != "":
			v.MinSepBSR = append(v.MinSepBSR, fmt.Sprintf("bsr:bands=%d: %s", b.K+1, res.BSR[i].Err))
		case b.Err == "" && b.Loss > res.BSR[i].Loss*(1+bltSlack):
			v.MinSepBSR = append(v.MinSepBSR, fmt.Sprintf("K = %d: %.10g above bsr (%.10g)", b.K, b.Loss, res.BSR[i].Loss))
		}
	}
	return v
}

// verdict renders a check: PASS, or FAIL with what failed.
func verdict(bad []string) string {
	if len(bad) == 0 {
		return passFail(true)
	}
	return passFail(false) + " (" + strings.Join(bad, "; ") + ")"
}

// ceiling returns the ratio of the measured reference row of that kind
// ("compute", "memory" or "disk"), 0 if none was measured.
func (res *i20Result) ceiling(kind string) float64 {
	for _, r := range res.Rows {
		if r.Ceiling == kind && r.pass() {
			return r.Ratio
		}
	}
	return 0
}

// markdown renders the section with its markers.
func (res *i20Result) markdown(cmdLine string, when time.Time) string {
	var d doc
	d.line(issue20Begin)
	d.para("## Every core, R = 10^7, banded at 10^5, BLT and the two-sided accountant (issue 20)")
	sizes := ""
	if res.Sizes != "full" {
		sizes = fmt.Sprintf(" **Sizes %q: a test of the generator, not the issue's sizes; the limits are the issue's.**", res.Sizes)
	}
	long := "without `-long` (banded at the largest R not run)"
	if res.Long {
		long = "with `-long`"
	}
	d.para("Measured by `%s` on %s UTC in %s (estimated beforehand: %s), %s; this section alone is rewritten by `go run ./docgen/scaling -out docs/scaling.md -issue20-only` (add `-long` for banded at R = 10^5).%s Machine: %s, runtime.NumCPU() = %d, this process's GOMAXPROCS %d; load average (1, 5, 15 min) %s at the start, %s at the end.",
		cmdLine, when.UTC().Format("2006-01-02 15:04"), res.Elapsed.Round(time.Second), res.Estimate.Round(time.Second), long, sizes, res.CPUModel, res.NumCPU, res.GOMAXPROCS, res.LoadBefore, res.LoadAfter)
	d.para("Each speed-up runs the same command at GOMAXPROCS=1 and GOMAXPROCS=2 in this run, alternately (1, 2, 2, 1, ...: load affects both alike); the ratio is median time at 1 / median time at 2 (target at least %.1f). Times are wall-clock medians of `-reps %d` runs (at most 3 above 10 s, one above 60 s: the runs column). Commands run as subprocesses (`go build` of this tree; GOMAXPROCS from the environment; peak RSS and CPU time, user + system, from the subprocess's rusage); the ceiling, the mechanism and forming B and C in process run in this process with `runtime.GOMAXPROCS(n)` (restored after), and their peak RSS is this process's so far. GOMAXPROCS bounds the threads that run Go code, not those in system calls: at GOMAXPROCS=1 the kernel's copying of B and C into the page cache (written at once, one thread each) still runs on a second core, so the row of forming and writing them is measured a second time pinned (the launcher restricts the thread that starts the command, and so the command, to the first 1 or 2 CPUs of its affinity mask with sched_setaffinity, as `taskset` does; GOMAXPROCS the same), where one CPU means one core for the kernel's work too. \"Same result\" compares the last runs at 1 and 2: identical bits, or within the sum of their certified gaps (the accountant: its widths).", speedupTarget, res.Reps)
	ceil := "not measured"
	if c, m := res.ceiling("compute"), res.ceiling("memory"); c > 0 && m > 0 {
		ceil = fmt.Sprintf("%.2f compute-bound, %.2f memory-streaming", c, m)
	}
	disk := "not measured"
	if r := res.ceiling("disk"); r > 0 {
		disk = fmt.Sprintf("%.2f", r)
	}
	d.para("The first two rows (item \"ref\") are this machine's two-core ceiling (%s), measured in the same run with the same alternation and runs: a perfectly parallel kernel split over GOMAXPROCS goroutines with no shared data, register-resident floating point or each goroutine streaming its own array. The paths' ratios should be read against them (a path that streams memory cannot beat the memory ceiling); each path's result gives its ratio as a percentage of the compute-bound ceiling, and PASS or FAIL stays against the issue's %.1f. The third (ratio %s) is the disk: the bytes that forming B and C writes, written and replaced as mfsolve writes them, with nothing computed. Its time is the floor of the rows that write B and C, and it does not shrink with cores: those rows' ratios are bounded by the share of it in their time.", ceil, speedupTarget, disk)
	d.table("| item | target | command | limit | GOMAXPROCS / NumCPU | wall, GOMAXPROCS=1 | wall, GOMAXPROCS=2 | runs (1, 2) | CPU (1, 2) | peak RSS (1, 2) | result at 2 | same result | ratio 1 / 2 | result |", "|---|---|---|---|---|---:|---:|---:|---:|---:|---|---|---:|---|")
	for _, r := range res.Rows {
		cmd := "`" + r.Command + "`"
		if r.InProcess {
			cmd = r.Command
		}
		procs := strings.Trim(strings.Join(strings.Fields(fmt.Sprint(r.Procs)), ", "), "[]")
		if r.NotRun != "" {
			d.line("| %s | %s | %s | %s | %s / %d | | | | | | %s | | | %s |", r.Item, r.Name, cmd, r.Limit, procs, res.NumCPU, r.NotRun, r.NotRun)
			continue
		}
		cell := func(procs int, f func(m i20Meas) string) string {
			m, ok := r.at(procs)
			switch {
			case !ok:
				return "—"
			case m.Err != "" && m.Runs == 0:
				return "error"
			}
			return f(m)
		}
		wall := func(m i20Meas) string { return secs(m.Seconds) }
		runs := func(m i20Meas) string { return fmt.Sprint(m.Runs) }
		cpu := func(m i20Meas) string { return cpuCell(m.CPU) }
		rss := func(m i20Meas) string { return rssCell(m.RSS) }
		out := "—"
		if m, ok := r.at(2); ok && m.Runs > 0 {
			switch {
			case r.accountant():
				out = fmt.Sprintf("eps in [%.10g, %.10g], width %.1e", m.Last.Other, m.Last.Value, m.Last.Gap)
			case r.show != nil:
				out = r.show(m)
			case r.InProcess:
				out = "noise digest " + m.Last.Digest
			default:
				out = fmt.Sprintf("loss %.12g, gap %.1e, %d iterations", m.Last.Value, m.Last.Gap, m.Last.Iters)
			}
		}
		var errs []string
		for _, m := range r.M {
			if m.Err != "" {
				errs = append(errs, fmt.Sprintf("error at GOMAXPROCS=%d: %s", m.Procs, m.Err))
			}
		}
		if len(errs) > 0 {
			out = strings.Join(errs, "; ")
		}
		ratio := ""
		if r.Ratio > 0 {
			ratio = fmt.Sprintf("%.2f", r.Ratio)
		}
		if m, ok := r.at(2); ok && len(r.M) == 1 && m.Runs == 1 && m.Seconds > 60 {
			out += " (1 run: above 60 s)"
		}
		result := r.verdict()
		if ceil := res.ceiling("compute"); r.Ceiling == "" && r.Ratio > 0 && ceil > 0 {
			result += fmt.Sprintf(", %.0f%% of the ceiling", 100*r.Ratio/ceil)
		}
		d.line("| %s | %s | %s | %s | %s / %d | %s | %s | %s, %s | %s, %s | %s, %s | %s | %s | %s | %s |", r.Item, r.Name, cmd, r.Limit, procs, res.NumCPU,
			cell(1, wall), cell(2, wall), cell(1, runs), cell(2, runs), cell(1, cpu), cell(2, cpu), cell(1, rss), cell(2, rss),
			out, r.Same, ratio, result)
	}
	d.line("")
	d.para("The accountant's rows are its slowest points of the issue's box (q in [1e-4, 1], sigma in [0.5, 20], T up to 10^6); `dpacct epsilon -sampling` prints the safe eps and the optimistic one (`eps_optimistic`), and the width is (safe - optimistic) / safe. The whole grid of 100 points with its widths and times is in [docs/privacy.md](privacy.md), \"Grid and cost\" (`go test -run '^$' -bench PLDBounds -benchtime 1x ./bench/`), which also says how the rounding is bounded rigorously (no fixed allowance).")

	v := res.bltChecks()
	d.para("### BLT and the number of buffers (item 4)")
	d.para("In this process (GOMAXPROCS %d): `factorize.ParseStrategy(\"blt:buffers=K\")` (the same as `mfsolve -R R -strategy blt:buffers=K -json`), loss only where the strategy has that path in this build (`factorize.WithLossOnly`), else with dense B and C up to R = %d; single participation. Sqrt-normalized (`-strategy sqrt-normalized`) the same way; where it has neither, the check against it is skipped and says why. Non-increasing allows a relative %g for rounding of the reported losses. Time: the whole computation (the fit is by continuation, so K buffers fit every level up to K); the last K at the largest R is the median of its runs.", res.BLTProcs, bltDenseMax, bltSlack)
	d.table("| R | K | loss | loss / sqrt-normalized - 1 | time | runs | path |", "|---:|---:|---:|---:|---:|---:|---|")
	for _, bl := range res.BLT {
		if bl.Err != "" {
			d.line("| %d | %d | error: %s | | | | |", bl.R, bl.K, bl.Err)
			continue
		}
		rel := "—"
		if sq, ok := res.SqrtNorm[bl.R]; ok {
			rel = fmt.Sprintf("%+.3f%%", 100*(bl.Loss/sq-1))
		}
		d.line("| %d | %d | %.10g | %s | %s | %d | %s |", bl.R, bl.K, bl.Loss, rel, secs(bl.Seconds), bl.Runs, bl.How)
	}
	d.line("")
	var sq []string
	rs := slices.AppendSeq(slices.Collect(maps.Keys(res.SqrtNorm)), maps.Keys(res.SqrtNormNote))
	slices.Sort(rs)
	for _, r := range slices.Compact(rs) {
		if v, ok := res.SqrtNorm[r]; ok {
			sq = append(sq, fmt.Sprintf("R = %d: %.10g", r, v))
		} else {
			sq = append(sq, fmt.Sprintf("R = %d: not computed (%s)", r, res.SqrtNormNote[r]))
		}
	}
	d.para("Sqrt-normalized: %s.", strings.Join(sq, "; "))
	d.line("- Non-increasing in K at each R: %s.", verdict(v.Mono))
	skipped := ""
	if len(v.Skipped) > 0 {
		skipped = "; skipped at " + strings.Join(v.Skipped, "; ")
	}
	d.line("- K >= 6 at most 0.1%% above sqrt-normalized: %s%s.", verdict(v.NearSqrt), skipped)
	d.para("- Time at the largest R under a minute: %s.", verdict(v.Fast))
	d.para("Under %d-min-separation at R = %d (`-participation minsep:%d`): BLT with K buffers against the banded square root with the same memory, `bsr:bands=K+1` (K rows of the forward substitution, as BLT keeps K buffers).", res.MinSepB, res.MinSepR, res.MinSepB)
	d.table("| K | blt loss | time | bsr (K + 1 bands) loss |", "|---:|---:|---:|---:|")
	for i, bl := range res.MinSep {
		loss := fmt.Sprintf("%.10g", bl.Loss)
		if bl.Err != "" {
			loss = "error: " + bl.Err
		}
		bsr := ""
		if i < len(res.BSR) {
			bsr = fmt.Sprintf("%.10g", res.BSR[i].Loss)
			if res.BSR[i].Err != "" {
				bsr = "error: " + res.BSR[i].Err
			}
		}
		d.line("| %d | %s | %s | %s |", bl.K, loss, secs(bl.Seconds), bsr)
	}
	d.line("")
	d.line("- Non-increasing in K: %s.", verdict(v.MinSepMono))
	d.line("- Never above bsr with the same memory: %s.", verdict(v.MinSepBSR))
	d.line(issue20End)
	return d.String()
}

// replaceIssue20 writes the section into the report at path: in place of
// its previous version, else in place of the hand-added accountant
// section, else at the end.
func replaceIssue20(path, section string) error {
	old, err := os.ReadFile(path) // replaceSection reports the error
	begin, end := issue20Begin, issue20End
	if err == nil && !strings.Contains(string(old), issue20Begin) && strings.Contains(string(old), accountantBegin) {
		begin, end = accountantBegin, accountantEnd
	}
	return replaceSection(path, section, begin, end, "-issue20-only")
}
