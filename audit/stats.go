package audit

import (
	"fmt"
	"math"
	"sort"

	"github.com/dpmf/dpmf/accountant"
	"github.com/dpmf/dpmf/internal/ddfloat"
)

// levelZ returns z with Phi(z) = (1 + level) / 2, the half-width in
// standard errors of a two-sided interval at level: sqrt 2 erfinv(level),
// finite and accurate for every level < 1 (forming (1 + level) / 2 first
// rounds it to 1 from level = 1 - 2^-53 on, and loses digits before).
func levelZ(level float64) float64 { return math.Sqrt2 * math.Erfinv(level) }

// logBinomPMF returns log Pr[Bin(n, q) = k]; a factor q^0 or (1 - q)^0
// is 1 even where its logarithm is -Inf.
func logBinomPMF(n, k int, logq, log1q float64) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	l := a - b - c
	if k > 0 {
		l += float64(k) * logq
	}
	if n-k > 0 {
		l += float64(n-k) * log1q
	}
	return l
}

// OneRunPValue is the probability bound of Steinke, Nasr and Jagielski
// (arXiv 2305.08846, Theorem 3.1, with the delta term of their reference
// code) that an auditor makes at least v correct guesses out of r on m
// canaries, each included independently with probability 1/2, against an
// (eps, delta)-DP mechanism:
//
//	Pr[W >= v] <= Pr[Bin(r, q) >= v] + 2 m delta max_{1<=i<=v} Pr[v-i <= Bin(r, q) < v] / i,
//
// q = e^eps / (1 + e^eps). A value below 1 - confidence rejects
// (eps, delta)-DP at that confidence. It is NaN outside the theorem's
// domain: unless 0 <= v <= r <= m, eps >= 0 and 0 <= delta <= 1.
func OneRunPValue(m, r, v int, eps, delta float64) float64 {
	if !oneRunDomain(m, r, v, delta) || !(eps >= 0) {
		return math.NaN()
	}
	if v == 0 {
		return 1
	}
	// log q and log(1 - q) = log q - eps: finite (or -Inf) for every
	// eps >= 0, where log1p(e^eps) overflows to +Inf from eps = 710 on.
	logq := -math.Log1p(math.Exp(-eps))
	log1q := logq - eps
	tail := 0.0
	for k := v; k <= r; k++ {
		tail += math.Exp(logBinomPMF(r, k, logq, log1q))
	}
	alpha, sum := 0.0, 0.0
	for i := 1; i <= v; i++ {
		sum += math.Exp(logBinomPMF(r, v-i, logq, log1q))
		alpha = math.Max(alpha, sum/float64(i))
	}
	return math.Min(1, tail+2*float64(m)*delta*alpha)
}

// OneRunEpsilon returns the largest eps that the observation (m canaries,
// r guesses, v correct) rejects at level p (confidence 1 - p): a lower
// bound on the mechanism's eps at delta that holds with probability at
// least 1 - p. 0 if nothing is rejected; NaN unless 0 <= v <= r <= m,
// 0 <= delta <= 1 and 0 < p < 1 (where no bound is meant: more correct
// guesses than guesses would otherwise reject every eps).
func OneRunEpsilon(m, r, v int, delta, p float64) float64 {
	if !oneRunDomain(m, r, v, delta) || !(p > 0 && p < 1) {
		return math.NaN()
	}
	if OneRunPValue(m, r, v, 0, delta) >= p {
		return 0
	}
	lo, hi := 0.0, 1.0
	for OneRunPValue(m, r, v, hi, delta) < p {
		lo, hi = hi, 2*hi
		if hi > 1e3 {
			return lo
		}
	}
	for range 60 {
		mid := (lo + hi) / 2
		if OneRunPValue(m, r, v, mid, delta) < p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// oneRunDomain reports whether m canaries, r guesses and v correct ones,
// at delta, are counts and a probability the one-run theorem speaks of.
func oneRunDomain(m, r, v int, delta float64) bool {
	return 0 <= v && v <= r && r <= m && delta >= 0 && delta <= 1
}

// Bound is a rigorous one-run lower bound on epsilon.
type Bound struct {
	// Epsilon is the lower bound at Delta, holding with probability at
	// least Confidence over the canaries' coins and the noise.
	Epsilon    float64 `json:"eps_lower_bound"`
	Delta      float64 `json:"delta"`
	Confidence float64 `json:"confidence"`
	// Guesses and Correct are the guesses made and how many were right,
	// for the number of guesses that gave the bound.
	Guesses int `json:"guesses"`
	Correct int `json:"correct"`
}

// oneRunBound ranks the canaries by score (largest: guessed in; smallest:
// guessed out), tries a fixed grid of numbers of guesses (m/50, m/20,
// m/10, m/5, m/2 and m) and returns the best bound, at confidence
// `confidence` after a Bonferroni correction over the grid.
func oneRunBound(scores []float64, in []bool, delta, confidence float64) Bound {
	m := len(scores)
	idx := make([]int, m)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return scores[idx[a]] > scores[idx[b]] })
	grid := []int{m / 50, m / 20, m / 10, m / 5, m / 2, m}
	p := (1 - confidence) / float64(len(grid))
	best := Bound{Delta: delta, Confidence: confidence}
	for _, r := range grid {
		r -= r % 2
		if r < 2 {
			continue
		}
		v := 0
		for k := 0; k < r/2; k++ {
			if in[idx[k]] {
				v++
			}
			if !in[idx[m-1-k]] {
				v++
			}
		}
		if e := OneRunEpsilon(m, r, v, delta, p); e > best.Epsilon || best.Guesses == 0 {
			best.Epsilon, best.Guesses, best.Correct = e, r, v
		}
	}
	return best
}

