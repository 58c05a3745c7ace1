package factorize

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// Factorization is a factorization A = B C of a workload, with the metrics
// that every strategy reports.
//
// C is m x R and B is R x m: m = R for square strategies, m > R for the
// tree. B and C are nil for a loss-only result of [Optimal] (see
// [Options.LossOnly]); the metrics are then still exact.
type Factorization struct {
	// Strategy names the strategy that produced the factorization (for
	// display; code that needs the structure reads Stream).
	Strategy string
	// Stream is the structure mechanism.New streams the noise with.
	Stream Stream
	// Workload is the factorized workload A.
	Workload *Workload
	// B is the R x m decoder; nil for loss-only results.
	B *mat.Dense
	// C is the m x R encoder; nil for loss-only results.
	C *mat.Dense
	// Available[j] is the first round (0-based) whose release uses row j of
	// the noise, that is, the round by which noise row j must be drawn.
	// For square causal factors Available[j] = j. Nil for loss-only results.
	Available []int
	// Metrics holds gamma, the sensitivity, loss, RMSE and MaxSE under a
	// participation (single unless the strategy was given another, or
	// [Factorization.WithParticipation] was used).
	Metrics Metrics
	// Iterations is the number of fixed-point iterations (0 for closed forms).
	Iterations int
	// Evaluations is the number of matrix square roots the solver took:
	// one per iteration, plus, on the dense path, one per iteration whose
	// rounding error had to be bounded to certify the gap, and one for the
	// product M^{-1/2} of its second-order bound on those iterations (about
	// a third of a square root's cost).
	Evaluations int
	// Gap is the certified relative duality gap (0 for closed forms).
	Gap float64
	// BLT holds the streaming parameters of a BLT factorization (nil for
	// other strategies).
	BLT *BLTParams
	// Semisep holds the causal factor of a [Semiseparable] factorization
	// in quasiseparable form (nil for other strategies, and for cached
	// entries, which keep B and C only).
	Semisep *SemisepParams
}

// Metrics are the quality measures shared by every strategy, under the
// participation they were computed for, with noise of unit standard
// deviation per unit sensitivity of C.
type Metrics struct {
	// Gamma is the largest column norm of C: its sensitivity under single
	// participation.
	Gamma float64
	// Participation is the pattern the sensitivity, loss, RMSE and MaxSE
	// are computed under.
	Participation Participation
	// UnitSensitivity is the sensitivity of C G under Participation when
	// each row of G a sample takes part in changes by norm at most 1 (see
	// [Sensitivity]); it equals Gamma for single participation. A
	// release's L2 sensitivity is this times the bound on one row's change
	// (accountant.ReleaseSensitivity).
	UnitSensitivity Sensitivity
	// FrobBSq is ||B||_F^2 and MaxRowBSq is max_r ||B[r, :]||^2.
	FrobBSq, MaxRowBSq float64
	// Loss is sens^2 ||B||_F^2 (sens = UnitSensitivity.Value): the total
	// squared error over all rounds when the noise is calibrated to the
	// sensitivity.
	Loss float64
	// RMSE is sqrt(Loss / R).
	RMSE float64
	// MaxSE is sens^2 max_r ||B[r, :]||^2, the worst round's squared error.
	MaxSE float64
}

// ComputeMetrics returns the metrics of the factors b (R x m) and c (m x R)
// under participation p. A nil factor, factors whose shapes do not fit, a
// NaN or infinite entry ("B[i][j]", "C[i][j]") and a participation invalid
// for R rounds are errors (a *[ParamError] for the factors).
func ComputeMetrics(b, c mat.Matrix, p Participation) (Metrics, error) {
	if isNilMatrix(b) {
		return Metrics{}, &ParamError{Param: "B", Want: "an R x m matrix"}
	}
	if isNilMatrix(c) {
		return Metrics{}, &ParamError{Param: "C", Want: "an m x R matrix"}
	}
	r, m := b.Dims()
	m2, r2 := c.Dims()
	if m != m2 || r != r2 || r == 0 || m == 0 {
		return Metrics{}, &ParamError{Param: "C", Value: fmt.Sprintf("%d x %d", m2, r2), Want: fmt.Sprintf("%d x %d for B of %d x %d", m, r, r, m)}
	}
	if _, err := checkFinite("B", b); err != nil {
		return Metrics{}, err
	}
	sens, err := SensitivityOf(c, p)
	if err != nil {
		return Metrics{}, err
	}
	frob, maxRow := 0.0, 0.0
	for i := 0; i < r; i++ {
		s := 0.0
		for j := 0; j < m; j++ {
			v := b.At(i, j)
			s += v * v
		}
		frob += s
		maxRow = math.Max(maxRow, s)
	}
	g := Gamma(c)
	if p.Kind == KindSingle {
		g = sens.Value
	}
	return metricsFrom(r, g, p, sens, frob, maxRow), nil
}

