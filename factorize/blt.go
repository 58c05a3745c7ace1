package factorize

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
)

// DefaultBuffers is the number of geometric buffers of [BLT] when
// buffers is 0. Streaming its noise keeps DefaultBuffers vectors.
const DefaultBuffers = 4

// BLTParams are the parameters of a buffered-linear-Toeplitz (BLT)
// factorization: C^{-1} = diag(Scale) T_d, with T_d the lower-triangular
// Toeplitz matrix of the coefficients
//
//	d_0 = 1,  d_k = sum_i Weights[i] Lambdas[i]^(k-1)  (k >= 1),
//
// so that round r's noise y_r = Scale[r] (z_r + sum_i Weights[i] s_i) can be
// streamed with one buffer s_i per geometric sequence, updated after the
// round as s_i <- Lambdas[i] s_i + z_r (Dvijotham, McMahan, Pillutla,
// Steinke, Thakurta 2024, "Efficient and near-optimal noise generation for
// streaming differential privacy").
type BLTParams struct {
	// Weights are the w_i.
	Weights []float64 `json:"weights"`
	// Lambdas are the decay rates lambda_i, in (0, 1).
	Lambdas []float64 `json:"lambdas"`
	// Scale[r] multiplies round r's noise: the column norms of the
	// Toeplitz C = T_d^{-1} when C's columns were normalised, else all 1.
	Scale []float64 `json:"scale"`
}

// Coefficients returns d_0, ..., d_{n-1}, the first column of T_d. It
// panics if n < 0 or if Lambdas is shorter than Weights (programmer
// errors; the operator of a [BLT] factorization is consistent).
func (p *BLTParams) Coefficients(n int) []float64 {
	checkCount("BLTParams.Coefficients", n)
	if len(p.Lambdas) < len(p.Weights) {
		panic(fmt.Sprintf("factorize: BLTParams with %d weights and %d lambdas", len(p.Weights), len(p.Lambdas)))
	}
	d := make([]float64, n)
	if n > 0 {
		d[0] = 1
	}
	for i, w := range p.Weights {
		pow := w
		for k := 1; k < n; k++ {
			d[k] += pow
			pow *= p.Lambdas[i]
		}
	}
	return d
}

// BLT returns a buffered-linear-Toeplitz factorization with k =
// buffers buffers ([DefaultBuffers] if 0, at most R-1): C^{-1} =
// diag(Scale) T_d with d as in [BLTParams]. Its noise streams with k
// buffers of dimension d; the parameters are its Operator, a *[BLTParams].
//
// The workload must be lower-triangular Toeplitz. For prefix sums the
// parameters (w, lambda) minimise the loss of the factorization returned,
// C = T_c N^{-1} with unit columns (c = T_d^{-1} e_0, N the column norms of
// T_c, as for sqrt-normalized) and B = A N T_d: ||A N T_d||_F^2, which with
// its gradient costs O(R k) per evaluation (see bltObjective.normPrefix).
// For other Toeplitz workloads they minimise the loss of the unscaled
// Toeplitz C = T_d^{-1}, ||c||^2 ||A T_d||_F^2 (finite-difference
// gradients). The minimisation is L-BFGS by continuation in the number of
// buffers (see fitBLTObjective): the fit with j buffers is kept only if it
// is better than the fit with j-1 and a zero-weight buffer, so the loss
// never increases with the number of buffers. It is a local method: the
// result is a good BLT, not a certified optimal one (for prefix sums, from
// 6 buffers on it is below sqrt-normalized at R = 10^3, 10^4 and 10^5). The
// columns of C are scaled to unit norm (C^{-1}'s rows are scaled by Scale,
// which keeps the streaming recurrence) unless that raises the loss. B = A
// C^{-1} and C are formed exactly (C from the inverse recurrence) and the
// metrics are those of these B and C, computed by [ComputeMetrics].
//
// Dense factors that cannot fit in the machine's memory (B and C of at
// least R x R float64 each, more than its physical memory and swap) are a
// *[ParamError] naming R, not an out-of-memory crash.
func BLT(ctx context.Context, w *Workload, buffers int) (*Factorization, error) {
	if err := checkContext(ctx); err != nil {
		return nil, err
	}
	if err := checkWorkload(w); err != nil {
		return nil, err
	}
	if err := checkDenseFits(w.R()); err != nil {
		return nil, err
	}
	tw, p, err := bltSingleFit(ctx, w, buffers)
	if err != nil {
		return nil, err
	}
	r := w.R()
	f, scale := toeplitzFactorization(StrategyBLT, w, tw, bltInverse(p, r), p.Coefficients(r))
	p.Scale = scale
	f.Operator = p
	return f, nil
}

