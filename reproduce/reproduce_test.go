package reproduce

import (
	"bytes"
	"encoding/csv"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/experiment"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/internal/testutil"
)

// The steps are in mean-gradient units: the noise-free server step along
// the mean clipped gradient is eta~ for every algorithm (Algorithm 1:
// eta eta_g tau; the baselines: tau eta_ind, their direction summing tau
// gradients).
func TestJobStepUnits(t *testing.T) {
	const etaT, tau = 0.3, 7
	for _, algo := range fedopt.Algorithms() {
		j := job{s: synthetic(3, 10, tau, 5), algo: algo, etaT: etaT}
		c := j.config()
		got := c.ServerStep(tau)
		if !algo.LocalSteps() {
			got *= tau
		}
		if math.Abs(got-etaT) > 1e-15 || c.EtaG != 1 {
			t.Errorf("%v: server step along the mean gradient %v (eta_g %v), want %v", algo, got, c.EtaG, etaT)
		}
		if err := c.Validate(); err != nil {
			t.Errorf("%v: %v", algo, err)
		}
	}
	if g := scaleFor(false).grid; g[0] != 0.001 || g[len(g)-1] != 1 || len(g) != 10 {
		t.Errorf("full grid %v, want 1-2-5 steps from 0.001 to 1", g)
	}
}