// metricsFrom assembles Metrics from gamma, the sensitivity under p and the
// squared norms of B.
func metricsFrom(r int, gamma float64, p Participation, sens Sensitivity, frobB, maxRowB float64) Metrics {
	s2 := sens.Value * sens.Value
	loss := s2 * frobB
	return Metrics{
		Gamma:           gamma,
		Participation:   p,
		UnitSensitivity: sens,
		FrobBSq:         frobB,
		MaxRowBSq:       maxRowB,
		Loss:            loss,
		RMSE:            math.Sqrt(loss / float64(r)),
		MaxSE:           s2 * maxRowB,
	}
}

// singleMetrics returns the metrics under single participation of factors
// with largest column norm gamma.
func singleMetrics(r int, gamma, frobB, maxRowB float64) Metrics {
	return metricsFrom(r, gamma, SingleParticipation(), Sensitivity{Value: gamma, Exact: true, Rule: RuleColumnNorm}, frobB, maxRowB)
}

// WithParticipation returns a copy of f (sharing its factors) whose metrics
// are computed under p. It is an error if p is invalid for f's rounds, or
// if f is a loss-only result and p is not single participation (the
// sensitivity needs C).
func (f *Factorization) WithParticipation(p Participation) (*Factorization, error) {
	if f == nil || f.Workload == nil {
		return nil, &ParamError{Param: "factorization", Want: "a factorization computed by this package"}
	}
	g := *f
	if p == f.Metrics.Participation {
		return &g, nil
	}
	if f.C == nil {
		if p.Kind != KindSingle {
			return nil, fmt.Errorf("factorize: %s is a loss-only result: its sensitivity under %v needs C", f.Strategy, p)
		}
		if err := p.Validate(f.Workload.R()); err != nil {
			return nil, err
		}
		m := f.Metrics
		g.Metrics = singleMetrics(f.Workload.R(), m.Gamma, m.FrobBSq, m.MaxRowBSq)
		return &g, nil
	}
	m, err := ComputeMetrics(f.B, f.C, p)
	if err != nil {
		return nil, err
	}
	g.Metrics = m
	return &g, nil
}

// Residual returns max |A - B C| over all entries, a check that the
// factorization reproduces its workload. It panics for loss-only results.
func (f *Factorization) Residual() float64 {
	if f.B == nil || f.C == nil {
		panic("factorize: Residual of a loss-only factorization")
	}
	var bc mat.Dense
	bc.Mul(f.B, f.C)
	a := f.Workload.Matrix()
	r := f.Workload.R()
	worst := 0.0
	for i := 0; i < r; i++ {
		for j := 0; j < r; j++ {
			worst = math.Max(worst, math.Abs(bc.At(i, j)-a.At(i, j)))
		}
	}
	return worst
}

// CheckCausal returns an error if the factorization cannot be used online:
// if a release at round r would use noise row j with Available[j] > r (a
// nonzero B[r][j]), or if noise row j would depend on data of a round after
// Available[j] (a nonzero C[j][t] with t > Available[j]). A nil
// factorization or one without factors (a loss-only result) is a
// *[ParamError].
func (f *Factorization) CheckCausal() error {
	if f == nil {
		return &ParamError{Param: "factorization", Want: "a factorization computed by this package"}
	}
	if f.B == nil || f.C == nil {
		return &ParamError{Param: "factorization", Value: "a loss-only result", Want: "one with factors B and C"}
	}
	r, m := f.B.Dims()
	if len(f.Available) != m {
		return fmt.Errorf("factorize: %d availability rounds for %d noise rows", len(f.Available), m)
	}
	for j := 0; j < m; j++ {
		av := f.Available[j]
		for i := 0; i < av && i < r; i++ {
			if f.B.At(i, j) != 0 {
				return fmt.Errorf("factorize: B[%d][%d] = %v uses noise row %d before round %d", i, j, f.B.At(i, j), j, av)
			}
		}
		for t := av + 1; t < r; t++ {
			if f.C.At(j, t) != 0 {
				return fmt.Errorf("factorize: C[%d][%d] = %v: noise row %d, used from round %d, depends on round %d", j, t, f.C.At(j, t), j, av, t)
			}
		}
	}
	return nil
}

