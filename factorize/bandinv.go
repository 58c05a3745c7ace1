package factorize

import (
	"context"
	"fmt"
	"math"

	"github.com/dpmf/dpmf/linalg"
	"gonum.org/v1/gonum/mat"
)

// This file implements three Toeplitz strategies with a banded factor:
//
//   - bisr, the banded inverse square root of Kalinin, McKenna, Upadhyay
//     and Lampert 2025 ("Back to Square Roots: An Optimal Bound on the
//     Matrix Factorization Error for Multi-Epoch Differentially Private
//     SGD", arXiv 2505.12128): C^{-1} is the lower-triangular banded
//     Toeplitz matrix of the first p coefficients of the inverse square
//     root of the workload's series (for prefix sums, of (1 - x)^{1/2}:
//     1, -1/2, -1/8, -1/16, -5/128, ...);
//   - bandinv, the same structure with the p coefficients of C^{-1}
//     optimised for the loss under the participation (BandInvMF of the
//     same paper), started from bisr;
//   - banded-toeplitz, C itself lower-triangular banded Toeplitz with b
//     coefficients and unit column norm, optimised for the loss (McKenna
//     2024, "Scaling up the Banded Matrix Factorization Mechanism for
//     Differentially Private ML", arXiv 2405.15913).
//
// In the first two C = T_u^{-1} is a full lower-triangular Toeplitz
// matrix and B = A T_u; C's columns are not normalised, so that C stays
// Toeplitz: its first column is the longest, gamma = ||c||, and when c is
// non-negative and non-increasing (always for bisr, see
// [BISRStrategy]) its sensitivity under b-min-separation is exact
// ([ToeplitzMinSepSensitivity]). The noise C^{-1} Z streams with a buffer
// of the last p-1 rows of Z (the banded-inverse operator).

// Strategy names of the banded-inverse and banded Toeplitz strategies.
const (
	StrategyBISR           = "bisr"
	StrategyBandInv        = "bandinv"
	StrategyBandedToeplitz = "banded-toeplitz"
)

func init() {
	bandsOfInverse := []Setting{{Name: "bands", Type: "int", Default: "16", Doc: "number p of coefficients of C^{-1}"}}
	// The three strategies' settings: a pointer to Bands and to LossOnly.
	type at func(p any) (*int, *bool)
	for _, e := range []struct {
		info StrategyInfo
		at   at
	}{
		{StrategyInfo{Name: StrategyBandedToeplitz, rank: 70, Doc: "a banded Toeplitz C optimised for the participation",
			Stream: "b - 1 (15 by default)", Settings: []Setting{bandsSetting("number of bands of C")}, proto: BandedToeplitzStrategy{}},
			func(p any) (*int, *bool) { s := p.(*BandedToeplitzStrategy); return &s.Bands, &s.LossOnly }},
		{StrategyInfo{Name: StrategyBISR, rank: 80, Doc: "the banded inverse square root: C^{-1} with p coefficients",
			Stream: "p - 1 (15 by default)", Settings: bandsOfInverse, proto: BISRStrategy{}},
			func(p any) (*int, *bool) { s := p.(*BISRStrategy); return &s.Bands, &s.LossOnly }},
		{StrategyInfo{Name: StrategyBandInv, rank: 90, Doc: "a banded Toeplitz C^{-1} with p coefficients optimised for the participation",
			Stream: "p - 1 (15 by default)", Settings: bandsOfInverse, proto: BandInvStrategy{}},
			func(p any) (*int, *bool) { s := p.(*BandInvStrategy); return &s.Bands, &s.LossOnly }},
	} {
		i, at := e.info, e.at
		i.lossOnly = []ParticipationKind{KindSingle, KindMinSep}
		i.Workloads, i.serves = servesToeplitz, func(_ Strategy, w *Workload, _ Participation) bool { return isToeplitz(w) }
		i.fields = []field{{ptr: func(p any) any { b, _ := at(p); return b }, lo: 1}}
		i.lossOnlyPtr = func(p any) *bool { _, l := at(p); return l }
		i.streamVectors = func(s Strategy, r int) int { b, _ := at(pointerTo(s)); return min(bandsOrDefault(*b), r) - 1 }
		register(i)
	}
}

