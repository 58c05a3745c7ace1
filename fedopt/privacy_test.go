package fedopt

import (
	"math"
	"testing"

	"github.com/dpmf/dpmf/accountant"
	"github.com/dpmf/dpmf/factorize"
)

func TestSensitivity(t *testing.T) {
	for _, c := range []struct {
		cal  Calibration
		want float64
	}{
		// 2 gamma B_g / n: replace-one changes a learner's update by 2 B_g.
		{Exact, 2 * 1.5 * 0.5 / 4},
		{Paper, 2 * 1.5 * 0.5}, // 2 gamma B_g
	} {
		got, err := Sensitivity(c.cal, 4, 0.5, 1.5)
		if err != nil || got != c.want {
			t.Errorf("%v: sensitivity %v, %v; want %v", c.cal, got, err, c.want)
		}
	}
	if _, err := Sensitivity(Exact, 0, 1, 1); err == nil {
		t.Error("no error for 0 learners")
	}
}

// singleMetrics returns metrics under single participation with gamma.
func singleMetrics(gamma float64) factorize.Metrics {
	return factorize.Metrics{Gamma: gamma, UnitSensitivity: factorize.Sensitivity{Value: gamma, Exact: true, Rule: factorize.RuleColumnNorm}}
}

// The noise std of a calibration is the accountant's for its sensitivity,
// and reproduces independently computed values: the published exact noise
// multiplier 0.68984233 at (5, 1e-3) (notes, section 4), and the paper's two
// formulas evaluated directly.
func TestCalibrate(t *testing.T) {
	const eps, delta, n, clip, gamma = 5.0, 1e-3, 10, 2.0, 1.3
	L := math.Log(1 / delta)
	for _, c := range []struct {
		algo   Algorithm
		cal    Calibration
		method accountant.Method
		want   float64
		tol    float64
	}{
		{Correlated, Exact, accountant.Exact, 0.68984233 * 2 * gamma * clip / n, 1e-8},
		{Independent, Exact, accountant.Exact, 0.68984233 * 2 * clip / n, 1e-8},
		{BaselineCorrelated, Exact, accountant.Exact, 0.68984233 * 2 * gamma * clip / n, 1e-8},
		{BaselineCorrelated, Paper, accountant.Paper, math.Sqrt(4 * gamma * gamma * clip * clip * (2*L + eps) / (eps * eps)), 1e-10},
		// V^2 = 4 gamma^2 B_g^2 (2 log(1/delta) + eps) / eps^2.
		{Correlated, Paper, accountant.Paper, math.Sqrt(4 * gamma * gamma * clip * clip * (2*L + eps) / (eps * eps)), 1e-10},
		// V^2 = 2 B_g^2 / rho, rho = (sqrt(eps + L) - sqrt(L))^2.
		{Independent, Paper, accountant.ZCDP, math.Sqrt(2 * clip * clip / math.Pow(math.Sqrt(eps+L)-math.Sqrt(L), 2)), 1e-10},
	} {
		g := gamma
		if c.algo == Independent {
			g = 1
		}
		p, err := Calibrate(c.algo, c.cal, eps, delta, n, clip, singleMetrics(g))
		if err != nil {
			t.Fatal(err)
		}
		acc, err := accountant.NoiseStd(eps, delta, p.Sensitivity, c.method)
		if err != nil {
			t.Fatal(err)
		}
		if p.NoiseStd != acc || p.Method != c.method || p.Sensitivity != must(Sensitivity(c.cal, n, clip, g)) {
			t.Errorf("%v, %v: std %v with %v for sensitivity %v; accountant %v", c.algo, c.cal, p.NoiseStd, p.Method, p.Sensitivity, acc)
		}
		if math.Abs(p.NoiseStd-c.want) > c.tol*c.want || p.NoiseStd < c.want*(1-1e-12) && c.cal == Paper {
			t.Errorf("%v, %v: std %.12g, want %.12g", c.algo, c.cal, p.NoiseStd, c.want)
		}
		if p.Participation != accountant.SingleParticipation || p.RecordAt(7).Round != 7 || p.Eps != eps || p.Delta != delta {
			t.Errorf("%v, %v: record %+v", c.algo, c.cal, p.Record)
		}
		if err := p.RecordAt(3).Verify(); err != nil {
			t.Errorf("%v, %v: record does not verify: %v", c.algo, c.cal, err)
		}
	}
	for _, c := range []struct {
		name                    string
		algo                    Algorithm
		eps, delta, clip, gamma float64
		n                       int
	}{
		{"nonprivate", NonPrivate, 1, 1e-5, 1, 1, 1},
		{"eps 0", Correlated, 0, 1e-5, 1, 1, 1},
		{"eps Inf", Correlated, math.Inf(1), 1e-5, 1, 1, 1},
		{"delta 0", Correlated, 1, 0, 1, 1, 1},
		{"delta 1", Correlated, 1, 1, 1, 1, 1},
		{"clip 0", Correlated, 1, 1e-5, 0, 1, 1},
		{"clip Inf", Independent, 1, 1e-5, math.Inf(1), 1, 1},
		{"gamma NaN", Correlated, 1, 1e-5, 1, math.NaN(), 1},
		{"learners 0", Correlated, 1, 1e-5, 1, 1, 0},
		{"independent with gamma 2", Independent, 1, 1e-5, 1, 2, 1},
	} {
		if _, err := Calibrate(c.algo, Exact, c.eps, c.delta, c.n, c.clip, singleMetrics(c.gamma)); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
}

func must(v float64, err error) float64 {
	if err != nil {
		panic(err)
	}
	return v
}

// mechanism.New documents the recipe std = NoiseStd(eps, delta,
// ReleaseSensitivity(clip, n, replace-one, sens)); fedopt's calibration
// gives the same std for the same setting, under single participation and
// under epochs, where sens is checked against ||C u|| for the worst epoch
// pattern u (C >= 0 here, so that is the sensitivity).
func TestMechanismRecipeMatchesCalibrate(t *testing.T) {
	const R, n, clip, eps, delta = 24, 4, 1.5, 2.0, 1e-5
	w, _ := factorize.Prefix(R)
	for _, p := range []factorize.Participation{factorize.SingleParticipation(), factorize.FixedEpochs(3)} {
		f, err := factorize.SqrtStrategy{}.Factorize(t.Context(), w, p)
		if err != nil {
			t.Fatal(err)
		}
		// Independent value of the sensitivity: max over the residue
		// classes r of ||C 1_class||.
		b := R / max(1, p.K)
		want := 0.0
		for r := 0; r < b; r++ {
			s := 0.0
			for i := 0; i < R; i++ {
				v := 0.0
				for j := r; j < R; j += b {
					v += f.C.At(i, j)
				}
				s += v * v
			}
			want = math.Max(want, math.Sqrt(s))
		}
		unit := f.Metrics.UnitSensitivity.Value
		if math.Abs(unit-want) > 1e-12*want {
			t.Errorf("%v: sensitivity %v, want %v", p, unit, want)
		}
		sens, err := accountant.ReleaseSensitivity(clip, n, accountant.ReplaceOne, unit)
		if err != nil {
			t.Fatal(err)
		}
		std, err := accountant.NoiseStd(eps, delta, sens, accountant.Exact)
		if err != nil {
			t.Fatal(err)
		}
		priv, err := Calibrate(Correlated, Exact, eps, delta, n, clip, f.Metrics)
		if err != nil {
			t.Fatal(err)
		}
		if priv.NoiseStd != std || priv.Sensitivity != sens || string(priv.Participation) != p.String() {
			t.Errorf("%v: fedopt std %v sensitivity %v (%s); recipe %v, %v", p, priv.NoiseStd, priv.Sensitivity, priv.Participation, std, sens)
		}
		// The recipe mechanism.New documented before (multiplier x clip x
		// gamma) was 2 / n times this for replace-one.
		sigma, _ := accountant.Sigma(eps, delta, accountant.Exact)
		if old := sigma * clip * unit; math.Abs(std/old-2.0/n) > 1e-12 {
			t.Errorf("%v: std / (sigma clip sens) = %v, want 2/n", p, std/old)
		}
	}
}
