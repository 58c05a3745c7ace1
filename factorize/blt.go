package factorize

import (
	"context"
	"fmt"
	"math"
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
	if n == 0 {
		return d
	}
	d[0] = 1
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
// The workload must be lower-triangular Toeplitz. The parameters (w,
// lambda) minimise the exact loss of the Toeplitz factorization C =
// T_d^{-1}, B = A T_d, that is ||c||^2 ||A T_d||_F^2 over the first column c
// of C: it costs O(R k) per evaluation for prefix sums, because c is the
// impulse response of the inverse of the k-state recurrence. The
// minimisation is BFGS by continuation in the number of buffers (see
// fitBLT), started from d_1 = w_1 near -1/2, the first coefficient of
// A^{-1/2} for prefix sums. It is a local method: the result is a good
// BLT, not a certified optimal one. Finally the columns of C are scaled to
// unit norm (C^{-1}'s rows are scaled by Scale, which keeps the streaming
// recurrence) unless that raises the loss. B = A C^{-1} and C are formed
// exactly (C from the inverse recurrence) and the metrics are those of these
// B and C, computed by [ComputeMetrics].
func BLT(ctx context.Context, w *Workload, buffers int) (*Factorization, error) {
	if err := checkContext(ctx); err != nil {
		return nil, err
	}
	if buffers < 0 {
		return nil, &ParamError{Param: "buffers", Value: buffers, Want: fmt.Sprintf(">= 1 (or 0 for the default %d)", DefaultBuffers)}
	}
	tw, err := toeplitzOf(StrategyBLT, w)
	if err != nil {
		return nil, err
	}
	r := w.R()
	p, err := fittedBLT(ctx, tw, buffers, columnNormSq)
	if err != nil {
		return nil, err
	}
	d := p.Coefficients(r)
	c := bltInverse(p, r)
	f, scale := toeplitzFactorization(StrategyBLT, w, tw, c, d)
	p.Scale = scale
	f.Operator = p
	return f, nil
}

// fitBLT sets p's weights and lambdas by continuation in the number of
// buffers: the fit with j buffers starts from the fit with j-1 buffers plus
// one buffer of weight 0, so the loss never increases with j. The new
// buffer's time scale 1/(1 - lambda) is tried at a few values spread
// log-uniformly over [1, R]; the best optimised candidate is kept.
func fitBLT(ctx context.Context, tw toeplitzWorkload, p *BLTParams) error {
	return fitBLTLoss(ctx, tw, p, columnNormSq)
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
// ([DefaultBuffers] if 0, at most R-1) fitted by [fitBLTLoss] with the
// squared sensitivity gamma2.
func fittedBLT(ctx context.Context, tw toeplitzWorkload, buffers int, gamma2 func(c []float64) float64) (*BLTParams, error) {
	k := buffers
	if k == 0 {
		k = DefaultBuffers
	}
	k = min(k, len(tw.a)-1)
	p := &BLTParams{Weights: make([]float64, k), Lambdas: make([]float64, k)}
	if k > 0 {
		if err := fitBLTLoss(ctx, tw, p, gamma2); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// fitBLTLoss is [fitBLT] for the loss gamma2(c) ||A T_d||_F^2, where
// gamma2 is the squared sensitivity of the Toeplitz C with first column c.
func fitBLTLoss(ctx context.Context, tw toeplitzWorkload, p *BLTParams, gamma2 func(c []float64) float64) error {
	r := len(tw.a)
	k := len(p.Weights)
	var best []float64 // x = (w_1..w_j, theta_1..theta_j), lambda = 1/(1+exp(-theta))
	bestLoss := math.Inf(1)
	for j := 1; j <= k; j++ {
		q := &BLTParams{Weights: make([]float64, j), Lambdas: make([]float64, j)}
		obj := func(x []float64) float64 {
			bltSet(q, x)
			l := gamma2(bltInverse(q, r)) * tw.frobB(q.Coefficients(r))
			if !(l > 0) || math.IsInf(l, 0) {
				return math.Inf(1)
			}
			return math.Log(l)
		}
		levelBest, levelLoss := []float64(nil), math.Inf(1)
		for _, frac := range []float64{0.25, 0.5, 0.75, 1} {
			tau := math.Max(math.Pow(float64(r), frac), 1.5)
			theta := math.Log(tau - 1) // lambda = 1 - 1/tau
			x0 := make([]float64, 2*j)
			copy(x0[:j-1], best[:j-1])
			copy(x0[j:2*j-1], best[j-1:])
			x0[2*j-1] = theta
			if j == 1 {
				// d_1 = w_1 near -1/2 as for (1 - x)^{1/2}, but with
				// d(x) = 1 + w x / (1 - lambda x) nonzero on the unit
				// disc (w > lambda - 1), so that C = T_d^{-1} is bounded.
				x0[0] = -0.5 / tau
			}
			if math.IsInf(obj(x0), 0) {
				continue
			}
			x, err := minimizeSmooth(ctx, obj, x0)
			if err != nil {
				return err
			}
			if l := obj(x); l < levelLoss {
				levelBest, levelLoss = x, l
			}
		}
		if levelBest == nil || levelLoss >= bestLoss {
			// No candidate improved: keep the smaller fit with a zero
			// weight for the new buffer.
			x := make([]float64, 2*j)
			copy(x[:j-1], best[:j-1])
			copy(x[j:2*j-1], best[j-1:])
			levelBest = x
		} else {
			bestLoss = levelLoss
		}
		best = levelBest
	}
	bltSet(p, best)
	return nil
}

// bltSet sets p's weights and lambdas from x = (w, theta), lambda_i =
// 1/(1+exp(-theta_i)).
func bltSet(p *BLTParams, x []float64) {
	k := len(p.Weights)
	copy(p.Weights, x[:k])
	for i := 0; i < k; i++ {
		p.Lambdas[i] = 1 / (1 + math.Exp(-x[k+i]))
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
		Stream:   "K (4 by default)",
		Settings: []Setting{{Name: "buffers", Type: "int", Default: strconv.Itoa(DefaultBuffers), Doc: "number K of buffers"}},
		proto:    BLTStrategy{},
		fields: []field{
			{ptr: func(p any) any { return &p.(*BLTStrategy).Buffers }, lo: 1, def: DefaultBuffers},
		},
		streamVectors: func(s Strategy, _ int) int {
			if k := s.(BLTStrategy).Buffers; k > 0 {
				return k
			}
			return DefaultBuffers
		},
	})
}

// BLTStrategy is a buffered-linear-Toeplitz factorization with Buffers
// buffers: fitted to the loss under b-min-separation for that
// participation ([BLTMinSep]), and to the single-participation loss
// otherwise ([BLT]).
type BLTStrategy struct {
	// Buffers is the number of buffers; 0 means [DefaultBuffers].
	Buffers int
}

// Name returns "blt".
func (BLTStrategy) Name() string { return StrategyBLT }

// Spec returns "blt:buffers=K", or "blt" for the default.
func (s BLTStrategy) Spec() string { return specOf(s) }

// Factorize returns, with metrics under p, [BLTMinSep](ctx, w, s.Buffers,
// p.B, p.K) for min-separation and [BLT](ctx, w, s.Buffers) otherwise.
func (s BLTStrategy) Factorize(ctx context.Context, w *Workload, p Participation) (*Factorization, error) {
	if p.Kind == KindMinSep {
		return under(ctx, w, p, func() (*Factorization, error) { return BLTMinSep(ctx, w, s.Buffers, p.B, p.K) })
	}
	return under(ctx, w, p, func() (*Factorization, error) { return BLT(ctx, w, s.Buffers) })
}
