package factorize

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"gonum.org/v1/gonum/mat"
)

// Record is the stored form of a [Factorization] (the cache's entries, see
// package cache): everything but the workload, with the operator as its
// structured form ([OperatorForm]), so that a factorization read back
// streams exactly as the one stored. [Record.Restore] rebuilds the
// factorization and checks what matters for privacy.
//
// It is not a privacy record: a run's guarantee is a plan.Record (a
// plan's Privacy, from plan.Plan.Calibrate), the record a user normally
// wants, and accountant.Record is the per-round entry logged from it.
type Record struct {
	// Strategy is [Factorization.Strategy].
	Strategy string
	// Metrics, Iterations, Evaluations and Gap are the factorization's.
	Metrics                 Metrics
	Iterations, Evaluations int
	Gap                     float64
	// B, C and Available are the dense factors, when the factorization
	// holds them; nil otherwise.
	B, C      *mat.Dense
	Available []int
	// Operator is the operator's structured form; nil for the dense
	// operator (rebuilt from B) and for metrics-only results.
	Operator *OperatorForm
	// SemisepBounds are a [SemisepStrategy] factorization's certified
	// optimal lower bound and excess; nil for other strategies.
	SemisepBounds *[2]float64
	// StrategyKey is [Factorization.StrategyKey].
	StrategyKey string
}

// Record returns f's stored form. It panics if f has only one of B and C.
// A nil f gives the zero Record, which [Record.Restore] refuses.
func (f *Factorization) Record() Record {
	if f == nil {
		return Record{}
	}
	if (f.B == nil) != (f.C == nil) {
		panic("factorize: factorization with only one of B and C")
	}
	rec := Record{Strategy: f.Strategy, Metrics: f.Metrics, Iterations: f.Iterations, Evaluations: f.Evaluations, Gap: f.Gap, B: f.B, C: f.C, StrategyKey: f.key}
	if f.B != nil {
		rec.Available = f.Available
	}
	if form, ok := FormOf(f.Operator); ok {
		rec.Operator = &form
	}
	if f.Semisep != nil {
		rec.SemisepBounds = &[2]float64{f.Semisep.OptimalLower, f.Semisep.Excess}
	}
	return rec
}

// Restore rebuilds the factorization of w that rec stores, and checks it
// (see [Factorization.Record]): with factors, the metrics must be those of
// B and C under the participation recorded in the metrics (to a relative
// 1e-12), the availability rounds must lie in [0, R) and match the
// factors' causal structure, B C must reproduce the workload (on a
// vector drawn at random for each check, relative error at most 1e-6) and
// a structured operator must stream C^{-1} (M C x against x, the same
// bound). Without factors, a quasiseparable operator's metrics must be
// those computed from its generators (under single participation or
// min-separation); a metrics-only result's metrics must be finite, with
// gamma > 0 and a sensitivity of at least gamma, and consistent (loss = sens^2 ||B||_F^2, RMSE = sqrt(loss/R), MaxSE <= loss,
// the optimal strategy's sensitivity 1), with the gamma of the C its
// structured operator streams if it has one (and under min-separation a
// sensitivity no lower than that C's); its loss itself is trusted. The
// error says why rec cannot be used, without a package prefix.
func (rec Record) Restore(w *Workload) (*Factorization, error) {
	if err := checkWorkload(w); err != nil {
		return nil, err
	}
	r := w.R()
	if (rec.B == nil) != (rec.C == nil) {
		return nil, fmt.Errorf("only one of the factors B and C")
	}
	if rec.B != nil {
		rb, m := rec.B.Dims()
		if mc, rc := rec.C.Dims(); rb != r || rc != r || mc != m {
			return nil, fmt.Errorf("factors of %d x %d and %d x %d for R = %d", rb, m, mc, rc, r)
		}
		if len(rec.Available) != m {
			return nil, fmt.Errorf("%d availability rounds for %d noise rows", len(rec.Available), m)
		}
	} else if rec.Available != nil {
		return nil, fmt.Errorf("availability rounds without factors")
	}
	if (rec.SemisepBounds != nil) != (rec.Strategy == StrategySemisep) {
		return nil, fmt.Errorf("semiseparable bounds in a %s record", rec.Strategy)
	}
	f := &Factorization{
		Strategy:    rec.Strategy,
		Workload:    w,
		B:           rec.B,
		C:           rec.C,
		Available:   rec.Available,
		Metrics:     rec.Metrics,
		Iterations:  rec.Iterations,
		Evaluations: rec.Evaluations,
		Gap:         rec.Gap,
		key:         rec.StrategyKey,
	}
	switch {
	case rec.Operator != nil:
		op, err := rec.Operator.Operator(r)
		if err != nil {
			return nil, fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "factorize: "))
		}
		f.Operator = op
		if f.Available == nil {
			f.Available = squareAvailable(r)
		}
	case rec.B != nil:
		f.Operator = newDenseOp(w, rec.B, rec.Available)
	}
	if op, ok := f.Operator.(quasiSepOp); ok && rec.SemisepBounds != nil {
		f.Semisep = &SemisepParams{C: op.c, OptimalLower: rec.SemisepBounds[0], Excess: rec.SemisepBounds[1]}
	}
	if reason := verifyEntry(f); reason != "" {
		return nil, fmt.Errorf("%s", reason)
	}
	return f, nil
}

