package audit

import (
	"encoding/json"
	"math"
	"math/big"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// With delta = 0 and every one of r = m = v guesses right, the p-value is
// q^r, so the bound solves q^r = p: eps = log(q / (1 - q)), q = p^(1/r)
// (a closed form).
func TestOneRunEpsilonClosedForm(t *testing.T) {
	for _, r := range []int{10, 100, 1000} {
		p := 0.05
		q := math.Pow(p, 1/float64(r))
		want := math.Log(q / (1 - q))
		got := OneRunEpsilon(r, r, r, 0, p)
		if math.Abs(got-want) > 1e-9*want {
			t.Errorf("r = %d: eps %v, closed form %v", r, got, want)
		}
	}
}

// The p-value against a direct evaluation with binomial coefficients for a
// small case, delta term included.
func TestOneRunPValueDirect(t *testing.T) {
	m, r, v, eps, delta := 40, 12, 10, 1.3, 1e-3
	q := math.Exp(eps) / (1 + math.Exp(eps))
	pmf := func(k int) float64 {
		c := 1.0
		for i := 0; i < k; i++ {
			c = c * float64(r-i) / float64(i+1)
		}
		return c * math.Pow(q, float64(k)) * math.Pow(1-q, float64(r-k))
	}
	tail := 0.0
	for k := v; k <= r; k++ {
		tail += pmf(k)
	}
	alpha := 0.0
	for i := 1; i <= v; i++ {
		s := 0.0
		for k := v - i; k < v; k++ {
			s += pmf(k)
		}
		alpha = math.Max(alpha, s/float64(i))
	}
	want := tail + 2*float64(m)*delta*alpha
	if got := OneRunPValue(m, r, v, eps, delta); math.Abs(got-want) > 1e-12 {
		t.Errorf("p-value %v, direct %v", got, want)
	}
}

// The mu-hat interval covers the true mu of exactly Gaussian scores
// (independent generator) at its level: 400 replications at level 0.99
// cover at least 388 times unless the coverage is below 0.99 (for a true
// coverage of 0.99 the count falls below 388 with probability 2.5e-4: 13 or more misses where 4 are expected).
func TestEstimateMuCoverage(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const reps, m, mu = 400, 500, 1.2
	cover := 0
	for range reps {
		scores := make([]float64, m)
		in := make([]bool, m)
		w := make([]float64, m)
		for j := range scores {
			in[j] = rng.IntN(2) == 1
			w[j] = 0.5 + 0.5*rng.Float64()
			mean := w[j] * mu / 2
			if !in[j] {
				mean = -mean
			}
			scores[j] = mean + rng.NormFloat64()
		}
		est, err := estimateMu(scores, in, w, 0.99)
		if err != nil {
			t.Fatal(err)
		}
		if est.Lo <= mu && mu <= est.Hi {
			cover++
		}
	}
	if cover < 388 {
		t.Errorf("covered %d of %d", cover, reps)
	}
	t.Logf("covered %d of %d", cover, reps)
}

// TestEstimateMuPerfectSeparation: scores exactly on the line T_j = 3 x_j
// (x_j = +-1/2: every canary weight 1) give beta-hat = 3 and sigma-hat = 0,
// so mu-hat = +Inf; the interval's ends mu-hat -+ z se were Inf - Inf = NaN
// at the lower end. By hand, at level 0.99 (z = 2.5758) the ends are
// |mu| (1 -+ z sqrt(1/(2 (m - 1)) + 1 / (sum x^2 mu^2))), whose limit as
// sigma-hat -> 0 is |mu| (1 -+ z / sqrt(2 (m - 1))): for m = 8, z / sqrt 14
// = 0.688 < 1 gives [+Inf, +Inf]; for m = 4, z / sqrt 6 = 1.052 > 1 gives
// [-Inf, +Inf]; mirrored scores (every in canary below every out one) give
// mu-hat = -Inf and the mirrored interval. Where mu-hat is finite but
// mu-hat^2 overflows (sigma-hat near 1e-154), the ends were -Inf and +Inf;
// they are mu-hat -+ z se with se evaluated in big.Float.
func TestEstimateMuPerfectSeparation(t *testing.T) {
	inf := math.Inf(1)
	for _, c := range []struct {
		m      int
		sign   float64
		lo, hi float64
	}{{8, 1, inf, inf}, {4, 1, -inf, inf}, {8, -1, -inf, -inf}, {4, -1, -inf, inf}} {
		scores, in, w := make([]float64, c.m), make([]bool, c.m), make([]float64, c.m)
		for j := range scores {
			in[j], w[j] = j%2 == 0, 1
			scores[j] = c.sign * 1.5
			if !in[j] {
				scores[j] = -scores[j]
			}
		}
		est, err := estimateMu(scores, in, w, 0.99)
		if err != nil {
			t.Fatal(err)
		}
		if est.Mu != c.sign*inf || est.Lo != c.lo || est.Hi != c.hi || est.Sigma != 0 {
			t.Errorf("m = %d, sign %v: mu-hat %v [%v, %v], sigma-hat %v; want %v [%v, %v], 0", c.m, c.sign, est.Mu, est.Lo, est.Hi, est.Sigma, c.sign*inf, c.lo, c.hi)
		}
	}

	// mu-hat about 3e154: weights 1e-139 (x_j = +-5e-140), scores 3 x_j
	// plus residuals +-1e-154.
	const m = 8
	scores, in, w := make([]float64, m), make([]bool, m), make([]float64, m)
	sxx := 0.0
	for j := range scores {
		in[j], w[j] = j%2 == 0, 1e-139
		x := w[j] / 2
		if !in[j] {
			x = -x
		}
		sxx += x * x
		scores[j] = 3*x + 1e-154*float64(1-2*(j/2%2))
	}
	est, err := estimateMu(scores, in, w, 0.99)
	if err != nil {
		t.Fatal(err)
	}
	if !(math.Abs(est.Mu) > 1.4e154) || math.IsInf(est.Mu, 0) {
		t.Fatalf("mu-hat %v, want a finite one whose square overflows", est.Mu)
	}
	mu := new(big.Float).SetPrec(200).SetFloat64(est.Mu)
	v := new(big.Float).SetPrec(200).Quo(new(big.Float).Mul(mu, mu), big.NewFloat(2*(m-1)))
	v.Add(v, new(big.Float).Quo(big.NewFloat(1), big.NewFloat(sxx)))
	se := new(big.Float).SetPrec(200).Sqrt(v)
	se.Mul(se, big.NewFloat(levelZ(0.99)))
	lo, _ := new(big.Float).Sub(mu, se).Float64()
	hi, _ := new(big.Float).Add(mu, se).Float64()
	if math.Abs(est.Lo-lo) > 1e-12*math.Abs(lo) || math.Abs(est.Hi-hi) > 1e-12*hi {
		t.Errorf("mu-hat %v: interval [%v, %v], big.Float [%v, %v]", est.Mu, est.Lo, est.Hi, lo, hi)
	}
}

// TestReportJSONNonFinite: a report's non-finite statistics are written as
// the strings "+Inf", "-Inf" and "NaN" (encoding/json refused them: "json:
// unsupported value: +Inf") and read back; finite ones are written as the
// plain encoding of the struct writes them (same keys, order and numbers).
func TestReportJSONNonFinite(t *testing.T) {
	type plainMu MuEstimate
	e := MuEstimate{Mu: 1.25, Lo: -0.5, Hi: 3, Level: 0.99, Sigma: 1e-3}
	got, err := json.Marshal(e)
	want, err2 := json.Marshal(plainMu(e))
	if err != nil || err2 != nil || string(got) != string(want) {
		t.Errorf("finite MuEstimate: %s (%v), plain encoding %s (%v)", got, err, want, err2)
	}
	type plainObserver Observer // its Mu still encodes by MuEstimate's method, checked above
	o := Observer{Threat: "t", MuAnalytic: 2, EpsAnalytic: 3, Mu: e, EpsOfMu: 4, EpsOfMuLo: 0, EpsOfMuHi: 5, Contains: true,
		Bound: Bound{Epsilon: 0.5, Delta: 1e-5, Confidence: 0.95, Guesses: 10, Correct: 9}, Scores: []float64{1, -2}, In: []bool{true, false}, Weights: []float64{1, 0.5}}
	got, err = json.Marshal(o)
	want, err2 = json.Marshal(plainObserver(o))
	if err != nil || err2 != nil || string(got) != string(want) {
		t.Errorf("finite Observer: %s (%v), plain encoding %s (%v)", got, err, want, err2)
	}

	inf := math.Inf(1)
	o.Mu = MuEstimate{Mu: inf, Lo: -inf, Hi: inf, Level: 0.99, Sigma: math.NaN()}
	o.EpsAnalytic, o.EpsOfMu, o.EpsOfMuHi = inf, inf, inf
	got, err = json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range []string{`"eps_analytic":"+Inf"`, `"mu_hat":"+Inf"`, `"mu_lo":"-Inf"`, `"mu_hi":"+Inf"`, `"score_std":"NaN"`, `"eps_of_mu_hat":"+Inf"`, `"eps_of_mu_lo":0`} {
		if !strings.Contains(string(got), kv) {
			t.Errorf("JSON %s lacks %s", got, kv)
		}
	}
	var back Observer
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	if back.Mu.Mu != inf || back.Mu.Lo != -inf || back.Mu.Hi != inf || !math.IsNaN(back.Mu.Sigma) || back.EpsOfMu != inf || back.MuAnalytic != 2 || back.Bound != o.Bound {
		t.Errorf("read back %+v, want %+v", back, o)
	}
	if err := json.Unmarshal([]byte(`{"mu_hat":"Infinity"}`), &back.Mu); err == nil {
		t.Errorf(`mu_hat "Infinity" read without error`)
	}
}

// TestReplayReportJSONNonFinite: a finite ReplayReport encodes exactly as
// its plain fields would (same names, order and numbers); a non-finite
// distance, ratio or plan number is written as "+Inf", "-Inf" or "NaN"
// and read back, where encoding/json failed on the whole report before.
func TestReplayReportJSONNonFinite(t *testing.T) {
	type plainReport ReplayReport
	r := ReplayReport{
		AuditedPlan: AuditedPlan{Algorithm: "correlated", Strategy: "optimal", Participation: "single", Learners: 3, Rounds: 4, Tau: 2, Dim: 5,
			Clip: 1, Eps: 5, Delta: 1e-3, NoiseStd: 0.25},
		Declared: 0.5, DeclaredRule: "column-norm", Measured: 0.375, Ratio: 0.75, Expected: 0.375,
		AuditedLearner: 1, AuditedRounds: []int{0, 2}, Dropped: 1, Network: true,
		Checks: []Check{{Name: "sensitivity", OK: true, Detail: "d"}}, OK: true, Seconds: 1.5,
	}
	got, err := json.Marshal(r)
	want, err2 := json.Marshal(plainReport(r))
	if err != nil || err2 != nil || string(got) != string(want) {
		t.Errorf("finite ReplayReport: %s (%v), plain encoding %s (%v)", got, err, want, err2)
	}
	var back ReplayReport
	if err := json.Unmarshal(got, &back); err != nil || !reflect.DeepEqual(back, r) {
		t.Errorf("finite ReplayReport read back as %+v (%v), want %+v", back, err, r)
	}

	inf := math.Inf(1)
	r.Measured, r.Ratio, r.Expected, r.Eps, r.Declared = inf, math.NaN(), -inf, inf, 0
	if _, err := json.Marshal(plainReport(r)); err == nil {
		t.Fatal("the plain encoding accepts +Inf: the test shows nothing")
	}
	got, err = json.Marshal(&r) // as cmd/dpaudit writes it, through a pointer
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range []string{`"measured_distance":"+Inf"`, `"ratio":"NaN"`, `"expected_distance":"-Inf"`, `"eps":"+Inf"`, `"declared_sensitivity":0`, `"audited_rounds":[0,2]`} {
		if !strings.Contains(string(got), kv) {
			t.Errorf("JSON %s lacks %s", got, kv)
		}
	}
	back = ReplayReport{}
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	if back.Measured != inf || !math.IsNaN(back.Ratio) || back.Expected != -inf || back.Eps != inf || back.NoiseStd != 0.25 ||
		back.AuditedLearner != 1 || !reflect.DeepEqual(back.Checks, r.Checks) || back.Seconds != 1.5 {
		t.Errorf("read back %+v, want %+v", back, r)
	}
}

// TestEstimateMuExactLineAnyBits: scores that lie exactly on the fitted
// line (every included canary's score S, every excluded one's -S, equal
// weights; or weights of powers of 2 with scores their exact multiples)
// have a spread of exactly 0, so mu-hat = +Inf, whatever the last bits of
// S: in real arithmetic the least-squares residuals are 0. Before, the
// fit's own rounding left residuals of about an ulp of S for some S (on
// 386, the canary audit's S = 0x1.5a69fd5adc05ep+65 gave sigma-hat 8758
// and mu-hat 1.1e16 for a release whose noise rounding had erased), so
// the verdict hung on the last bits of the noise operator's arithmetic.
func TestEstimateMuExactLineAnyBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	ss := []float64{0x1.5a69fd5adc05ep+65, 0x1.5a69fd5adc057p+65, 1.5}
	for range 2000 {
		ss = append(ss, math.Ldexp(1+rng.Float64(), rng.IntN(200)-100))
	}
	for i, s := range ss {
		m := 3 + rng.IntN(30)
		if i == 0 || i == 1 {
			m = 8
		}
		scores, in, w := make([]float64, m), make([]bool, m), make([]float64, m)
		for j := range scores {
			in[j], w[j] = rng.IntN(2) == 1, 1
			if i%2 == 1 && i > 2 {
				w[j] = math.Ldexp(1, -rng.IntN(4)) // scores stay exact multiples
			}
			if j == 0 {
				in[j] = true // both groups present
			} else if j == 1 {
				in[j] = false
			}
			scores[j] = s * w[j]
			if !in[j] {
				scores[j] = -scores[j]
			}
		}
		if i == 0 || i == 1 {
			// The canary audit's pattern on 386 and amd64.
			copy(in, []bool{false, true, false, false, true, false, false, false})
			for j := range scores {
				scores[j] = math.Copysign(s, map[bool]float64{true: 1, false: -1}[in[j]])
			}
		}
		est, err := estimateMu(scores, in, w, 0.99)
		if err != nil {
			t.Fatal(err)
		}
		if est.Sigma != 0 || !math.IsInf(est.Mu, 1) {
			t.Errorf("S = %x, m = %d, weights %v: sigma-hat %v, mu-hat %v; want 0, +Inf", s, m, w, est.Sigma, est.Mu)
		}
	}
}
