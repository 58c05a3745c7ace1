package mechanism

import (
	"crypto/rand"
	"fmt"
	"math"
	"strings"

	"github.com/dpmf/dpmf/factorize"
	"gonum.org/v1/gonum/mat"
)

// maxDim is the largest dimension New accepts: 2^40 float64 (8 TiB) per
// vector, far beyond any machine, and small enough that the byte counts of
// a vector and of a few of them fit in an int. On a 32-bit platform it is
// 2^27 - 1 (a vector of 1 GiB), so that the same holds there.
const maxDim = min(1<<40, math.MaxInt>>4)

// maxDimText is maxDim as the error message writes it.
func maxDimText() string {
	if maxDim == 1<<40 {
		return "2^40 (a vector of 8 TiB)"
	}
	return "2^27-1 (a vector of 1 GiB)"
}

// New returns the noise stream of the factorization f for vectors of
// dimension dim: round r's vector is row r of M Z, with Z the noise rows
// of the counter-based source (see the package documentation) scaled by
// std, so that its entries are N(0, std^2), and
// M = A^{-1} B (C^{-1} for square factors). It applies the operator that
// f's strategy built (f.Operator: identity, tree, banded, BLT, banded
// inverse, quasiseparable, Toeplitz or dense), with the state it declares;
// nothing is derived from the dense factors. [WithDense] forces the dense
// operator; [WithMemory] chooses how operators that read past noise rows
// (dense, Toeplitz) get them.
//
// std is the standard deviation of Z's entries, and the mechanism does no
// accounting: the caller calibrates it. dpmf's calibration recipe is
// plan.Plan.Calibrate, the only one (see the Example and docs/privacy.md):
// for a release whose rows of G are averages over n learners of
// contributions clipped to norm clip, std = sigma(eps, delta) x (2 clip / n
// for replace-one, clip / n for add/remove) x the sensitivity of C under
// the participation the metrics were computed for.
//
// New applies its own copy of f's operator (factorize.CopyOperator: as
// much memory again as the operator's coefficients), and
// FactorizationOf reports a factorization holding such a copy: changing
// f, its BLT parameters or the coefficients of a form its operator was
// built from (factorize.OperatorForm.Operator keeps them) after New
// changes neither the noise nor the operator reported. The dense operator
// is built at New from its factors, so its noise does not change either;
// the dense factors FactorizationOf reports are f's own (a digest of
// them reflects a later change, and is refused then).
//
// It is an error if f has no operator (a metrics-only result) or one of
// other than its workload's R rounds, or BLT parameters
// (factorize.BLTParams, which a caller can assemble) that their stored
// form would refuse (lengths that differ, a coefficient not finite, a zero
// scale), if dim < 1
// or dim > 2^40 (one vector of 8 TiB), if the stream's state (its state
// vectors, and its past noise rows under MemoryKeep) needs more memory
// than the machine has, or its state vectors more bytes than an int
// counts, if std is not finite or below 2.2e-308 (the smallest normal
// float64: a subnormal std keeps too few bits), or if an option is invalid; with
// WithDense, if its dense operator (M = A^{-1} B with its rows' lists, and
// the dense factors where f holds none: 24 to 40 R m bytes) needs more
// memory than the machine has, if f has no factors, factors of the wrong
// size or not finite, is not causal, or B C is not its workload
// (factorize.DenseOperator), or if f also has a structured operator whose
// noise its dense factors do not stream (to within a relative 1e-6 per
// row): [FactorizationOf] reports f, which names that operator.
func New(f *factorize.Factorization, dim int, std float64, opts ...Option) (Mechanism, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if f == nil || f.Workload == nil {
		return nil, &ParamError{Param: "factorization", Want: "a factorization computed by package factorize"}
	}
	op := f.Operator
	if cfg.dense {
		if err := denseFits(f); err != nil {
			return nil, err
		}
		if op, err = factorize.DenseOperator(f); err != nil {
			return nil, err
		}
		// FactorizationOf reports f, whose digest (plan.OperatorDigest)
		// names its structured operator when it has one: the dense
		// factors must stream that operator's noise, or a factorization
		// holding one strategy's operator and another's factors would
		// pass for the first.
		if err := denseMatches(f, op); err != nil {
			return nil, err
		}
	}
	if op == nil {
		if f.B != nil && f.C != nil {
			// Factors assembled by hand: only the dense operator streams them.
			return nil, &ParamError{Param: "factorization", Value: fmt.Sprintf("%q with factors but without a noise operator", f.Strategy), Want: "one computed with its operator, or WithDense() for factors assembled by hand"}
		}
		return nil, &ParamError{Param: "factorization", Value: fmt.Sprintf("%q without a noise operator (a loss-only result)", f.Strategy), Want: "one computed with its operator"}
	}
	if p, ok := op.(*factorize.BLTParams); ok {
		// The one operator of package factorize that a caller can
		// assemble by hand: the checks its stored form gets. Before, a
		// zero scale streamed a round of zero noise, and fewer decay
		// rates than weights (or nil parameters) panicked.
		if p == nil {
			return nil, &ParamError{Param: "factorization", Value: fmt.Sprintf("%q with nil BLT parameters", f.Strategy), Want: "an operator"}
		}
		form, _ := factorize.FormOf(p)
		if _, err := form.Operator(p.Rounds()); err != nil {
			return nil, &ParamError{Param: "factorization",
				Value: fmt.Sprintf("%q with BLT parameters of %d weights, %d decay rates and %d scales (%s)", f.Strategy, len(p.Weights), len(p.Lambdas), len(p.Scale), strings.TrimPrefix(err.Error(), "factorize: ")),
				Want:  "as many finite weights as decay rates (at least one when R > 1) and nonzero finite scales"}
		}
	}
	if r := f.Workload.R(); op.Rounds() != r {
		// A factorization assembled by hand with another's operator.
		return nil, &ParamError{Param: "factorization", Value: fmt.Sprintf("%q with an operator of %d rounds", f.Strategy, op.Rounds()), Want: fmt.Sprintf("the operator of its workload's %d rounds", r)}
	}
	if dim < 1 || dim > maxDim {
		return nil, &ParamError{Param: "dim", Value: dim, Want: ">= 1 and <= " + maxDimText()}
	}
	if math.IsNaN(std) || math.IsInf(std, 0) || !(std >= 0x1p-1022) {
		// A subnormal std keeps too few significant bits for the noise to
		// have the std it claims (5e-324 is 2^-1074: every draw std x z
		// rounds to a multiple of it); plan.Plan.Calibrate and
		// accountant.Scale refuse one for the same reason.
		return nil, &ParamError{Param: "std", Value: std, Want: "a finite number of at least 2.2e-308 (the normal float64 range, where it keeps its precision)"}
	}
	mem := op.Memory()
	need := 8 * float64(mem.States) * float64(dim)
	if need > math.MaxInt {
		// The state vectors' element counts (one slice of K d for the
		// semiseparable operator) overflow an int, on 32-bit platforms at
		// sizes a host's memory passes. Kept past rows are held block by
		// block, and only the machine's memory limits them.
		return nil, &ParamError{Param: "dim", Value: dim, Want: fmt.Sprintf("a size whose %d state vectors (%.3g GB) fit in an int of bytes (%.3g GB)", mem.States, need/1e9, float64(math.MaxInt)/1e9)}
	}
	if mem.PastRows > 0 && cfg.memory == MemoryKeep {
		need += keepBytes(op, dim)
	}
	if kind, ints, _, ok := factorize.FormParts(op); ok {
		// The stream's own copy of the coefficients (ownOperator), at
		// most its form's.
		n, _ := factorize.OperatorForm{Kind: kind, Ints: ints}.FloatCount()
		need += 8 * float64(n)
	}
	if err := checkFits("dim", dim, "state (the operator's state vectors and its own copy of the coefficients, and its past noise rows under MemoryKeep)", need); err != nil {
		return nil, err
	}
	rounds := op.Rounds()
	if cfg.start > rounds {
		return nil, &ParamError{Param: "start round", Value: cfg.start, Want: fmt.Sprintf("<= %d rounds", rounds)}
	}
	// The stream applies its own copy of the operator's coefficients, and
	// the factorization it reports holds another where a caller can
	// reach them (BLT parameters): before, a BLTParams or a form's
	// coefficients changed after New (after a server had checked the
	// digest) changed the noise with no check.
	own := ownOperator(op)
	s := newStream(own, dim, std, cfg)
	fc := *f // as given: a later change of f's fields changes nothing here
	fc.Operator = own
	if _, isBLT := own.(*factorize.BLTParams); isBLT || cfg.dense {
		fc.Operator = ownOperator(f.Operator)
	}
	s.f = &fc
	if !cfg.dense && !factorize.HasForm(op) && !factorize.StreamsOwnFactors(f) {
		// An operator without a structured form that is not the dense
		// operator of f's own factors (another's, or another package's):
		// plan.OperatorDigest of f would name f's factors, not the noise
		// streamed, so the stream reports no factorization.
		s.f = nil
	}
	s.start(cfg.start)
	return s, nil
}