// CheckRequest checks a request for the factorization of w by s under p,
// as [Strategy.Factorize] would before computing (the strategy's options,
// the workload, the participation), and reports whether s computes a
// metrics-only (loss-only) result, which a stored entry without factors
// or operator may hold.
func CheckRequest(s Strategy, w *Workload, p Participation) (lossOnly bool, err error) {
	if s == nil {
		return false, &ParamError{Param: "strategy", Want: "a Strategy"}
	}
	if err := checkWorkload(w); err != nil {
		return false, err
	}
	// The registry's loss-only switch; semiseparable's (its Factors
	// switch) only leaves out the dense factors: its result keeps its
	// operator.
	if i, ok := info(s); ok && !i.factorsPtr {
		lossOnly = IsLossOnly(s)
	}
	if err := p.Validate(w.R()); err != nil {
		return false, err
	}
	if err := CheckUnder(s, p); err != nil {
		return false, err
	}
	return lossOnly, nil
}

// verifyEntry checks the privacy-relevant content of a factorization read
// back from storage, as [Record.Restore] describes, because a checksum only
// detects accidents: anyone who can write the storage can edit the metadata
// and recompute its checksum. It returns why f cannot be used, or "".
func verifyEntry(f *Factorization) string {
	m := f.Metrics
	if !FiniteMetrics(m) || !(f.Gap >= 0) || math.IsInf(f.Gap, 0) {
		return fmt.Sprintf("metrics out of range (gap %v)", f.Gap)
	}
	if f.Iterations < 0 || f.Evaluations < 0 {
		return fmt.Sprintf("%d iterations, %d evaluations", f.Iterations, f.Evaluations)
	}
	r := f.Workload.R()
	if q, ok := f.Operator.(quasiSepOp); ok && f.B == nil {
		// A structured result: its metrics must be those of the C it
		// streams, computed from the generators.
		if !f.Workload.bidiagonalInverse() {
			return "a quasiseparable operator for a workload without a bidiagonal inverse"
		}
		if m.Participation.Kind == KindEpochs {
			return fmt.Sprintf("a quasiseparable entry without factors under %v", m.Participation)
		}
		g, err := quasiSepResult(f.Strategy, f.Workload, f.Workload, 1, q.c).WithParticipation(m.Participation)
		if err != nil {
			return strings.TrimPrefix(err.Error(), "factorize: ")
		}
		if d := metricsDiff(g.Metrics, m); d != "" {
			return "metadata metrics are not those of the operator: " + d
		}
		return ""
	}
	if f.B == nil {
		// A loss-only optimal result has unit sensitivity 1, exact; its
		// gamma is 1 under single participation and, under fixed epochs,
		// the factors' largest column norm, at most 1 (every X_ii is at
		// most its class trace).
		if f.Strategy == StrategyOptimal && (m.UnitSensitivity.Value != 1 || !m.UnitSensitivity.Exact ||
			m.Participation.Kind == KindEpochs && !(m.Gamma > 0 && m.Gamma <= 1) || m.Participation.Kind != KindEpochs && m.Gamma != 1) {
			return fmt.Sprintf("sensitivity %v of a loss-only optimal entry (gamma %v under %v), want 1 (and gamma 1, or in (0, 1] under epochs)", m.UnitSensitivity.Value, m.Gamma, m.Participation)
		}
		// Every participation lets a sample take part in any one round, so the
		// sensitivity is at least gamma, the largest column norm, which is
		// positive for a C that reproduces a nonsingular workload: a zero or
		// smaller sensitivity is an edit (it would calibrate too little noise).
		if !(m.Gamma > 0) || m.UnitSensitivity.Value < m.Gamma*(1-1e-12) {
			return fmt.Sprintf("sensitivity %v with gamma %v, want gamma > 0 and a sensitivity of at least gamma", m.UnitSensitivity.Value, m.Gamma)
		}
		if m.Participation.Kind == KindSingle && m.UnitSensitivity.Value != m.Gamma {
			return fmt.Sprintf("sensitivity %v under single participation, want gamma %v", m.UnitSensitivity, m.Gamma)
		}
		want := metricsFrom(r, m.Gamma, m.Participation, m.UnitSensitivity, m.FrobBSq, m.MaxRowBSq)
		if !closeRel(m.Loss, want.Loss) || !closeRel(m.RMSE, want.RMSE) || m.MaxSE > m.Loss*(1+1e-12) {
			return "metrics of the loss-only entry are inconsistent"
		}
		if f.Operator != nil {
			// It streams: its gamma must be that of the C it streams
			// (the strategies sum in other orders: 1e-9).
			g2, ok := gammaSqOf(f.Operator)
			if !ok {
				return fmt.Sprintf("a loss-only entry with an operator (%v) that cannot be checked", f.Operator)
			}
			if g := math.Sqrt(g2); !(math.Abs(g-m.Gamma) <= 1e-9*m.Gamma) {
				return fmt.Sprintf("gamma %v in the metadata is not that of the operator (%v)", m.Gamma, g)
			}
			// Under min-separation, the sensitivity must not be below
			// that of the operator's C (a bound may be claimed); no
			// strategy computes a loss-only result under fixed epochs.
			if m.Participation.Kind == KindEpochs {
				return fmt.Sprintf("a loss-only entry with an operator under %v", m.Participation)
			}
			if m.Participation.Kind == KindMinSep {
				sens, ok := minSepOf(f.Operator, r, m.Participation)
				if !ok {
					return fmt.Sprintf("a loss-only entry with an operator (%v) whose sensitivity under %v cannot be checked", f.Operator, m.Participation)
				}
				if !(m.UnitSensitivity.Value >= sens.Value*(1-1e-9)) {
					return fmt.Sprintf("sensitivity %v in the metadata is not that of the operator (%v under %v)", m.UnitSensitivity.Value, sens.Value, m.Participation)
				}
			}
		}
		return ""
	}
	// CheckCausal also refuses an availability round outside [0, R).
	if err := f.CheckCausal(); err != nil {
		return strings.TrimPrefix(err.Error(), "factorize: ")
	}
	got, err := ComputeMetrics(f.B, f.C, m.Participation)
	if err != nil {
		return "metadata metrics cannot be checked against the factors: " + strings.TrimPrefix(err.Error(), "factorize: ")
	}
	if d := metricsDiff(got, m); d != "" {
		return "metadata metrics are not those of the factors: " + d
	}
	if e := reproductionError(f); !(e <= 1e-6) {
		return fmt.Sprintf("B C does not reproduce the workload (relative error %.3g)", e)
	}
	if HasForm(f.Operator) {
		if e := operatorError(f.Operator, f.C, checkVector(r)); !(e <= 1e-6) {
			return fmt.Sprintf("the operator does not stream C^{-1} (relative error %.3g)", e)
		}
	}
	return ""
}

