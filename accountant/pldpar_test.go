package accountant

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"testing"

	"github.com/dpmf/dpmf/internal/par"
	"gonum.org/v1/gonum/dsp/fourier"

	"github.com/dpmf/dpmf/internal/testutil"
)

// parRun is one PLD computation of TestPLDSameBitsAnyCores: the PLD it
// builds and the bits of its queries.
type parRun struct {
	pld     *PLD
	queries []float64
}

// parCases are TestPLDSameBitsAnyCores's computations: the sampled Gaussian
// accountant end to end at q = 1e-4 (whose composition, without -short,
// recomputes part of its spectrum in double-words) and q = 0.01, a
// replace-one PLD (a composition of two single events), SelfCompose, and
// Compose of two different PLDs, each with an epsilon and a delta query.
func parCases(t *testing.T) map[string]func() (*PLD, error) {
	t.Helper()
	// sigma = 1 at q = 1e-4 (go test ./...): its composition recomputes
	// part of its spectrum in double-words, refineSpectrum's parallel loop.
	// sigma = 2 (-short) takes a tenth of the time but does not reach
	// refineSpectrum at all (checked with a panic there): -short checks
	// the other loops' bits only.
	sigma := 2.0
	if !testing.Short() {
		sigma = 1
	}
	one, err := SampledGaussianPLD(0.01, 1.2, AddRemove, PLDOptions{Interval: 1e-4})
	if err != nil {
		t.Fatal(err)
	}
	gauss, err := GaussianPLD(3, PLDOptions{Interval: 1e-4})
	if err != nil {
		t.Fatal(err)
	}
	return map[string]func() (*PLD, error){
		"sampled q=1e-4": func() (*PLD, error) { return SampledGaussian(1e-4, sigma, 10000, AddRemove) },
		"sampled q=0.01": func() (*PLD, error) { return SampledGaussian(0.01, 1, 10000, AddRemove) },
		"replace-one":    func() (*PLD, error) { return SampledGaussianPLD(0.05, 0.8, ReplaceOne, PLDOptions{Interval: 2e-4}) },
		"SelfCompose":    func() (*PLD, error) { return one.SelfCompose(500) },
		"Compose": func() (*PLD, error) {
			p, err := one.SelfCompose(200)
			if err != nil {
				return nil, err
			}
			return p.Compose(gauss)
		},
	}
}

// runPar runs f at GOMAXPROCS procs and queries its PLD at delta = 1e-10
// (both bounds) and eps = 1 (both bounds).
func runPar(t *testing.T, procs int, f func() (*PLD, error)) parRun {
	t.Helper()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	p, err := f()
	if err != nil {
		t.Fatal(err)
	}
	e, err := p.EpsilonBounds(1e-10)
	if err != nil {
		t.Fatal(err)
	}
	d, err := p.DeltaBounds(1)
	if err != nil {
		t.Fatal(err)
	}
	return parRun{p, []float64{e.Optimistic, e.Safe, d.Optimistic, d.Safe}}
}

// sameDist returns "" if a and b are the same distribution bit for bit,
// else the first difference.
func sameDist(a, b *lossDist) string {
	if a.lo != b.lo || len(a.mass) != len(b.mass) || a.unbounded != b.unbounded {
		return fmt.Sprintf("grid lo %d, %d points (unbounded %v) against lo %d, %d points (%v)",
			a.lo, len(a.mass), a.unbounded, b.lo, len(b.mass), b.unbounded)
	}
	for i := range a.mass {
		if math.Float64bits(a.mass[i]) != math.Float64bits(b.mass[i]) {
			return fmt.Sprintf("mass[%d] = %x against %x", i, a.mass[i], b.mass[i])
		}
	}
	fa := []float64{a.inf, a.rel, a.infl, a.tau, a.logErr}
	fb := []float64{b.inf, b.rel, b.infl, b.tau, b.logErr}
	for i, name := range []string{"inf", "rel", "infl", "tau", "logErr"} {
		if math.Float64bits(fa[i]) != math.Float64bits(fb[i]) {
			return fmt.Sprintf("%s = %x against %x", name, fa[i], fb[i])
		}
	}
	return ""
}

