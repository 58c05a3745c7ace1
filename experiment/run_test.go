package experiment

import (
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/dataset"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/internal/testutil"
	"github.com/dpmf/dpmf/model"
)

// With n = 1, tau = 1 and no noise, Algorithm 1 is online gradient descent
// with step eta~ = eta eta_g: x^{r+1} = x^r - eta~ grad f^r(x^r).
func TestRunOneLearnerIsOnlineGradientDescent(t *testing.T) {
	feats := [][]float64{{1, 2}, {-1, 0.5}, {0.3, -1}}
	labels := []float64{1, -1, 1}
	ds := newTestDataset(t, 1, 3, 1, feats, labels)
	p := mustProblem(t, ds, model.Logistic{})
	for _, algo := range []fedopt.Algorithm{fedopt.NonPrivate, fedopt.Correlated} {
		cfg := fedopt.Config{Algorithm: algo, Eta: 0.25, EtaG: 2, Clip: 0}
		var noise *fixedNoise
		if algo == fedopt.Correlated {
			cfg.Clip = 100 // no sample is clipped
			noise = zeroNoise(3, 2)
		}
		var tr *Trace
		if noise != nil {
			tr = mustRun(t, p, cfg, noise)
		} else {
			tr = mustRun(t, p, cfg, nil)
		}
		// By hand: x^0 = 0, grad f^0(0) = -y a / 2 = (-0.5, -1), so
		// x^1 = 0.5 * (0.5, 1) = (0.25, 0.5).
		x := []float64{0.25, 0.5}
		for r := 1; r < 3; r++ {
			g := logisticGrad(x, feats[r], labels[r], 0)
			for k := range x {
				x[k] -= 0.5 * g[k]
			}
		}
		for k := range x {
			if math.Abs(tr.X[k]-x[k]) > 1e-15 {
				t.Errorf("%v: x^3 = %v, want %v", algo, tr.X, x)
			}
		}
	}
}

// Algorithm 1 in its original form, with the server step computed from the
// difference of models (x^r - mean z^{r,tau}) / (eta tau), agrees with the
// implementation (which sums the clipped gradients instead).
func TestRunMatchesAlgorithm1(t *testing.T) {
	const n, R, tau, d = 3, 4, 3, 4
	const eta, etaG, clip, l2 = 0.3, 0.7, 0.8, 0.01
	ds, err := dataset.Synthetic{Alpha: 0.5, Beta: 0.5, Dim: d}.Dataset(n, R, tau, 11)
	if err != nil {
		t.Fatal(err)
	}
	p := mustProblem(t, ds, model.Logistic{L2: l2})
	noise := gaussNoise(R, d, 0.1, 5)
	tr := mustRun(t, p, fedopt.Config{Algorithm: fedopt.Correlated, Eta: eta, EtaG: etaG, Clip: clip}, noise)

	etaT := eta * etaG * tau
	x := make([]float64, d)
	for r := 0; r < R; r++ {
		mean := make([]float64, d)
		for i := 0; i < n; i++ {
			z := slices.Clone(x)
			for s := 0; s < tau; s++ {
				a, y := ds.Sample(i, r, s)
				g := clipTo(logisticGrad(z, a, y, l2), clip)
				for k := range z {
					z[k] -= eta * g[k]
				}
			}
			for k := range mean {
				mean[k] += z[k] / n
			}
		}
		for k := range x {
			x[k] -= etaT * ((x[k]-mean[k])/(eta*tau) + noise.rows[r][k])
		}
	}
	if e := dist(tr.X, x); e > 1e-12 {
		t.Errorf("x^R differs from Algorithm 1 by %g: got %v, want %v", e, tr.X, x)
	}
}