// sameMetrics reports whether the stored metrics m are those computed from
// the factors, got: the participation, the sensitivity's exactness and rule
// exactly, the numbers to a relative 1e-12. A strategy may sum in another
// order than [ComputeMetrics] (the semiseparable one sums its structured
// factors), which changes the last bits and nothing else; an edit that
// matters changes far more.
func sameMetrics(got, m Metrics) bool { return metricsDiff(got, m) == "" }

// metricsDiff names the first metric in which m differs from got, as
// sameMetrics compares them, with both values ("" if none does).
func metricsDiff(got, m Metrics) string {
	switch {
	case got.Participation != m.Participation:
		return fmt.Sprintf("participation %v, computed %v", m.Participation, got.Participation)
	case got.UnitSensitivity.Exact != m.UnitSensitivity.Exact:
		return fmt.Sprintf("unit_sensitivity_exact %v, computed %v", m.UnitSensitivity.Exact, got.UnitSensitivity.Exact)
	case got.UnitSensitivity.Rule != m.UnitSensitivity.Rule:
		return fmt.Sprintf("unit_sensitivity_rule %q, computed %q", m.UnitSensitivity.Rule, got.UnitSensitivity.Rule)
	}
	for _, p := range []struct {
		name        string
		stored, got float64
	}{
		{"gamma", m.Gamma, got.Gamma}, {"unit_sensitivity", m.UnitSensitivity.Value, got.UnitSensitivity.Value},
		{"frob_B_sq", m.FrobBSq, got.FrobBSq}, {"max_row_B_sq", m.MaxRowBSq, got.MaxRowBSq},
		{"loss", m.Loss, got.Loss}, {"rmse", m.RMSE, got.RMSE}, {"max_se", m.MaxSE, got.MaxSE},
	} {
		if !closeRel(p.got, p.stored) {
			return fmt.Sprintf("%s %v, computed %v", p.name, p.stored, p.got)
		}
	}
	return ""
}