// inverseSqrt returns the first p coefficients of the inverse square root
// of the workload's series, a(x)^{-1/2}.
func (tw toeplitzWorkload) inverseSqrt(p int) []float64 {
	if tw.prefix {
		return InverseSqrtCoefficients(p)
	}
	return linalg.SeriesInverse(tw.sqrt(p), p)
}

// padded returns u padded with zeros to length r.
func padded(u []float64, r int) []float64 {
	out := make([]float64, r)
	copy(out, u)
	return out
}

// bandInvFactorization returns C = T_u^{-1}, B = A T_u for the banded
// coefficients u, with single-participation metrics from the dense
// factors.
func bandInvFactorization(strategy string, w *Workload, tw toeplitzWorkload, u []float64) *Factorization {
	r := w.R()
	bm, cm := toeplitzPair(tw.times(padded(u, r)), linalg.SeriesInverse(u, r))
	return finish(strategy, bandInverseOp{u: u, r: r}, w, bm, cm)
}

// toeplitzPair returns the R x R lower-triangular Toeplitz matrices with
// first columns beta and c (R = len(beta); c is zero beyond its length).
func toeplitzPair(beta, c []float64) (bm, cm *mat.Dense) {
	r := len(beta)
	cm = mat.NewDense(r, r, nil)
	bm = mat.NewDense(r, r, nil)
	for i := 0; i < r; i++ {
		crow, brow := cm.RawRowView(i), bm.RawRowView(i)
		for j := 0; j <= i; j++ {
			if i-j < len(c) {
				crow[j] = c[i-j]
			}
			brow[j] = beta[i-j]
		}
	}
	return bm, cm
}

// toeplitzSens2 returns the squared sensitivity under p of the R x R
// lower-triangular Toeplitz C with first column c (len R), and whether it
// is exact: single (and epochs, here only as a stand-in objective)
// sum c_k^2; b-min-separation ||C 1_{0, b, ..., (k-1) b}||^2 when c is
// non-negative and non-increasing (Kalinin and Lampert 2024, Thm. 2, in
// O(R) by running sums), else +Inf.
func toeplitzSens2(c []float64, p Participation) float64 {
	r := len(c)
	if p.Kind != KindMinSep {
		return columnNormSq(c)
	}
	for i, v := range c {
		if !(v >= 0) || (i > 0 && v > c[i-1]) {
			return math.Inf(1)
		}
	}
	return separatedSq(c, min(p.B, r), p.Participations(r), make([]float64, r))
}

// separatedSq returns ||C u||^2 = sum_t v_t^2 for the lower-triangular
// Toeplitz C with first column m (R = len(m)) and u the indicator of the
// rounds 0, b, ..., (k-1) b: v_t = sum_{j < k, j b <= t} m_{t - j b}, by the
// running sums v_t = v_{t-b} + m_t - m_{t-kb} in O(R), written into v
// (len R).
func separatedSq(m []float64, b, k int, v []float64) float64 {
	s := 0.0
	for t, x := range m {
		if t >= b {
			x += v[t-b]
		}
		if t >= k*b {
			x -= m[t-k*b]
		}
		v[t] = x
		s += x * x
	}
	return s
}

// bandInvLoss returns sens^2 ||A T_u||_F^2 for C = T_u^{-1} under part.
func bandInvLoss(tw toeplitzWorkload, u []float64, part Participation) float64 {
	r := len(tw.a)
	c := linalg.SeriesInverse(u, r)
	return toeplitzSens2(c, part) * tw.frobB(padded(u, r))
}