// The independent baseline: x^{r+1} = x^r - eta_ind ((1/n) sum_i sum_t
// clip(grad f_i^{r,t}(x^r)) + w^r), checked against a direct transcription.
func TestRunIndependentBaseline(t *testing.T) {
	const n, R, tau, d = 2, 3, 4, 3
	const clip, etaInd = 0.5, 0.2
	ds, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: d}.Dataset(n, R, tau, 3)
	if err != nil {
		t.Fatal(err)
	}
	p := mustProblem(t, ds, model.Logistic{L2: 1e-3})
	noise := gaussNoise(R, d, 0.3, 9)
	tr := mustRun(t, p, fedopt.Config{Algorithm: fedopt.Independent, Eta: 1, EtaG: 1, EtaInd: etaInd, Clip: clip}, noise)
	x := make([]float64, d)
	for r := 0; r < R; r++ {
		h := make([]float64, d)
		for i := 0; i < n; i++ {
			for s := 0; s < tau; s++ {
				a, y := ds.Sample(i, r, s)
				g := clipTo(logisticGrad(x, a, y, 1e-3), clip)
				for k := range h {
					h[k] += g[k] / n
				}
			}
		}
		for k := range x {
			x[k] -= etaInd * (h[k] + noise.rows[r][k])
		}
	}
	if e := dist(tr.X, x); e > 1e-13 {
		t.Errorf("x^R = %v, want %v", tr.X, x)
	}
	// The default server step of the baseline is eta eta_g.
	c := fedopt.Config{Algorithm: fedopt.Independent, Eta: 0.3, EtaG: 0.5}
	if got := c.ServerStep(10); got != 0.15 {
		t.Errorf("default baseline step = %v, want 0.15", got)
	}
}

// BaselineCorrelated takes the baseline's step with the mechanism's vectors:
// x^{r+1} = x^r - eta_ind ((1/n) sum_i sum_t clip(grad f_i^{r,t}(x^r)) + w^r),
// checked against a direct transcription with w^r the rows of C^{-1} Z for
// the square-root factorization of 3 rounds, computed by hand: C^{-1} is
// lower-triangular Toeplitz with coefficients 1, -1/2, -1/8. With zero
// noise the update is the Independent baseline's, bit for bit.
func TestRunBaselineCorrelated(t *testing.T) {
	const n, R, tau, d = 2, 3, 4, 3
	const clip, etaInd, l2 = 0.5, 0.2, 1e-3
	ds, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: d}.Dataset(n, R, tau, 3)
	if err != nil {
		t.Fatal(err)
	}
	p := mustProblem(t, ds, model.Logistic{L2: l2})
	z := gaussNoise(R, d, 0.3, 9).rows
	cinv := []float64{1, -0.5, -0.125}
	w := make([][]float64, R)
	for r := range w {
		w[r] = make([]float64, d)
		for s := 0; s <= r; s++ {
			for k := range w[r] {
				w[r][k] += cinv[r-s] * z[s][k]
			}
		}
	}
	cfg := fedopt.Config{Algorithm: fedopt.BaselineCorrelated, Eta: 1, EtaG: 1, EtaInd: etaInd, Clip: clip}
	tr := mustRun(t, p, cfg, &fixedNoise{rows: w})
	x := make([]float64, d)
	for r := 0; r < R; r++ {
		h := make([]float64, d)
		for i := 0; i < n; i++ {
			for s := 0; s < tau; s++ {
				a, y := ds.Sample(i, r, s)
				g := clipTo(logisticGrad(x, a, y, l2), clip)
				for k := range h {
					h[k] += g[k] / n
				}
			}
		}
		for k := range x {
			x[k] -= etaInd * (h[k] + w[r][k])
		}
	}
	if e := dist(tr.X, x); e > 1e-13 {
		t.Errorf("x^R = %v, want %v", tr.X, x)
	}
	zero := mustRun(t, p, cfg, zeroNoise(R, d))
	cfg.Algorithm = fedopt.Independent
	ind := mustRun(t, p, cfg, zeroNoise(R, d))
	if !testutil.SameBits(zero.X, ind.X) || !testutil.SameBits(zero.LossError, ind.LossError) {
		t.Errorf("zero noise: baseline-correlated %v, independent %v", zero.X, ind.X)
	}
}

// The noise enters as the given vector: after one round the private model
// differs from the noise-free one by exactly -eta~ w^0.
func TestRunAddsNoiseVector(t *testing.T) {
	const n, tau, d = 2, 3, 5
	ds, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: d}.Dataset(n, 1, tau, 2)
	if err != nil {
		t.Fatal(err)
	}
	p := mustProblem(t, ds, model.Logistic{L2: 1e-2})
	w := []float64{1, -2, 3, 0.5, -0.25}
	cfg := fedopt.Config{Algorithm: fedopt.Correlated, Eta: 0.1, EtaG: 2, Clip: 1}
	priv := mustRun(t, p, cfg, &fixedNoise{rows: [][]float64{w}})
	cfg.Algorithm = fedopt.NonPrivate
	np := mustRun(t, p, cfg, nil)
	etaT := 0.1 * 2 * tau
	for k := range w {
		if diff := priv.X[k] - np.X[k]; math.Abs(diff+etaT*w[k]) > 1e-14 {
			t.Errorf("coordinate %d: private - nonprivate = %v, want %v", k, diff, -etaT*w[k])
		}
	}
}