// squareAvailable returns 0, 1, ..., r-1.
func squareAvailable(r int) []int {
	av := make([]int, r)
	for i := range av {
		av[i] = i
	}
	return av
}

// finish fills in single-participation metrics and availability of
// square factors.
func finish(strategy string, stream Stream, w *Workload, b, c *mat.Dense) *Factorization {
	return &Factorization{
		Strategy:  strategy,
		Stream:    stream,
		Workload:  w,
		B:         b,
		C:         c,
		Available: squareAvailable(w.R()),
		Metrics:   mustMetrics(b, c),
	}
}

// mustMetrics returns the single-participation metrics of b and c.
func mustMetrics(b, c mat.Matrix) Metrics {
	m, err := ComputeMetrics(b, c, SingleParticipation())
	if err != nil {
		panic(err) // single participation is valid for any number of rounds
	}
	return m
}

// Stream describes the structure of a factorization that lets its noise be
// streamed with little state; mechanism.New chooses its implementation from
// it, not from the strategy's name.
type Stream int

const (
	// StreamDense: no structure beyond causality; the noise operator
	// M = A^{-1} B is formed densely.
	StreamDense Stream = iota
	// StreamIndependent: C is the identity (independent noise).
	StreamIndependent
	// StreamTree: C's rows are the dyadic nodes of binary-tree aggregation
	// and B is the simple estimator ([Tree]).
	StreamTree
	// StreamBanded: C is square, lower triangular and banded (a few
	// nonzero diagonals).
	StreamBanded
	// StreamToeplitz: C = T diag(s) with T lower-triangular Toeplitz.
	StreamToeplitz
	// StreamBLT: C^{-1} is given by the buffered-linear-Toeplitz
	// parameters in [Factorization.BLT].
	StreamBLT
	// StreamSemisep: C is lower-triangular quasiseparable of order K,
	// given by [Factorization.Semisep]; C^{-1} Z is streamed by forward
	// substitution with K state vectors ([Semiseparable]).
	StreamSemisep
	// StreamBandedInverse: C is square lower-triangular Toeplitz and
	// C^{-1} is banded Toeplitz with p coefficients ([InverseBandOf]), so
	// C^{-1} Z streams with a buffer of the last p-1 rows of Z
	// ([BandedInverseSqrt], [BandedInverseOptimized]).
	StreamBandedInverse
)

var streamNames = [...]string{"dense", "independent", "tree", "banded", "toeplitz", "blt", "semiseparable", "banded-inverse"}

// String returns "dense", "independent", "tree", "banded", "toeplitz",
// "blt", "semiseparable" or "banded-inverse".
func (s Stream) String() string {
	if s >= 0 && int(s) < len(streamNames) {
		return streamNames[s]
	}
	return fmt.Sprintf("Stream(%d)", int(s))
}

// parseStream is the inverse of String.
func parseStream(name string) (Stream, bool) {
	for i, n := range streamNames {
		if n == name {
			return Stream(i), true
		}
	}
	return 0, false
}

// Bands returns the number of bands b of a square C whose entries above
// the diagonal are zero (C[i][j] = 0 for i - j >= b, b >= 1), and false if
// C is not square or has a nonzero entry above the diagonal.
func Bands(c mat.Matrix) (int, bool) {
	if isNilMatrix(c) {
		return 0, false
	}
	m, n := c.Dims()
	if m != n {
		return 0, false
	}
	b := 1
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			if c.At(i, j) != 0 {
				return 0, false
			}
		}
		for j := 0; j < i; j++ {
			if c.At(i, j) != 0 {
				b = max(b, i-j+1)
				break
			}
		}
	}
	return b, true
}