// bandedToeplitzSens2 returns the squared sensitivity under part of the
// R x R banded Toeplitz C with coefficients c (b = len(c)), as in
// [BandedToeplitzStrategy]'s objective.
func bandedToeplitzSens2(c []float64, r int, part Participation) float64 {
	b := len(c)
	cum := make([]float64, b) // cum[m] = sum_{k <= m} c_k^2
	s := 0.0
	for k, v := range c {
		s += v * v
		cum[k] = s
	}
	if part.Kind != KindMinSep || part.B < b {
		return s
	}
	k := part.Participations(r)
	total := 0.0
	for i := 0; i < k; i++ {
		j := i * part.B // column j has norm^2 cum[min(b, R-j) - 1]
		total += cum[min(b, r-j)-1]
	}
	return total
}

// bandedToeplitzCoefficients returns the optimised coefficients, scaled to
// unit norm.
func bandedToeplitzCoefficients(ctx context.Context, tw toeplitzWorkload, bands int, part Participation) ([]float64, error) {
	r := len(tw.a)
	b := min(bandsOrDefault(bands), r)
	s := tw.sqrt(b)
	c := make([]float64, b) // the banded square root, c_0 = 1
	for k := range c {
		c[k] = s[k] / s[0]
	}
	if b > 1 {
		x, obj, err := minimizeTail(ctx, c, func(c []float64) float64 {
			return bandedToeplitzSens2(c, r, part) * tw.frobB(linalg.SeriesInverse(c, r))
		})
		if err != nil {
			return nil, err
		}
		if obj(x) < obj(c[1:]) {
			copy(c[1:], x)
		}
	}
	n := math.Sqrt(columnNormSq(c))
	for k := range c {
		c[k] /= n
	}
	return c, nil
}

// BISRStrategy is the banded inverse square root of a lower-triangular
// Toeplitz workload (Kalinin, McKenna, Upadhyay, Lampert 2025, arXiv
// 2505.12128): C^{-1} = T_u with u the first p = Bands coefficients (at
// most R) of the inverse square root of the workload's series (for prefix
// sums, [InverseSqrtCoefficients](p), the coefficients of (1 - x)^{1/2}),
// C = T_u^{-1} (full lower-triangular Toeplitz) and B = A T_u (for prefix
// sums, Toeplitz with the prefix sums of u). With p = R it is sqrt.
//
// For prefix sums u_0 = 1 and u_k < 0 for k >= 1 with log-convex
// magnitudes, so C's coefficients (the renewal sequence of -u) are
// positive and non-increasing (Kaluza's theorem), and the sensitivity
// under b-min-separation is exact (Kalinin and Lampert 2024, Thm. 2;
// [ToeplitzMinSepSensitivity]). The columns of C are deliberately not
// normalised: that would break the Toeplitz structure and leave only the
// dynamic-programming bound under min-separation.
type BISRStrategy struct {
	// Bands is the number p of coefficients of C^{-1}; 0 means
	// [DefaultBands].
	Bands int
	// LossOnly skips forming B and C (O(R^2) memory): the result has
	// only its metrics, computed in O(R p) from the coefficients (single participation and
	// min-separation only).
	LossOnly bool
}

// Name returns "bisr".
func (BISRStrategy) Name() string { return StrategyBISR }

// Spec returns "bisr:bands=P", or "bisr" for the default. LossOnly is not
// part of it (see [WithLossOnly]).
func (s BISRStrategy) Spec() string { return specOf(s) }

// Factorize returns the factorization with metrics under p.
func (s BISRStrategy) Factorize(ctx context.Context, w *Workload, p Participation) (f *Factorization, err error) {
	defer keyed(s, &f, &err)
	return bandInvFactorize(ctx, StrategyBISR, w, s.Bands, p, s.LossOnly, false)
}