// The noise-free limit of the correlated algorithm is the nonprivate one:
// with zero noise they agree bit for bit, and with tiny noise closely.
func TestRunNoiseFreeLimit(t *testing.T) {
	const n, R, tau, d = 4, 30, 3, 8
	ds, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: d}.Dataset(n, R, tau, 4)
	if err != nil {
		t.Fatal(err)
	}
	p := mustProblem(t, ds, model.Logistic{L2: 1e-3})
	cfg := fedopt.Config{Algorithm: fedopt.NonPrivate, Eta: 0.05, EtaG: 1, Clip: 2, EvalEvery: 5}
	np := mustRun(t, p, cfg, nil)
	cfg.Algorithm = fedopt.Correlated
	zero := mustRun(t, p, cfg, zeroNoise(R, d))
	if !slices.Equal(np.X, zero.X) || !slices.Equal(np.LossError, zero.LossError) || !slices.Equal(np.Regret, zero.Regret) {
		t.Errorf("zero noise: correlated %v differs from nonprivate %v", zero.LossError, np.LossError)
	}
	tiny := mustRun(t, p, cfg, gaussNoise(R, d, 1e-9, 1))
	for k := range np.LossError {
		if math.Abs(tiny.LossError[k]-np.LossError[k]) > 1e-7 {
			t.Errorf("noise 1e-9, round %d: loss error %v, nonprivate %v", np.Rounds[k], tiny.LossError[k], np.LossError[k])
		}
	}
}

// Clipping bounds one client's influence: replacing one sample (here by one
// with features 1e6 times larger) changes the round's update by at most
// eta~ 2 B_g / n for Algorithm 1 (the whole local trajectory of that
// learner may change, but its mean clipped gradient by at most 2 B_g) and
// eta_ind 2 B_g / n for the baseline. Without clipping the change is far
// larger, so the check is not vacuous.
func TestRunClippingBoundsInfluence(t *testing.T) {
	const n, tau, d, clip = 4, 5, 6, 0.5
	ds, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: d}.Dataset(n, 1, tau, 8)
	if err != nil {
		t.Fatal(err)
	}
	alt := *ds
	alt.Features = slices.Clone(ds.Features)
	alt.Labels = slices.Clone(ds.Labels)
	a, _ := alt.Sample(1, 0, 0)
	for k := range a {
		a[k] *= 1e6
	}
	alt.Labels[alt.Index(1, 0, 0)] *= -1
	m := model.Logistic{L2: 1e-3}
	p, q := mustProblem(t, ds, m), mustProblem(t, &alt, m)
	for _, algo := range []fedopt.Algorithm{fedopt.Correlated, fedopt.Independent, fedopt.BaselineCorrelated} {
		cfg := fedopt.Config{Algorithm: algo, Eta: 0.2, EtaG: 1.5, Clip: clip}
		x := mustRun(t, p, cfg, zeroNoise(1, d)).X
		xa := mustRun(t, q, cfg, zeroNoise(1, d)).X
		bound := cfg.ServerStep(tau) * 2 * clip / n
		if got := dist(x, xa); got > bound*(1+1e-12) {
			t.Errorf("%v: one replaced sample moved the model by %g > eta~ 2 B_g / n = %g", algo, got, bound)
		}
		cfg.Algorithm = fedopt.NonPrivate
		cfg.Clip = 0
		if algo == fedopt.Correlated {
			if got := dist(mustRun(t, p, cfg, nil).X, mustRun(t, q, cfg, nil).X); got < 100*bound {
				t.Errorf("without clipping the replaced sample moved the model by only %g", got)
			}
		}
	}
}