// ownOperator returns a copy of op that shares no memory with it and
// streams the same noise bit for bit (factorize.CopyOperator). The dense
// operator is returned as it is, built by then from a copy of its factors
// (its rows' lists), and so is an operator of another package, which New
// holds as given.
func ownOperator(op factorize.Operator) factorize.Operator {
	if op == nil {
		return nil
	}
	c, _ := factorize.CopyOperator(op)
	return c
}

// keepBytes is what keeping op's past noise rows of dimension dim costs:
// the rows (kept as they are drawn) and the slice headers that index
// them, allocated by New ([keptHeaders], counted here in float64, which
// does not wrap at sizes New refuses).
func keepBytes(op factorize.Operator, dim int) float64 {
	blocks := math.Ceil(float64(dim) / blockLen)
	return 8*float64(op.Memory().PastRows)*float64(dim) + float64(op.NoiseRows())*(blocks+1)*float64(sliceHeader)
}

// useKeep decides the memory mode of op's stream of dimension dim. auto
// is set when MemoryAuto chose to regenerate because keeping (the rows
// and their index, keepBytes) would exceed DefaultKeepLimit, and
// overMachine too when it would exceed, beside the state vectors, the
// machine's memory (machineBytes), which New checks only for MemoryKeep:
// before, MemoryAuto kept rows of 400 MB on a machine of 256 MiB, and it
// left the index out (at d = 1 it is 6 times the rows).
func useKeep(cfg *config, op factorize.Operator, dim int) (keep, auto, overMachine bool) {
	switch cfg.memory {
	case MemoryKeep:
		return true, false, false
	case MemoryRegenerate:
		return false, false, false
	}
	need := keepBytes(op, dim)
	if have := machineBytes(); have > 0 && need+8*float64(op.Memory().States)*float64(dim) > have {
		return false, true, true
	}
	keep = need <= DefaultKeepLimit
	return keep, !keep, false
}

