package audit

import (
	"math"
	"math/rand/v2"
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