// The numbers do not depend on whether learners run in goroutines.
func TestRunParallelLearnersBitForBit(t *testing.T) {
	const n, R, tau, d = 6, 25, 3, 10
	ds, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: d}.Dataset(n, R, tau, 21)
	if err != nil {
		t.Fatal(err)
	}
	p := mustProblem(t, ds, model.Logistic{L2: 1e-3})
	for _, algo := range fedopt.Algorithms() {
		cfg := fedopt.Config{Algorithm: algo, Eta: 0.05, EtaG: 1, Clip: 1, EvalEvery: 4}
		run := func(par bool) *Trace {
			cfg.ParallelLearners = par
			if algo == fedopt.NonPrivate {
				return mustRun(t, p, cfg, nil)
			}
			return mustRun(t, p, cfg, gaussNoise(R, d, 0.2, 3))
		}
		seq, par := run(false), run(true)
		for name, pair := range map[string][2][]float64{
			"x":             {seq.X, par.X},
			"loss error":    {seq.LossError, par.LossError},
			"regret":        {seq.Regret, par.Regret},
			"static regret": {seq.StaticRegret, par.StaticRegret},
			"accuracy":      {seq.Accuracy, par.Accuracy},
		} {
			if !testutil.SameBits(pair[0], pair[1]) {
				t.Errorf("%v: %s differs between sequential and parallel learners", algo, name)
			}
		}
	}
}

// The regret of the first rounds, computed by hand: with one sample per
// round, (f^r)* is attained at x = c y a with l2 c = sigmoid(-c |a|^2), c
// found here by bisection.
func TestRunRegretByHand(t *testing.T) {
	const l2, eta = 0.1, 0.5
	feats := [][]float64{{1, 2}, {-1, 0.5}}
	labels := []float64{1, -1}
	ds := newTestDataset(t, 1, 2, 1, feats, labels)
	m := model.Logistic{L2: l2}
	p := mustProblem(t, ds, m)
	tr := mustRun(t, p, fedopt.Config{Algorithm: fedopt.NonPrivate, Eta: eta, EtaG: 1}, nil)

	loss := func(x, a []float64, y float64) float64 {
		return math.Log(1+math.Exp(-y*dot(x, a))) + l2/2*dot(x, x)
	}
	roundMin := func(a []float64, y float64) float64 {
		aa := dot(a, a)
		lo, hi := 0.0, 100.0 // g(0) < 0 < g(100)
		for range 200 {
			c := (lo + hi) / 2
			if l2*c-1/(1+math.Exp(c*aa)) < 0 {
				lo = c
			} else {
				hi = c
			}
		}
		x := []float64{lo * y * a[0], lo * y * a[1]}
		return loss(x, a, y)
	}
	x0 := []float64{0, 0}
	x1 := []float64{eta * 0.5 * feats[0][0], eta * 0.5 * feats[0][1]} // -eta grad at 0
	reg1 := loss(x0, feats[0], labels[0]) - roundMin(feats[0], labels[0])
	reg2 := reg1 + loss(x1, feats[1], labels[1]) - roundMin(feats[1], labels[1])
	want := []float64{0, reg1, reg2}
	if !slices.Equal(tr.Rounds, []int{0, 1, 2}) {
		t.Fatalf("rounds = %v", tr.Rounds)
	}
	for k, w := range want {
		if math.Abs(tr.Regret[k]-w) > 1e-9 {
			t.Errorf("regret after %d rounds = %.12g, want %.12g", k, tr.Regret[k], w)
		}
	}
}

func TestRunEvaluatedRounds(t *testing.T) {
	ds, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: 3}.Dataset(2, 7, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	p := mustProblem(t, ds, model.Logistic{L2: 1e-2})
	for _, c := range []struct {
		every int
		want  []int
	}{{0, []int{0, 1, 2, 3, 4, 5, 6, 7}}, {3, []int{0, 3, 6, 7}}, {7, []int{0, 7}}, {100, []int{0, 7}}} {
		tr := mustRun(t, p, fedopt.Config{Algorithm: fedopt.NonPrivate, Eta: 0.1, EtaG: 1, EvalEvery: c.every}, nil)
		if !slices.Equal(tr.Rounds, c.want) {
			t.Errorf("eval every %d: rounds %v, want %v", c.every, tr.Rounds, c.want)
		}
		if len(tr.LossError) != len(c.want) || len(tr.Regret) != len(c.want) || len(tr.Accuracy) != len(c.want) {
			t.Errorf("eval every %d: metric lengths differ from rounds", c.every)
		}
	}
}