// MemoryOf reports how m gets the past noise rows it combines: it returns
// MemoryKeep or MemoryRegenerate for the operators that read past rows
// (dense, Toeplitz), with auto set when [MemoryAuto] chose
// MemoryRegenerate because keeping the rows would take more than
// [DefaultKeepLimit] or the machine's memory (each round then redraws its past rows, much slower
// than keeping them: see docs/mechanisms.md). ok is false for the
// operators that read no past rows (independent, tree, banded, BLT,
// banded inverse, semiseparable).
func MemoryOf(m Mechanism) (mode Memory, auto, ok bool) {
	s, isStream := m.(*stream)
	if !isStream || s.past == nil {
		return 0, false, false
	}
	if s.past.keep {
		return MemoryKeep, false, true
	}
	return MemoryRegenerate, s.past.auto, true
}

// AutoMemoryReason returns why [MemoryAuto] made m regenerate its past
// noise rows ([MemoryOf] reports auto), in words for a message: "keeping
// the past rows would take more than 1 GiB" ([DefaultKeepLimit]) or
// "keeping the past rows would take more than this machine's memory (N
// GiB with swap)"; "" for a mechanism whose rows MemoryAuto did not choose
// to regenerate.
func AutoMemoryReason(m Mechanism) string {
	s, isStream := m.(*stream)
	if !isStream || s.past == nil || !s.past.auto {
		return ""
	}
	return s.past.autoReason()
}

// FactorizationOf returns the factorization whose noise m streams, as
// [New] was given it (with [WithDense], the factorization whose dense
// operator it applies), so that a consumer can check it against the
// factorization a privacy record was calibrated for (plan.OperatorDigest;
// a fedopt server does). A Mechanism that wraps another (a recorder of
// its rows, say) reports the other's when it has a method
// Unwrap() Mechanism that returns it. ok is false for a Mechanism not made
// by New (nor wrapping one), and for one whose factorization's operator
// has no structured form and is not the dense operator of its own factors
// (factorize.StreamsOwnFactors): its digest would not name its noise.
func FactorizationOf(m Mechanism) (f *factorize.Factorization, ok bool) {
	for range 64 { // wrappers nest a few deep; a cycle ends here
		switch s := m.(type) {
		case *stream:
			if s == nil || s.f == nil {
				return nil, false
			}
			return s.f, true
		case interface{ Unwrap() Mechanism }:
			m = s.Unwrap()
		default:
			return nil, false
		}
	}
	return nil, false
}

