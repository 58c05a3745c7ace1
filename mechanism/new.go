package mechanism

import (
	"errors"
	"fmt"
	"math"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/linalg"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

// New returns the noise stream of the factorization f for vectors of
// dimension dim: round r's vector is row r of std * M Z, with Z the noise
// rows of the counter-based source (see the package documentation) and
// M = A^{-1} B (C^{-1} for square factors). It picks the streaming
// implementation from the structure the factorization declares
// (f.Stream):
//
//	StreamIndependent  independent: no state
//	StreamTree         binary tree: floor(log2 R) buffers
//	StreamBanded       banded forward substitution: b-1 buffers
//	StreamBLT          buffered linear Toeplitz: k buffers
//	StreamBandedInverse banded Toeplitz C^{-1} (bisr, bandinv): p-1 buffers of past Z rows
//	StreamSemisep      semiseparable forward substitution: K buffers (B and C not needed)
//	StreamToeplitz     Toeplitz: O(R) coefficients, past rows kept or regenerated
//	StreamDense        dense: M, past rows kept or regenerated
//
// [WithDense] forces the dense mechanism; [WithMemory] chooses how the dense
// and Toeplitz mechanisms get past rows.
//
// std is the standard deviation of Z's entries, and the mechanism does no
// accounting: the caller calibrates it. dpmf's calibration recipe is
// plan.Plan.Calibrate, the only one (see the Example and docs/privacy.md):
// for a release whose rows of G are averages over n learners of
// contributions clipped to norm clip, std = sigma(eps, delta) x (2 clip / n
// for replace-one, clip / n for add/remove) x the sensitivity of C under
// the participation the metrics were computed for.
//
// It is an error if f has no factors (a loss-only result), is not causal,
// or does not have the structure it declares; if dim < 1; if std is not
// finite and positive; or if an option is invalid.
func New(f *factorize.Factorization, dim int, std float64, opts ...Option) (Mechanism, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if f == nil || f.Workload == nil {
		return nil, &ParamError{Param: "factorization", Want: "a factorization computed by package factorize"}
	}
	// A semiseparable factorization streams from its generators and may
	// come without dense factors.
	streamSemisep := f.Stream == factorize.StreamSemisep && f.Semisep != nil && !cfg.dense
	if (f.B == nil || f.C == nil) && !streamSemisep {
		return nil, &ParamError{Param: "factorization", Value: fmt.Sprintf("%q without factors (a loss-only result)", f.Strategy), Want: "one with B and C"}
	}
	if dim < 1 {
		return nil, &ParamError{Param: "dim", Value: dim, Want: ">= 1"}
	}
	if math.IsNaN(std) || math.IsInf(std, 0) || std <= 0 {
		return nil, &ParamError{Param: "std", Value: std, Want: "a finite number > 0"}
	}
	rounds := f.Workload.R()
	if f.B != nil && f.C != nil {
		// (A semiseparable factor without dense factors is causal by
		// construction: lower triangular.)
		if err := f.CheckCausal(); err != nil {
			return nil, fmt.Errorf("mechanism: factorization %q is not causal: %v", f.Strategy, err)
		}
		rounds, _ = f.B.Dims()
	}
	if cfg.start > rounds {
		return nil, &ParamError{Param: "start round", Value: cfg.start, Want: fmt.Sprintf("<= %d rounds", rounds)}
	}
	var k kernel
	switch {
	case cfg.dense:
		k, err = newDense(f, dim, cfg)
	case f.Stream == factorize.StreamIndependent:
		k, err = newIndependent(f)
	case f.Stream == factorize.StreamTree:
		k, err = newTree(f, dim)
	case f.Stream == factorize.StreamBanded:
		k, err = newBanded(f, dim)
	case f.Stream == factorize.StreamBLT:
		k, err = newBLT(f, dim)
	case f.Stream == factorize.StreamToeplitz:
		k, err = newToeplitz(f, dim, cfg)
	case f.Stream == factorize.StreamBandedInverse:
		k, err = newBandInverse(f, dim)
	case streamSemisep:
		k, err = newSemisep(f, dim)
	case f.Stream == factorize.StreamDense, f.Stream == factorize.StreamSemisep:
		// A semiseparable factorization without its generators (a cache
		// entry) streams from B and C.
		k, err = newDense(f, dim, cfg)
	default:
		err = fmt.Errorf("mechanism: factorization %q declares an unknown stream structure %v", f.Strategy, f.Stream)
	}
	if err != nil {
		return nil, err
	}
	s := newStream(k, rounds, dim, std, cfg)
	s.start(cfg.start)
	return s, nil
}

// newIndependent checks that C is the identity.
func newIndependent(f *factorize.Factorization) (kernel, error) {
	m, r := f.C.Dims()
	for i := 0; i < m; i++ {
		for j := 0; j < r; j++ {
			want := 0.0
			if i == j {
				want = 1
			}
			if f.C.At(i, j) != want {
				return nil, fmt.Errorf("mechanism: identity factorization with C[%d][%d] = %v, want the identity", i, j, f.C.At(i, j))
			}
		}
	}
	return independent{}, nil
}

// useKeep decides the memory mode for a state of rows noise rows. auto is
// set when MemoryAuto chose to regenerate because keeping would exceed
// DefaultKeepLimit.
func useKeep(cfg *config, rows, dim int) (keep, auto bool) {
	switch cfg.memory {
	case MemoryKeep:
		return true, false
	case MemoryRegenerate:
		return false, false
	}
	keep = int64(rows)*int64(dim)*8 <= DefaultKeepLimit
	return keep, !keep
}

// MemoryOf reports how m gets the past noise rows it combines: it returns
// MemoryKeep or MemoryRegenerate for the dense and Toeplitz mechanisms, with
// auto set when [MemoryAuto] chose MemoryRegenerate because keeping the rows
// would take more than [DefaultKeepLimit] (each round then redraws its
// past rows, much slower than keeping them: see docs/mechanisms.md). ok is
// false for the mechanisms that keep no past rows (independent, tree,
// banded, BLT, banded inverse).
func MemoryOf(m Mechanism) (mode Memory, auto, ok bool) {
	s, isStream := m.(*stream)
	if !isStream {
		return 0, false, false
	}
	k, isLinear := s.k.(*linear)
	if !isLinear {
		return 0, false, false
	}
	if k.keep {
		return MemoryKeep, false, true
	}
	return MemoryRegenerate, k.auto, true
}

// newDense forms M = A^{-1} B and streams its rows.
func newDense(f *factorize.Factorization, dim int, cfg *config) (kernel, error) {
	r, m := f.B.Dims()
	mm := noiseOperator(f)
	rows := make([][]int, r)
	coefs := make([][]float64, r)
	used := make([]bool, m)
	for i := 0; i < r; i++ {
		row := mm.RawRowView(i)
		for j, v := range row {
			if v == 0 {
				continue
			}
			if f.Available[j] > i {
				return nil, fmt.Errorf("mechanism: round %d uses noise row %d, available only from round %d", i, j, f.Available[j])
			}
			rows[i] = append(rows[i], j)
			coefs[i] = append(coefs[i], v)
			used[j] = true
		}
	}
	draw := make([][]int, r)
	n := 0
	for j, u := range used {
		if u {
			draw[f.Available[j]] = append(draw[f.Available[j]], j)
			n++
		}
	}
	keep, auto := useKeep(cfg, n, dim)
	k := newLinear("dense", keep, dim, m, draw, func(i int) ([]int, []float64) { return rows[i], coefs[i] })
	k.auto = auto
	return k, nil
}

// noiseOperator returns M = A^{-1} B (R x m): through A's banded inverse
// when the workload has one, else by a triangular solve.
func noiseOperator(f *factorize.Factorization) *mat.Dense {
	r, m := f.B.Dims()
	mm := mat.NewDense(r, m, nil)
	if inv, ok := f.Workload.InverseBand(); ok {
		_, kb, _ := inv.TriBand()
		for i := 0; i < r; i++ {
			dst := mm.RawRowView(i)
			for s := max(0, i-kb); s <= i; s++ {
				a := inv.At(i, s)
				if a == 0 {
					continue
				}
				for j, v := range f.B.RawRowView(s) {
					dst[j] += a * v
				}
			}
		}
		return mm
	}
	mm.Copy(f.B)
	blas64.Trsm(blas.Left, blas.NoTrans, 1, f.Workload.Matrix().RawTriangular(), mm.RawMatrix())
	return mm
}

// newToeplitz streams C^{-1} for C = T diag(s) with T lower-triangular
// Toeplitz (the square-root strategies): C^{-1} = diag(1/s) T^{-1}, whose
// rows need only the R coefficients of T^{-1}.
func newToeplitz(f *factorize.Factorization, dim int, cfg *config) (kernel, error) {
	m, r := f.C.Dims()
	if m != r {
		return nil, fmt.Errorf("mechanism: Toeplitz mechanism needs a square C, got %d x %d", m, r)
	}
	c00 := f.C.At(0, 0)
	if c00 == 0 {
		return nil, errors.New("mechanism: C[0][0] = 0: C is singular")
	}
	t := make([]float64, r)
	scale := 0.0
	for i := 0; i < r; i++ {
		t[i] = f.C.At(i, 0) / c00
		for j := 0; j <= i; j++ {
			scale = math.Max(scale, math.Abs(f.C.At(i, j)))
		}
	}
	s := make([]float64, r)
	for j := 0; j < r; j++ {
		s[j] = f.C.At(j, j)
		if s[j] == 0 {
			return nil, fmt.Errorf("mechanism: C[%d][%d] = 0: C is singular", j, j)
		}
	}
	for i := 0; i < r; i++ {
		for j := 0; j <= i; j++ {
			if math.Abs(f.C.At(i, j)-t[i-j]*s[j]) > 1e-10*scale {
				return nil, fmt.Errorf("mechanism: strategy %q: C is not a Toeplitz matrix with scaled columns at (%d, %d) (use WithDense)", f.Strategy, i, j)
			}
		}
	}
	// u = coefficients of 1/t(x) (t[0] = 1).
	u := linalg.SeriesInverse(t, r)
	js := make([]int, r)
	cs := make([]float64, r)
	draw := make([][]int, r)
	for j := range js {
		js[j] = j
		draw[j] = []int{j}
	}
	keep, auto := useKeep(cfg, r, dim)
	k := newLinear("toeplitz", keep, dim, r, draw, func(i int) ([]int, []float64) {
		for j := 0; j <= i; j++ {
			cs[j] = u[i-j] / s[i]
		}
		return js[:i+1], cs[:i+1]
	})
	k.auto = auto
	return k, nil
}

// NoiseMatrix draws every remaining round of m and returns them as the
// rows of a matrix, (Rounds() - Round()) x Dim(): the stream's noise
// matrix. It returns ErrExhausted if no round is left.
func NoiseMatrix(m Mechanism) (*mat.Dense, error) {
	if m == nil {
		return nil, &ParamError{Param: "mechanism", Want: "a Mechanism from New"}
	}
	n := m.Rounds() - m.Round()
	if n <= 0 {
		return nil, ErrExhausted
	}
	out := mat.NewDense(n, m.Dim(), nil)
	for i := 0; i < n; i++ {
		if err := m.Next(out.RawRowView(i)); err != nil {
			return nil, err
		}
	}
	return out, nil
}