// Quick mode end to end: every file is written and readable, the robust
// orderings hold, and fig4 alone on one worker gives the same fig4.csv. The orderings are deterministic for these seeds;
// over other seeds (Options.SeedShift) they failed in none of the runs
// recorded in docs/reproduction.md, which bounds the false-failure rate as
// stated there.
func TestQuick(t *testing.T) {
	testutil.SkipOn386Short(t, "the quick reproduction end to end: float64 runs at sizes far from int's bounds (15 s on 386)")
	dir := t.TempDir()
	rep, err := Run(t.Context(), []string{"all"}, dir, Options{Quick: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"fig2", "fig3", "fig4", "tuning", "beyond_tau"} {
		f, err := os.Open(filepath.Join(dir, name+".png"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := png.Decode(f); err != nil {
			t.Errorf("%s.png: %v", name, err)
		}
		f.Close()
		if fi, err := os.Stat(filepath.Join(dir, name+".svg")); err != nil || fi.Size() == 0 {
			t.Errorf("%s.svg: %v", name, err)
		}
	}
	for _, name := range []string{"fig2", "fig3", "fig4", "tuning", "beyond_tau", "beyond_mechanisms", "beyond_cancer"} {
		f, err := os.Open(filepath.Join(dir, name+".csv"))
		if err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil || len(rows) < 2 {
			t.Errorf("%s.csv: %d rows, %v", name, len(rows), err)
		}
	}
	// partsByName (checked before a run) names exactly the files written.
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	want := append(outputFiles(Parts()), "summary.md")
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("files written %v, partsByName says %v", got, want)
	}
	sum, err := os.ReadFile(filepath.Join(dir, "summary.md"))
	if err != nil {
		t.Fatal(err)
	}
	// The breast-cancer runs tune on the rows they report on: the summary
	// says that their budgets do not cover the choice of the step.
	for _, want := range []string{"## Protocol", "## Claims", "data seed 1001", "## Beyond: breast-cancer data", "does not cover the choice of the step"} {
		if !strings.Contains(string(sum), want) {
			t.Errorf("summary.md lacks %q", want)
		}
	}
	assertQuick(t, rep)

	// docs/reproduction.md: parts run alone give the same numbers, and the
	// numbers do not depend on -workers: fig4 alone on one worker writes
	// the same fig4.csv, byte for byte.
	alone := t.TempDir()
	if _, err := Run(t.Context(), []string{"fig4"}, alone, Options{Quick: true, Workers: 1}); err != nil {
		t.Fatal(err)
	}
	a, errA := os.ReadFile(filepath.Join(dir, "fig4.csv"))
	b, errB := os.ReadFile(filepath.Join(alone, "fig4.csv"))
	if errA != nil || errB != nil || !bytes.Equal(a, b) {
		t.Errorf("fig4.csv of fig4 alone on one worker differs from that of all (%v, %v)", errA, errB)
	}
}

// assertQuick checks the orderings quick mode asserts.
func assertQuick(t *testing.T, rep *Report) {
	t.Helper()
	if len(rep.Claims) != 4 || rep.Claims[0].Verdict != "reproduced" {
		t.Errorf("claims %+v: want 4, the first (||B||_F^2 far below R^2, deterministic) reproduced", rep.Claims)
	}
	for _, name := range robustChecks {
		found := false
		for _, c := range rep.Checks {
			if c.Name == name {
				found = true
				if !c.Holds() {
					t.Errorf("%s: %s (%.4g) not below %s (%.4g), z = %.2f", name, c.Less, c.LessMean, c.More, c.MoreMean, c.Z())
				}
			}
		}
		if !found {
			t.Errorf("no check %q", name)
		}
	}
}

// robustChecks are the orderings quick mode asserts, chosen for their
// effect size (docs/reproduction.md gives the false-failure rates measured
// over other seeds with TestQuickOtherSeeds): with the paper's calibration
// at (1, 1e-3) the baseline's update with correlated noise beats the
// baseline (same update and sensitivity, less noise); Algorithm 1 does
// better with the exact calibration than with the paper's (less noise);
// and non-private Algorithm 1 beats private Algorithm 1 at the most noise.
var robustChecks = []string{"fig4 paper (1, 1e-3)", "fig4 Algorithm 1 (1, 1e-3)", "fig4 paper (1, 1e-3) non-private"}

// Over other seeds: how often every ordering fails (DPMF_LONG=1); the
// asserted ones are robustChecks.
func TestQuickOtherSeeds(t *testing.T) {
	if os.Getenv("DPMF_LONG") == "" {
		t.Skip("set DPMF_LONG=1 to run quick mode over 20 other seed shifts")
	}
	const shifts = 20
	fails := map[string]int{}
	minZ := map[string]float64{}
	zs := map[string][]float64{}
	for shift := uint64(1); shift <= shifts; shift++ {
		rep, err := Run(t.Context(), []string{"fig4"}, t.TempDir(), Options{Quick: true, SeedShift: shift * 7919})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range rep.Checks {
			if z, ok := minZ[c.Name]; !ok || c.Z() < z {
				minZ[c.Name] = c.Z()
			}
			if !c.Holds() {
				fails[c.Name]++
			}
			zs[c.Name] = append(zs[c.Name], c.Z())
		}
	}
	for name, z := range minZ {
		// Normal model of z over seeds: P(z < 0) = Phi(-mean/sd).
		m, sd := meanStd(zs[name])
		t.Logf("%-34s failures %2d of %d, smallest z %.2f, z mean %.2f sd %.2f, P(fail) ~ %.1e", name, fails[name], shifts, z, m, sd, 0.5*math.Erfc(m/sd/math.Sqrt2))
	}
	for _, name := range robustChecks {
		if fails[name] > 0 {
			t.Errorf("asserted ordering %q failed %d times in %d", name, fails[name], shifts)
		}
	}
}

// TestEqualValuesZeroStd: the standard deviation of equal values is
// printed as an exact 0, not the rounding of the mean (the tau sweep's
// non-private rows read "± 3.56e-18"), by meanStd and by finalLoss (from
// the summary's deviation, which experiment.Summarize makes exactly 0 for
// equal values); the means are unchanged.
func TestEqualValuesZeroStd(t *testing.T) {
	xs := []float64{0.1, 0.1, 0.1}
	// The mean in float64 arithmetic (0.10000000000000002), unchanged.
	if m, sd := meanStd(xs); sd != 0 || m != (xs[0]+xs[1]+xs[2])/3 {
		t.Errorf("meanStd(%v) = %v, %v; want the mean (0.1 + 0.1 + 0.1) / 3 and 0", xs, m, sd)
	}
	if _, sd := meanStd([]float64{0.1, 0.2}); math.Abs(sd-math.Sqrt(0.005)) > 1e-15 {
		t.Errorf("meanStd(0.1, 0.2): std %v, want sqrt(0.005)", sd)
	}
	tr := func(last float64) *experiment.Trace {
		return &experiment.Trace{Rounds: []int{0, 5}, LossError: []float64{1, last}, Accuracy: []float64{0, 0},
			Regret: []float64{0, 0}, StaticRegret: []float64{0, 0}}
	}
	s, err := experiment.Summarize([]*experiment.Trace{tr(0.1), tr(0.1), tr(0.1)})
	if err != nil {
		t.Fatal(err)
	}
	// The mean is the float64 mean (0.10000000000000002), within 2^-52 of 0.1.
	if m, sd := finalLoss(s); math.Abs(m-0.1) > 0x1p-52*0.1 || sd != 0 {
		t.Errorf("finalLoss of three equal traces: %v, %v; want 0.1 and exactly 0", m, sd)
	}
	if got := pm(finalLoss(s)); got != "0.1 ± 0" {
		t.Errorf("printed %q, want %q", got, "0.1 ± 0")
	}
	// Unequal final values keep the sample deviation: (0.1, 0.2, 0.1) has
	// sqrt(0.01/3) by hand.
	if s, err = experiment.Summarize([]*experiment.Trace{tr(0.1), tr(0.2), tr(0.1)}); err != nil {
		t.Fatal(err)
	}
	if _, sd := finalLoss(s); math.Abs(sd-math.Sqrt(0.01/3)) > 1e-15 {
		t.Errorf("finalLoss of unequal traces: std %v, want sqrt(0.01/3)", sd)
	}
}