func TestRunErrors(t *testing.T) {
	ds, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: 3}.Dataset(2, 4, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	p := mustProblem(t, ds, model.Logistic{L2: 1e-2})
	ok := fedopt.Config{Algorithm: fedopt.Correlated, Eta: 0.1, EtaG: 1, Clip: 1}
	for _, c := range []struct {
		name  string
		edit  func(*fedopt.Config)
		noise *fixedNoise
	}{
		{"eta 0", func(c *fedopt.Config) { c.Eta = 0 }, zeroNoise(4, 3)},
		{"eta NaN", func(c *fedopt.Config) { c.Eta = math.NaN() }, zeroNoise(4, 3)},
		{"eta_g Inf", func(c *fedopt.Config) { c.EtaG = math.Inf(1) }, zeroNoise(4, 3)},
		{"no clipping for private", func(c *fedopt.Config) { c.Clip = 0 }, zeroNoise(4, 3)},
		{"negative eta_ind", func(c *fedopt.Config) { c.EtaInd = -1 }, zeroNoise(4, 3)},
		{"negative eval", func(c *fedopt.Config) { c.EvalEvery = -1 }, zeroNoise(4, 3)},
		{"x0 length", func(c *fedopt.Config) { c.X0 = []float64{1} }, zeroNoise(4, 3)},
		{"x0 NaN", func(c *fedopt.Config) { c.X0 = []float64{0, math.NaN(), 0} }, zeroNoise(4, 3)},
		{"missing noise", func(c *fedopt.Config) {}, nil},
		{"noise rounds", func(c *fedopt.Config) {}, zeroNoise(5, 3)},
		{"noise dim", func(c *fedopt.Config) {}, zeroNoise(4, 2)},
		{"noise for nonprivate", func(c *fedopt.Config) { c.Algorithm = fedopt.NonPrivate }, zeroNoise(4, 3)},
		{"unknown algorithm", func(c *fedopt.Config) { c.Algorithm = 7 }, zeroNoise(4, 3)},
	} {
		cfg := ok
		c.edit(&cfg)
		var err error
		if c.noise == nil {
			_, err = Run(t.Context(), p, cfg, nil)
		} else {
			_, err = Run(t.Context(), p, cfg, c.noise)
		}
		if err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
	if _, err := Run(t.Context(), p, ok, zeroNoise(4, 3)); err != nil {
		t.Errorf("valid config: %v", err)
	}
}

// The real data set of the project: 569 rows, 30 features, 212 malignant
// (+1); logistic regression separates it well (accuracy above 95%, a
// well-known property of this data set).
func TestLoadCSVBreastCancer(t *testing.T) {
	path := filepath.Join("..", "testdata", "breast_cancer.csv")
	tab, err := dataset.LoadCSV(path)
	if err != nil {
		t.Fatal(err)
	}
	pos := 0
	for _, y := range tab.Labels {
		if y == 1 {
			pos++
		}
	}
	if tab.Len() != 569 || tab.Dim != 30 || pos != 212 || tab.Names[0] != "mean_radius" {
		t.Fatalf("read %d rows, %d features, %d positive, first name %q", tab.Len(), tab.Dim, pos, tab.Names[0])
	}
	for k := 0; k < tab.Dim; k++ {
		m, s := 0.0, 0.0
		for j := 0; j < tab.Len(); j++ {
			m += tab.Features[j*tab.Dim+k]
		}
		m /= float64(tab.Len())
		for j := 0; j < tab.Len(); j++ {
			c := tab.Features[j*tab.Dim+k] - m
			s += c * c
		}
		if math.Abs(m) > 1e-12 || math.Abs(s/float64(tab.Len())-1) > 1e-12 {
			t.Errorf("feature %d: mean %g, variance %g after standardising", k, m, s/float64(tab.Len()))
		}
	}
	ds, err := tab.Deal(4, 35, 4, dataset.Split{Kind: dataset.IID}, 1)
	if err != nil {
		t.Fatal(err)
	}
	p := mustProblem(t, ds, model.Logistic{L2: 1e-3})
	tr := mustRun(t, p, fedopt.Config{Algorithm: fedopt.NonPrivate, Eta: 0.1, EtaG: 1, Clip: 5, EvalEvery: 35}, nil)
	if acc := tr.Accuracy[len(tr.Accuracy)-1]; acc < 0.95 {
		t.Errorf("accuracy after one pass %v, want > 0.95", acc)
	}
	if _, err := tab.Deal(10, 10, 10, dataset.Split{Kind: dataset.IID}, 1); err == nil || !strings.Contains(err.Error(), path+": 569 samples, need") {
		t.Errorf("too few samples: error %v", err)
	}
	if _, err := dataset.LoadCSV(filepath.Join(t.TempDir(), "missing.csv")); err == nil || !strings.Contains(err.Error(), "missing.csv") {
		t.Errorf("missing file: error %v", err)
	}
}