// MuEstimate is a Gaussian-DP estimate from canary scores. Its JSON
// writes a non-finite value as the string "+Inf", "-Inf" or "NaN" (mu-hat
// is +Inf where the scores separate with no spread; see estimateMu).
type MuEstimate struct {
	// Mu is the estimate and [Lo, Hi] its confidence interval at Level.
	Mu    float64 `json:"mu_hat"`
	Lo    float64 `json:"mu_lo"`
	Hi    float64 `json:"mu_hi"`
	Level float64 `json:"level"`
	// Sigma is the estimated spread of the scores, in units of the
	// declared noise (1 for a correct run).
	Sigma float64 `json:"score_std"`
}

// estimateMu fits the scores T_j = mu x_j + sigma e_j, x_j = +-w_j / 2
// (+ for an included canary) with standard normal e_j, by least squares,
// and returns mu-hat = beta-hat / sigma-hat: the separation of the in and
// out scores in units of their actual spread, which is the mechanism's mu
// whatever the noise scale really was. Its standard error is
// sqrt(1 / sum x^2 + mu^2 / (2 (m - 1))) (delta method: the slope's
// variance plus that of the estimated spread), and the interval is
// mu-hat -+ z se with Phi(z) = (1 + level) / 2. Where the scores lie
// exactly on the fitted line (sigma-hat = 0, as when the noise is below the
// rounding of the released models), mu-hat is +-Inf and the interval is
// the limit of its ends as sigma-hat -> 0: for mu-hat = +Inf, [+Inf, +Inf]
// if z < sqrt(2 (m - 1)), [-Inf, +Inf] if z > sqrt(2 (m - 1)) (the lower
// end 0 at equality), and mirrored for -Inf.
func estimateMu(scores []float64, in []bool, w []float64, level float64) (MuEstimate, error) {
	m := len(scores)
	if m < 3 {
		return MuEstimate{}, fmt.Errorf("audit: %d canaries, want at least 3", m)
	}
	// The sums, the slope and the residuals in double-word arithmetic:
	// scores that lie exactly on a line then have residuals of exactly 0
	// (in float64 the fit's own rounding left about an ulp of the scores
	// for some of their last bits, and mu-hat was about 1e16 instead of
	// +Inf, depending on those bits), and any spread left is the scores'
	// own, not the fit's.
	var sxx, sxxl, sxt, sxtl float64
	x := make([]float64, m)
	for j := range x {
		x[j] = w[j] / 2
		if !in[j] {
			x[j] = -x[j]
		}
		p, pl := ddfloat.TwoProd(x[j], x[j])
		sxx, sxxl = ddfloat.Add(sxx, sxxl, p, pl)
		p, pl = ddfloat.TwoProd(x[j], scores[j])
		sxt, sxtl = ddfloat.Add(sxt, sxtl, p, pl)
	}
	beta, betal := ddfloat.Div(sxt, sxtl, sxx, sxxl)
	rss := 0.0
	for j, t := range scores {
		ph, pl := ddfloat.MulFloat(beta, betal, x[j])
		e, el := ddfloat.Add(t, 0, -ph, -pl)
		e += el
		rss += e * e
	}
	sigma := math.Sqrt(rss / float64(m-1))
	mu := beta / sigma
	z, b := levelZ(level), 1/math.Sqrt(2*float64(m-1))
	se := math.Sqrt(1/sxx + mu*mu/(2*float64(m-1)))
	if math.IsInf(se, 1) && !math.IsInf(mu, 0) {
		// mu^2 overflows (|mu| > 1.3e154): the same se without it.
		se = math.Hypot(math.Sqrt(1/sxx), mu*b)
	}
	lo, hi := mu-z*se, mu+z*se
	if math.IsInf(mu, 0) {
		// sigma-hat = 0, beta-hat != 0: the scores lie exactly on the
		// fitted line (the in and out canaries separate with no spread).
		// mu -+ z se was Inf - Inf = NaN; its limit as sigma-hat -> 0
		// with beta-hat fixed is taken instead: mu -+ z se =
		// |mu| (sign(mu) -+ z sqrt(b^2 + 1 / (sxx mu^2))) with
		// b = 1 / sqrt(2 (m - 1)), whose bracket tends to sign(mu) -+ z b.
		lo, hi = infEnd(mu, -z*b), infEnd(mu, z*b)
	}
	return MuEstimate{Mu: mu, Lo: lo, Hi: hi, Level: level, Sigma: sigma}, nil
}

// infEnd returns the limit of an end of the mu-hat interval, mu + s z se
// = |mu| (sign(mu) + s z sqrt(b^2 + a^2 / mu^2)) (s = -1 for the lower
// end, +1 for the upper; a^2 = 1 / sum x^2), as |mu| grows without bound
// with its sign kept, given sb = s z b: the infinity of the sign of
// sign(mu) + sb, and 0 where that is 0 (the end is then
// sign(mu) (|mu| - sqrt(mu^2 + z^2 a^2)), which tends to 0).
func infEnd(mu, sb float64) float64 {
	c := math.Copysign(1, mu) + sb
	if c == 0 {
		return 0
	}
	return math.Copysign(math.Inf(1), c)
}

// epsOfMu returns the eps at delta of mu-GDP (the exact Gaussian curve), 0
// for mu <= 0.
func epsOfMu(mu, delta float64) float64 {
	if !(mu > 0) {
		return 0
	}
	e, err := accountant.Epsilon(1/mu, delta, 1, accountant.Exact)
	if err != nil {
		return math.Inf(1)
	}
	return e
}