// columnNormSq returns ||c||^2: the squared sensitivity under single
// participation of the Toeplitz C with first column c.
func columnNormSq(c []float64) float64 {
	g := 0.0
	for _, v := range c {
		g += v * v
	}
	return g
}

// fittedBLT returns BLT parameters with the given number of buffers
// ([DefaultBuffers] if 0, at most R-1) that minimise o, fitted by
// [fitBLTObjective].
func fittedBLT(ctx context.Context, o *bltObjective, buffers int) (*BLTParams, error) {
	k := bltBuffers(buffers, o.r())
	if k <= 0 {
		return &BLTParams{Weights: []float64{}, Lambdas: []float64{}}, nil
	}
	return fitBLTObjective(ctx, o, k)
}

// bltBuffers returns the number of buffers fitted for the setting buffers
// at R = r rounds: [DefaultBuffers] if 0, at most r-1.
func bltBuffers(buffers, r int) int {
	return min(cmp.Or(buffers, DefaultBuffers), r-1)
}

// bltPadded returns the parameters of x = (v, theta) (see bltSet) with
// zero-weight buffers appended up to k buffers: the same factorization,
// streamed with k buffers as the setting asks.
func bltPadded(x []float64, k int) *BLTParams {
	p := bltParamsOf(x)
	for len(p.Weights) < k {
		p.Weights = append(p.Weights, 0)
		p.Lambdas = append(p.Lambdas, 0.5)
	}
	return p
}

// bltUnder returns BLT's factorization for the participation part (epochs
// or any other than single participation and min-separation), with the
// metrics under part: the lowest loss under part among BLT's own fit
// ([BLT]) and the fit of the unscaled Toeplitz loss that BLT used before
// its unit-column objective (see fitBLTPlainLevels), each with unit
// columns and unscaled. Those fits minimise single-participation losses;
// under epochs the best of them is kept, not one fitted to that loss.
func bltUnder(ctx context.Context, w *Workload, buffers int, part Participation) (*Factorization, error) {
	f, err := BLT(ctx, w, buffers)
	if err != nil {
		return nil, err
	}
	if f, err = f.checkedUnder(part); err != nil {
		return nil, err
	}
	r := w.R()
	k := bltBuffers(buffers, r)
	if k <= 0 {
		return f, nil
	}
	tw, err := toeplitzOf(StrategyBLT, w)
	if err != nil {
		return nil, err
	}
	plain, err := fitBLTPlainLevels(ctx, tw, k, columnNormSq)
	if err != nil {
		return nil, err
	}
	unit := ones(r)
	for _, p := range []*BLTParams{f.Operator.(*BLTParams), bltPadded(plain[k-1], k)} {
		c, d := bltInverse(p, r), p.Coefficients(r)
		for _, scale := range [][]float64{columnNorms(c), unit} {
			if slices.Equal(scale, p.Scale) {
				continue // BLT's own, f
			}
			g := toeplitzScaled(StrategyBLT, w, tw, c, d, scale)
			g.Operator = &BLTParams{Weights: p.Weights, Lambdas: p.Lambdas, Scale: scale}
			if !FiniteMetrics(g.Metrics) {
				continue // overflowed: not a candidate
			}
			if g, err = g.WithParticipation(part); err != nil {
				return nil, err
			}
			if g.Metrics.Loss < f.Metrics.Loss {
				f = g
			}
		}
	}
	return f, nil
}

// columnNorms returns the column norms of the R x R lower-triangular
// Toeplitz matrix with first column c: column j has norm ||c_{0..R-1-j}||.
func columnNorms(c []float64) []float64 {
	r := len(c)
	norm := make([]float64, r)
	s := 0.0
	for t := 0; t < r; t++ {
		s += c[t] * c[t]
		norm[r-1-t] = math.Sqrt(s)
	}
	return norm
}

// bltSet sets p's weights and lambdas from x = (v, theta): lambda_i =
// 1/(1+exp(-theta_i)) (theta_i = log(tau_i - 1) for the time scale tau_i =
// 1/(1 - lambda_i)) and w_i = v_i (1 - lambda_i), so that v_i = sum_{s >= 1}
// w_i lambda_i^(s-1) is buffer i's contribution to d(1) = sum_s d_s. This
// scaling keeps the v_i of buffers with time scales from 1 to R of one
// order (about -1/k each for the square root, whose d(1) is 0).
func bltSet(p *BLTParams, x []float64) {
	k := len(p.Weights)
	for i := 0; i < k; i++ {
		p.Lambdas[i] = 1 / (1 + math.Exp(-x[k+i]))
		p.Weights[i] = x[i] / (1 + math.Exp(x[k+i]))
	}
}