// BandInvStrategy is the optimised banded inverse, BandInvMF (Kalinin et
// al. 2025, arXiv 2505.12128): C^{-1} = T_u banded Toeplitz with p = Bands
// coefficients (at most R), u_0 = 1 and u_1..u_{p-1} minimising the loss
// sens^2 ||A T_u||_F^2 of C = T_u^{-1} under the participation it is
// given, started from bisr's coefficients. The sensitivity in the
// objective is sum c_k^2 (single participation; also the objective under
// fixed epochs) or, under b-min-separation, the exact value of Kalinin and
// Lampert 2024, Thm. 2, for which C's coefficients are kept non-negative
// and non-increasing (points outside that set have infinite loss), so that
// the reported sensitivity is exact. The loss costs O(R p) per evaluation;
// the minimisation is L-BFGS with finite-difference gradients (a local
// method, not certified: under single participation and min-separation the
// result is never worse than bisr, TestBandInvImproves; under fixed epochs,
// where it minimises the single-participation objective, it can be: at
// R = 128 under 4 epochs, with 16 coefficients, RMSE 5.693 against bisr's
// 5.387, docs/participation.md).
type BandInvStrategy struct {
	// Bands is the number p of coefficients of C^{-1}; 0 means
	// [DefaultBands].
	Bands int
	// LossOnly skips forming B and C (O(R^2) memory): the result has
	// only its metrics, computed in O(R p) from the coefficients (single participation and
	// min-separation only).
	LossOnly bool
}

// Name returns "bandinv".
func (BandInvStrategy) Name() string { return StrategyBandInv }

// Spec returns "bandinv:bands=P", or "bandinv" for the default. LossOnly
// is not part of it (see [WithLossOnly]).
func (s BandInvStrategy) Spec() string { return specOf(s) }

// Factorize returns the factorization optimised for p, with metrics
// under p.
func (s BandInvStrategy) Factorize(ctx context.Context, w *Workload, p Participation) (f *Factorization, err error) {
	defer keyed(s, &f, &err)
	return bandInvFactorize(ctx, StrategyBandInv, w, s.Bands, p, s.LossOnly, true)
}

// bandInvFactorize returns bisr (optimise false) or bandinv with metrics
// under p: with its factors, or only its metrics when lossOnly.
func bandInvFactorize(ctx context.Context, strategy string, w *Workload, bands int, p Participation, lossOnly, optimise bool) (*Factorization, error) {
	if err := checkContext(ctx); err != nil {
		return nil, err
	}
	if lossOnly {
		return checkedLossOnly(bandInvLossOnly(ctx, strategy, w, bands, p, optimise))
	}
	return under(ctx, w, p, true, func() (*Factorization, error) {
		if err := checkBands(bands); err != nil {
			return nil, err
		}
		tw, err := toeplitzOf(strategy, w)
		if err != nil {
			return nil, err
		}
		u, err := bandInvU(ctx, tw, bands, p, optimise)
		if err != nil {
			return nil, err
		}
		return bandInvFactorization(strategy, w, tw, u), nil
	})
}

// bandInvU returns the p coefficients of C^{-1}: bisr's, or (optimise)
// bandinv's for part, optimised from bisr's and kept only where that
// lowers the loss.
func bandInvU(ctx context.Context, tw toeplitzWorkload, bands int, part Participation, optimise bool) ([]float64, error) {
	p := min(bandsOrDefault(bands), len(tw.a))
	u := tw.inverseSqrt(p)
	if !optimise || p == 1 {
		return u, nil
	}
	x, obj, err := minimizeTail(ctx, u, func(u []float64) float64 { return bandInvLoss(tw, u, part) })
	if err != nil {
		return nil, err
	}
	if obj(x) < obj(u[1:]) {
		copy(u[1:], x)
	}
	return u, nil
}

// checkBands returns a *ParamError for a negative number of bands.
func checkBands(bands int) error {
	if bands < 0 {
		return &ParamError{Param: "bands", Value: bands, Want: fmt.Sprintf(">= 1 (or 0 for the default %d)", DefaultBands)}
	}
	return nil
}