// TestPLDSameBitsAnyCores checks that the PLD accountant computes the same
// bits at GOMAXPROCS 2 and 8 as at 1, where every parallel loop runs its
// chunks in order on the caller (the sequential computation): the
// distributions, every field of them, and the queries.
func TestPLDSameBitsAnyCores(t *testing.T) {
	testutil.SkipOn386Short(t, "same bits on 1 and several goroutines: no int bound")
	for name, f := range parCases(t) {
		t.Run(name, func(t *testing.T) {
			ref := runPar(t, 1, f)
			for _, procs := range []int{2, 8} {
				got := runPar(t, procs, f)
				dirs := []string{"remove", "add", "removeOpt", "addOpt"}
				a := []*lossDist{ref.pld.remove, ref.pld.add, ref.pld.removeOpt, ref.pld.addOpt}
				b := []*lossDist{got.pld.remove, got.pld.add, got.pld.removeOpt, got.pld.addOpt}
				for i := range a {
					if diff := sameDist(b[i], a[i]); diff != "" {
						t.Errorf("GOMAXPROCS=%d: %s: %s (GOMAXPROCS=1)", procs, dirs[i], diff)
					}
				}
				for i, q := range []string{"eps optimistic", "eps safe", "delta optimistic", "delta safe"} {
					if math.Float64bits(got.queries[i]) != math.Float64bits(ref.queries[i]) {
						t.Errorf("GOMAXPROCS=%d: %s = %v, at GOMAXPROCS=1 %v", procs, q, got.queries[i], ref.queries[i])
					}
				}
			}
		})
	}
}

// TestKthPowerRefineSameBitsAnyCores checks kthPower with the spectrum's
// leading coefficients recomputed in double-words (refineSpectrum, which
// the end-to-end cases above reach only at costlier parameters) for the
// same bits at GOMAXPROCS 2 and 8 as at 1: a discrete Gaussian bump of
// standard deviation 10 points, 30-fold, on 2^16 points, which recomputes
// hundreds of coefficients.
func TestKthPowerRefineSameBitsAnyCores(t *testing.T) {
	const n, k = 1 << 16, 30
	seq := make([]float64, n)
	for i := -80; i <= 80; i++ {
		seq[100+i] = math.Exp(-float64(i*i) / 200)
	}
	scale(seq, 1/sum(seq))
	tr := fourier.NewFFT(n)
	spec := tr.Coefficients(nil, seq)
	// The precondition: refineSpectrum recomputes enough coefficients to
	// run on several cores.
	in := make([]float64, len(spec))
	e := fftErrorConst(n) * sum(seq)
	for j := range in {
		in[j] = e
	}
	if exact := refineSpectrum(nil, tr, seq, slices.Clone(spec), in, k, sum(seq), fftErrorConst(n), map[int]float64{}); len(exact) < 100 {
		t.Fatalf("refineSpectrum recomputed %d coefficients, want at least 100", len(exact))
	}
	run := func(procs int) ([]float64, float64) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		return kthPower(nil, tr, seq, spec, k, true)
	}
	w1, e1 := run(1)
	for _, procs := range []int{2, 8} {
		w, e := run(procs)
		if math.Float64bits(e) != math.Float64bits(e1) {
			t.Errorf("GOMAXPROCS=%d: error bound %x, at GOMAXPROCS=1 %x", procs, e, e1)
		}
		for i := range w {
			if math.Float64bits(w[i]) != math.Float64bits(w1[i]) {
				t.Fatalf("GOMAXPROCS=%d: entry %d = %x, at GOMAXPROCS=1 %x", procs, i, w[i], w1[i])
			}
		}
	}
}

// TestLastWhere checks lastWhere against a scan from the top, for sets
// of matching indices placed across and at the ends of its blocks.
func TestLastWhere(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	block := 16 * chunk
	for _, n := range []int{0, 1, chunk - 1, chunk + 1, block, 3*block + 7} {
		for _, hit := range []int{-1, 0, 1, chunk - 1, chunk, block - 1, block, block + 1, 2*block + 5, n - 1} {
			if hit >= n {
				continue
			}
			// Matches at hit and at every 97th index below it.
			ok := func(j int) bool { return j == hit || (j < hit && (hit-j)%97 == 0) }
			want := -1
			for j := n - 1; j >= 0; j-- {
				if ok(j) {
					want = j
					break
				}
			}
			if got := lastWhere(n, par.Grain, ok); got != want { // every chunk on its own core
				t.Errorf("n = %d, last match %d: lastWhere = %d, want %d", n, hit, got, want)
			}
		}
	}
}