// NoiseMatrix draws every remaining round of m and returns them as the
// rows of a matrix, (Rounds() - Round()) x Dim(): the stream's noise
// matrix. It returns ErrExhausted if no round is left, and a *ParamError
// for a matrix whose size in bytes does not fit in an int or in the
// machine's memory.
func NoiseMatrix(m Mechanism) (*mat.Dense, error) {
	if m == nil {
		return nil, &ParamError{Param: "mechanism", Want: "a Mechanism from New"}
	}
	n := m.Rounds() - m.Round()
	if n <= 0 {
		return nil, ErrExhausted
	}
	if d := m.Dim(); d < 1 || n > math.MaxInt/8/d {
		return nil, &ParamError{Param: "mechanism", Value: fmt.Sprintf("%d rounds of dimension %d", n, d), Want: "a noise matrix whose size in bytes fits in an int"}
	}
	if err := checkFits("mechanism", fmt.Sprintf("%d rounds of dimension %d", n, m.Dim()), "noise matrix", 8*float64(n)*float64(m.Dim())); err != nil {
		return nil, err
	}
	out := mat.NewDense(n, m.Dim(), nil)
	for i := 0; i < n; i++ {
		if err := m.Next(out.RawRowView(i)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// denseFits returns a *ParamError naming the factorization when the
// dense operator of f (factorize.DenseOperator) would not fit in the
// machine's memory: M = A^{-1} B (8 R m bytes), the lists of its rows'
// nonzero entries (an index and a coefficient each, at most 16 R m
// bytes), and, where f holds no dense factors, B and C formed from its
// structured form first (16 R m bytes). They are allocated before any
// state, which New's other checks count: before, a lean semiseparable
// result of R = 10^5 rounds streamed WithDense formed 160 GB of factors
// and ended the process out of memory.
func denseFits(f *factorize.Factorization) error {
	r, m := f.Workload.R(), f.Workload.R()
	switch p, isBLT := f.Operator.(*factorize.BLTParams); {
	case f.B != nil:
		_, m = f.B.Dims()
	case f.Operator != nil && !(isBLT && p == nil):
		m = f.Operator.NoiseRows()
	}
	per := 24.0 // M and its rows' lists
	if f.B == nil || f.C == nil {
		per += 16 // B and C, formed from the structured form
	}
	return checkFits("factorization", fmt.Sprintf("%q of %d rounds and %d noise rows, streamed WithDense", f.Strategy, r, m),
		"dense noise operator (M = A^{-1} B, its rows' lists and the dense factors it is formed from)", per*float64(r)*float64(m))
}

// denseTolerance is the largest relative difference, row by row, that
// [denseMatches] lets the dense and structured noise of one factorization
// have: far above the rounding and approximation of a factorization's
// own factors, far below any change of its noise's scale that matters to
// its privacy.
const denseTolerance = 1e-6

// denseMatches returns an error unless the dense operator dense of f
// streams the noise of f's structured operator (one with a
// factorize.FormOf form), where f has one: both are drawn from one key
// for a few coordinates and compared row by row, within denseTolerance of
// the structured row's norm. The key comes from crypto/rand at each call:
// under a fixed key the probe Z was known, and factors whose noise
// operator differed from the structured one by a D with D Z = 0 (a
// last row projected onto Z's span, with less noise) passed
// (TestDenseCheckNotAimed).
func denseMatches(f *factorize.Factorization, dense factorize.Operator) error {
	op := f.Operator
	if p, ok := op.(*factorize.BLTParams); op == nil || ok && p == nil {
		return nil
	}
	form, ok := factorize.FormOf(op)
	if !ok {
		return nil // the digest names the dense factors themselves
	}
	bad := func(why string) error {
		return &ParamError{Param: "factorization", Value: fmt.Sprintf("%q whose dense factors B and C %s", f.Strategy, why),
			Want: "factors that stream its operator's noise (or no operator, for factors assembled by hand)"}
	}
	if _, err := form.Operator(op.Rounds()); err != nil || op.Rounds() != dense.Rounds() {
		return bad(fmt.Sprintf("do not match its %s operator", form.Kind))
	}
	const dim = 4
	cfg := &config{workers: 1}
	rand.Read(cfg.key[:]) // never fails (crypto/rand, Go 1.24+)
	s, d := newStream(op, dim, 1, cfg), newStream(dense, dim, 1, cfg)
	x, y := make([]float64, dim), make([]float64, dim)
	for r := range op.Rounds() {
		if s.Next(x) != nil || d.Next(y) != nil {
			return bad("could not be compared with its operator")
		}
		var diff, norm float64
		for i := range x {
			diff += (x[i] - y[i]) * (x[i] - y[i])
			norm += x[i] * x[i]
		}
		if !(math.Sqrt(diff) <= denseTolerance*math.Sqrt(norm)) {
			return bad(fmt.Sprintf("stream other noise than its %s operator (round %d: relative difference %.3g)", form.Kind, r, math.Sqrt(diff/norm)))
		}
	}
	return nil
}