// BandedToeplitzStrategy is the optimised banded Toeplitz C with unit
// column norm of McKenna 2024 ("Scaling up the Banded Matrix
// Factorization Mechanism for Differentially Private ML", arXiv
// 2405.15913): C = T_c lower-triangular Toeplitz with b coefficients (at
// most R), scaled to ||c|| = 1 (unit norm of every column but the last
// b-1, which are shorter), and B = A T_c^{-1}. The coefficients minimise
// the loss sens^2 ||A T_c^{-1}||_F^2 under the participation it is given,
// from the banded square root (Kalinin and Lampert 2024): under
// b'-min-separation with b <= b' the squared sensitivity is the sum of the
// k' = min(k, ceil(R/b')) squared column norms at rounds 0, b', ...,
// (k'-1) b' (X = C^T C is banded within b' and its diagonal
// non-increasing; exact, [MinSepBanded]), otherwise ||c||^2 (single
// participation; the objective under epochs and under min-separation with
// more bands than the separation, where the reported sensitivity is the
// one [SensitivityOf] gives). O(R b) per evaluation, L-BFGS with
// finite-difference gradients (a local optimum). Its noise streams by
// forward substitution with the last b-1 rows (the banded operator).
type BandedToeplitzStrategy struct {
	// Bands is the number of bands of C; 0 means [DefaultBands], and
	// under b-min-separation min(DefaultBands, b).
	Bands int
	// LossOnly skips forming B and C (O(R^2) memory): the result has
	// only its metrics, computed in O(R b) from the coefficients.
	LossOnly bool
}

// Name returns "banded-toeplitz".
func (BandedToeplitzStrategy) Name() string { return StrategyBandedToeplitz }

// Spec returns "banded-toeplitz:bands=B", or "banded-toeplitz" for the
// default. LossOnly is not part of it (see [WithLossOnly]).
func (s BandedToeplitzStrategy) Spec() string { return specOf(s) }

// Factorize returns the factorization optimised for p, with metrics under
// p.
func (s BandedToeplitzStrategy) Factorize(ctx context.Context, w *Workload, p Participation) (f *Factorization, err error) {
	defer keyed(s, &f, &err)
	if err := checkContext(ctx); err != nil {
		return nil, err
	}
	if err := checkBands(s.Bands); err != nil {
		return nil, err
	}
	bands := bandsFor(s.Bands, p)
	if s.LossOnly {
		return checkedLossOnly(bandedToeplitzLossOnly(ctx, w, bands, p))
	}
	return under(ctx, w, p, true, func() (*Factorization, error) {
		tw, err := toeplitzOf(StrategyBandedToeplitz, w)
		if err != nil {
			return nil, err
		}
		c, err := bandedToeplitzCoefficients(ctx, tw, bands, p)
		if err != nil {
			return nil, err
		}
		r := w.R()
		bm, cm := toeplitzPair(tw.times(linalg.SeriesInverse(c, r)), c)
		return finish(StrategyBandedToeplitz, bandedToeplitzOp(c, r), w, bm, cm), nil
	})
}

// checkLossOnly checks the arguments of a loss-only banded Toeplitz
// strategy and returns w as a Toeplitz workload.
func checkLossOnly(strategy string, w *Workload, bands int, p Participation) (toeplitzWorkload, error) {
	// The participation first: the default bands come from its separation
	// (bandsFor), so a bad separation would otherwise be blamed on bands.
	if err := checkWorkload(w); err != nil {
		return toeplitzWorkload{}, err
	}
	if err := p.Validate(w.R()); err != nil {
		return toeplitzWorkload{}, err
	}
	if err := checkBands(bands); err != nil {
		return toeplitzWorkload{}, err
	}
	tw, err := toeplitzOf(strategy, w)
	if err != nil {
		return toeplitzWorkload{}, err
	}
	if p.Kind == KindEpochs && p.K > 1 {
		return toeplitzWorkload{}, &ParamError{Param: "participation", Value: p.String(), Want: "single or min-separation for a loss-only " + strategy}
	}
	return tw, nil
}