// FiniteMetrics reports whether every metric is finite and >= 0: a
// factorization whose metrics overflowed cannot be stored.
func FiniteMetrics(m Metrics) bool {
	for _, v := range []float64{m.Gamma, m.UnitSensitivity.Value, m.FrobBSq, m.MaxRowBSq, m.Loss, m.RMSE, m.MaxSE} {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return false
		}
	}
	return true
}

// closeRel reports whether a and b agree to a relative 1e-12.
func closeRel(a, b float64) bool {
	return math.Abs(a-b) <= 1e-12*math.Max(math.Abs(a), math.Abs(b))
}

// checkVector returns n entries drawn uniformly from [-1, 1) by
// math/rand/v2's generator, seeded anew in every process: the vector of
// the checks of a stored entry (reproductionError, operatorError) is not
// known to whoever wrote the entry, so an edit cannot be aimed at it (with
// a fixed vector x, a banded C' = C + D with D x = 0 passes M' C x = x while
// streaming a noise of rank one).
func checkVector(n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = rand.Float64()*2 - 1
	}
	return x
}

// reproductionError returns ||B (C x) - A x|| / ||A x|| for a random
// vector x (checkVector): a Freivalds check of B C = A in O(R m) time.
func reproductionError(f *Factorization) float64 {
	r := f.Workload.R()
	x := mat.NewVecDense(r, checkVector(r))
	var cx, bcx, ax mat.VecDense
	cx.MulVec(f.C, x)
	bcx.MulVec(f.B, &cx)
	if inv, ok := f.Workload.InverseBand(); ok {
		// A x = L^{-1} x by forward substitution in the band of L:
		// O(R k), without forming A.
		_, k, _ := inv.TriBand()
		ax.ReuseAsVec(r)
		for i := 0; i < r; i++ {
			v := x.AtVec(i)
			for p := max(0, i-k); p < i; p++ {
				v -= inv.At(i, p) * ax.AtVec(p)
			}
			ax.SetVec(i, v/inv.At(i, i))
		}
	} else {
		ax.MulVec(f.Workload.Matrix(), x)
	}
	norm := mat.Norm(&ax, 2)
	bcx.SubVec(&bcx, &ax)
	return mat.Norm(&bcx, 2) / norm
}