// bltInverse returns the first n coefficients of C = T_d^{-1}: the impulse
// response of the inverse of the streaming recurrence of [BLTParams]. With
// input y = e_0, z_r = y_r - sum_i w_i s_i and then s_i <- lambda_i s_i + z_r;
// c_r = z_r. O(n k), and it works on the k states directly rather than on
// polynomial coefficients, which lose all accuracy to cancellation when
// several lambdas are close to 1.
func bltInverse(p *BLTParams, n int) []float64 {
	s := make([]float64, len(p.Weights))
	c := make([]float64, n)
	for r := 0; r < n; r++ {
		z := 0.0
		if r == 0 {
			z = 1
		}
		for i, w := range p.Weights {
			z -= w * s[i]
		}
		for i, l := range p.Lambdas {
			s[i] = l*s[i] + z
		}
		c[r] = z
	}
	return c
}

// StrategyBLT is the name of [BLTStrategy].
const StrategyBLT = "blt"

func init() {
	register(StrategyInfo{
		Name: StrategyBLT, rank: 100, Doc: "buffered linear Toeplitz: C^{-1} streamed with K buffers",
		Stream:      "K (4 by default)",
		Workloads:   servesToeplitz,
		serves:      func(_ Strategy, w *Workload, _ Participation) bool { return isToeplitz(w) },
		Settings:    []Setting{{Name: "buffers", Type: "int", Default: strconv.Itoa(DefaultBuffers), Doc: fmt.Sprintf("number K of buffers (at most %d)", MaxBLTBuffers)}},
		proto:       BLTStrategy{},
		lossOnly:    []ParticipationKind{KindSingle, KindMinSep},
		lossOnlyPtr: func(p any) *bool { return &p.(*BLTStrategy).LossOnly },
		fields: []field{
			{ptr: func(p any) any { return &p.(*BLTStrategy).Buffers }, lo: 1, hi: MaxBLTBuffers, def: DefaultBuffers},
		},
		// A count <= 0 reads as the default.
		streamVectors: func(s Strategy, _ int) int { return cmp.Or(max(s.(BLTStrategy).Buffers, 0), DefaultBuffers) },
	})
}

// BLTStrategy is a buffered-linear-Toeplitz factorization with Buffers
// buffers: fitted to the loss under b-min-separation for that
// participation ([BLTMinSep]), to the single-participation loss for single
// participation ([BLT]), and otherwise (epochs) the best under the
// participation of BLT's fit and the unscaled fit, each with unit columns
// and unscaled (see bltUnder).
//
// With LossOnly (single participation and min-separation), the fit is the
// same and its metrics come from the coefficients without B and C: O(R)
// for the plain Toeplitz C, O(R K) time and O(R) memory for unit columns
// (prefix sums only; see [scaledToeplitz]); under min-separation the
// candidates of [BLTMinSep] are compared by the same reported loss, whose
// dynamic-programming bound (for a C with coefficients of both signs or
// increasing somewhere) comes from X's rows one at a time (O(R^2) time,
// O(R) memory) rather than from X formed densely.
type BLTStrategy struct {
	// Buffers is the number of buffers; 0 means [DefaultBuffers].
	Buffers int
	// LossOnly skips forming B and C: the result has only its metrics
	// (single participation and min-separation).
	LossOnly bool
}

// Name returns "blt".
func (BLTStrategy) Name() string { return StrategyBLT }

// Spec returns "blt:buffers=K", or "blt" for the default.
func (s BLTStrategy) Spec() string { return specOf(s) }

// Factorize returns, with metrics under p, [BLTMinSep](ctx, w, s.Buffers,
// p.B, p.K) for min-separation, [BLT](ctx, w, s.Buffers) for single
// participation, and the best of the candidates of bltUnder otherwise.
func (s BLTStrategy) Factorize(ctx context.Context, w *Workload, p Participation) (f *Factorization, err error) {
	defer keyed(s, &f, &err)
	if s.LossOnly {
		return checkedLossOnly(bltLossOnly(ctx, w, s.Buffers, p))
	}
	if p.Kind == KindMinSep {
		return under(ctx, w, p, true, func() (*Factorization, error) { return BLTMinSep(ctx, w, s.Buffers, p.B, p.K) })
	}
	if p.Kind == KindSingle {
		return under(ctx, w, p, true, func() (*Factorization, error) { return BLT(ctx, w, s.Buffers) })
	}
	return under(ctx, w, p, true, func() (*Factorization, error) { return bltUnder(ctx, w, s.Buffers, p) })
}