// lossOnlyResult returns a factorization without factors whose metrics
// are those of the Toeplitz B with first column beta and squared
// sensitivity sens2 under p (gamma2 the squared largest column norm of C):
// ||B||_F^2 = sum_m (R - m) beta_m^2, and the largest row norm is the last
// row's, sum_m beta_m^2.
func lossOnlyResult(strategy string, op Operator, w *Workload, p Participation, gamma2 float64, sens Sensitivity, beta []float64) *Factorization {
	r := w.R()
	frob, last := 0.0, 0.0
	for m, v := range beta {
		frob += float64(r-m) * v * v
		last += v * v
	}
	return squareResult(strategy, op, w, metricsFrom(r, math.Sqrt(gamma2), p, sens, frob, last))
}

// bandInvLossOnly returns the metrics-only result of bisr (optimise false)
// or bandinv under p, in O(R p) time and O(R) memory. Under
// min-separation the sensitivity is Thm. 2 of Kalinin and Lampert 2024,
// exact for C with non-negative non-increasing coefficients (bisr always;
// bandinv as optimised for p); otherwise it is an error.
func bandInvLossOnly(ctx context.Context, strategy string, w *Workload, bands int, p Participation, optimise bool) (*Factorization, error) {
	tw, err := checkLossOnly(strategy, w, bands, p)
	if err != nil {
		return nil, err
	}
	r := w.R()
	u, err := bandInvU(ctx, tw, bands, p, optimise)
	if err != nil {
		return nil, err
	}
	c := linalg.SeriesInverse(u, r)
	gamma2 := columnNormSq(c)
	sens := Sensitivity{Value: math.Sqrt(gamma2), Exact: true, Rule: RuleColumnNorm}
	if p.Kind == KindMinSep && p.Participations(r) > 1 {
		s2 := toeplitzSens2(c, p)
		if math.IsInf(s2, 1) {
			return nil, fmt.Errorf("factorize: loss-only %s under %v needs C with non-negative non-increasing coefficients", strategy, p)
		}
		sens = Sensitivity{Value: math.Sqrt(s2), Exact: true, Rule: RuleMinSepToeplitz}
	}
	return lossOnlyResult(strategy, bandInverseOp{u: u, r: r}, w, p, gamma2, sens, tw.times(padded(u, r))), nil
}

// bandedToeplitzLossOnly returns the metrics-only result of
// banded-toeplitz with b bands under p, in O(R b) time and O(R) memory.
// Under b'-min-separation it needs b <= b' (then X is banded within b' and
// the sensitivity exact); otherwise it is an error.
func bandedToeplitzLossOnly(ctx context.Context, w *Workload, b int, p Participation) (*Factorization, error) {
	tw, err := checkLossOnly(StrategyBandedToeplitz, w, b, p)
	if err != nil {
		return nil, err
	}
	r := w.R()
	minSep := p.Kind == KindMinSep && p.Participations(r) > 1
	if bands := min(b, r); minSep && p.B < bands {
		// Refused before the fit, which the sensitivity could not use.
		return nil, fmt.Errorf("factorize: loss-only %s under %v needs at most %d bands, not %d", StrategyBandedToeplitz, p, p.B, bands)
	}
	c, err := bandedToeplitzCoefficients(ctx, tw, b, p)
	if err != nil {
		return nil, err
	}
	gamma2 := columnNormSq(c)
	sens := Sensitivity{Value: math.Sqrt(gamma2), Exact: true, Rule: RuleColumnNorm}
	if minSep {
		sens = Sensitivity{Value: math.Sqrt(bandedToeplitzSens2(c, r, p)), Exact: true, Rule: RuleMinSepBanded}
	}
	return lossOnlyResult(StrategyBandedToeplitz, bandedToeplitzOp(c, r), w, p, gamma2, sens, tw.times(linalg.SeriesInverse(c, r))), nil
}