// bltLossOnly returns the metrics-only result of [BLT] under single
// participation p, or of [BLTMinSep] under min-separation.
func bltLossOnly(ctx context.Context, w *Workload, buffers int, p Participation) (*Factorization, error) {
	if err := checkArgs(ctx, w, p); err != nil {
		return nil, err
	}
	if err := checkBuffers(buffers); err != nil {
		return nil, err
	}
	if p.Kind == KindMinSep {
		return bltMinSepLossOnly(ctx, w, buffers, p)
	}
	if p.Kind != KindSingle {
		return nil, &ParamError{Param: "participation", Value: p.String(), Want: "single or min-separation for a loss-only " + StrategyBLT}
	}
	tw, params, err := bltSingleFit(ctx, w, buffers)
	if err != nil {
		return nil, err
	}
	r := w.R()
	m, scale, err := toeplitzLossOnly(tw, bltInverse(params, r), params.Coefficients(r), params, p)
	if err != nil {
		return nil, err
	}
	params.Scale = scale
	return squareResult(StrategyBLT, params, w, m), nil
}

// bltMinSepLossOnly returns the metrics-only result of [BLTMinSep](ctx, w,
// buffers, p.B, p.K): the same fits and the same choice among them, by
// the loss that [SensitivityOf] reports for each candidate's C, here from
// [scaledToeplitz] (the Toeplitz rule, or the bound over X's rows, skipped
// where a lower bound shows it is not below the best so far).
func bltMinSepLossOnly(ctx context.Context, w *Workload, buffers int, part Participation) (*Factorization, error) {
	tw, err := toeplitzOf(StrategyBLT, w)
	if err != nil {
		return nil, err
	}
	r := w.R()
	b, kk := part.B, part.Participations(r)
	unit := ones(r)
	// reported returns the reported loss of p, or +Inf where it is
	// certainly not below above (as bltMinSepReported).
	reported := func(p *BLTParams, above float64) (float64, error) {
		st := &scaledToeplitz{tw: tw, c: bltInverse(p, r), u: p.Coefficients(r), scale: unit}
		if _, err := ToeplitzMinSepSensitivity(st.c, b, kk); err != nil {
			// A lower bound on the reported loss (exact or an upper
			// bound, so never below it): the pattern {0, b, ...,
			// (k'-1) b} gives sens^2 >= ||C u||^2 (u its indicator),
			// times ||A T_d||_F^2; O(R).
			if _, sq := minSepPattern(st.c, b, kk); !(sq*tw.frobB(st.u) < above) {
				return math.Inf(1), nil
			}
		}
		m, err := st.metrics(part)
		// sens^2 ||A T_d||_F^2 summed as bltMinSepReported sums it, so
		// that near ties between the fits break as there.
		l := m.UnitSensitivity.Value * m.UnitSensitivity.Value * tw.frobB(st.u)
		if err != nil || math.IsNaN(l) {
			return math.Inf(1), err
		}
		return l, nil
	}
	p, err := bltMinSepChoose(ctx, tw, r, buffers, b, kk, reported)
	if err != nil {
		return nil, err
	}
	st := &scaledToeplitz{tw: tw, c: bltInverse(p, r), u: p.Coefficients(r), scale: unit}
	m, err := st.metrics(part)
	if err != nil {
		return nil, err
	}
	p.Scale = unit
	return squareResult(StrategyBLT, p, w, m), nil
}

// MaxBLTBuffers is the largest number of BLT buffers: the fit runs by
// continuation through every count up to it, so its cost grows quickly
// with the count (64 buffers at R = 300 take about 2 s, 300 over 30 s),
// while 6 to 8 already reach the square root's loss (docs/scaling.md).
const MaxBLTBuffers = 64

// checkBuffers refuses a number of BLT buffers outside [0, MaxBLTBuffers]
// (0 is the default).
func checkBuffers(buffers int) error {
	if buffers < 0 || buffers > MaxBLTBuffers {
		return &ParamError{Param: "buffers", Value: buffers, Want: fmt.Sprintf("between 1 and %d (or 0 for the default %d)", MaxBLTBuffers, DefaultBuffers)}
	}
	return nil
}

// bltSingleFit checks buffers and w (a Toeplitz workload) and returns w's
// Toeplitz form with the BLT fitted to the single-participation loss: what
// [BLT] and its loss-only path share.
func bltSingleFit(ctx context.Context, w *Workload, buffers int) (toeplitzWorkload, *BLTParams, error) {
	if err := checkBuffers(buffers); err != nil {
		return toeplitzWorkload{}, nil, err
	}
	tw, err := toeplitzOf(StrategyBLT, w)
	if err != nil {
		return toeplitzWorkload{}, nil, err
	}
	p, err := fittedBLT(ctx, &bltObjective{tw: tw}, buffers)
	return tw, p, err
}
