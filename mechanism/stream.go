package mechanism

import (
	"fmt"
	"math"
	"sync/atomic"
	"unsafe"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/internal/par"
)

// stream implements Mechanism on top of an operator's state: rounds,
// scaling by std, the past noise rows (kept or regenerated), and the split
// of each round into blocks of coordinates among goroutines.
type stream struct {
	f      *factorize.Factorization // the factorization New was given
	op     factorize.Operator
	st     factorize.OperatorState
	rounds int
	dim    int
	std    float64
	round  int
	gens   []*gen
	past   *pastRows // nil for operators that read no past rows
	err    error     // an overflow ended the stream
}

var _ Mechanism = (*stream)(nil)

func newStream(op factorize.Operator, dim int, std float64, cfg *config) *stream {
	src := &source{key: cfg.key}
	nb := (dim + blockLen - 1) / blockLen
	w := max(1, min(cfg.workers, nb, maxWorkers))
	var past *pastRows
	if mem := op.Memory(); mem.PastRows > 0 {
		keep, auto, over := useKeep(cfg, op, dim)
		past = &pastRows{keep: keep, auto: auto, overMachine: over}
		if over {
			past.machine = machineBytes()
		}
		if keep {
			m := op.NoiseRows()
			past.headers = keptHeaders(m, dim)
			flat := make([][]float64, m*nb)
			past.rows = make([][][]float64, m)
			for j := range past.rows {
				past.rows[j] = flat[j*nb : (j+1)*nb]
			}
		}
	}
	gens := make([]*gen, w)
	for i := range gens {
		gens[i] = newGen(src)
		gens[i].past = past
	}
	return &stream{op: op, st: op.NewState(dim), rounds: op.Rounds(), dim: dim, std: std, gens: gens, past: past}
}

// Next implements Mechanism.
func (s *stream) Next(dst []float64) error {
	if len(dst) != s.dim {
		panic(fmt.Sprintf("mechanism: Next into a vector of length %d, want %d", len(dst), s.dim))
	}
	if s.err != nil {
		return s.err
	}
	if s.round >= s.rounds {
		return ErrExhausted
	}
	r := s.round
	s.st.Prepare(r)
	var overflow atomic.Bool
	s.forBlocks(func(g *gen, lo, hi int) {
		out := dst[lo:hi]
		s.st.Block(g, r, lo, out)
		ok := true
		for i := range out {
			out[i] *= s.std
			ok = ok && math.Abs(out[i]) <= math.MaxFloat64
		}
		if !ok {
			overflow.Store(true)
		}
	})
	if overflow.Load() {
		clear(dst)
		s.err = &OverflowError{Round: r, Std: s.std}
		return s.err
	}
	s.round++
	return nil
}

// OverflowError is returned by Next when an entry of a round's noise
// vector is not a finite float64 (std near the top of the float64 range,
// such as 1e308, times a Gaussian draw or a coefficient larger than 1):
// the mechanism never writes Inf or NaN noise. dst is zeroed and the
// stream ends; every later Next returns the same error.
type OverflowError struct {
	// Round is the round whose noise overflowed; Std the mechanism's std.
	Round int
	Std   float64
}

// Error implements error.
func (e *OverflowError) Error() string {
	return fmt.Sprintf("mechanism: the noise of round %d overflows float64 (std = %g): use a smaller noise standard deviation", e.Round, e.Std)
}

// forBlocks calls fn for every block of coordinates, spread over the
// stream's goroutines. Which goroutine computes a block does not change
// its result.
func (s *stream) forBlocks(fn func(g *gen, lo, hi int)) {
	nb := (s.dim + blockLen - 1) / blockLen
	par.Pool(nb, len(s.gens), func(w, b int) bool {
		lo := b * blockLen
		fn(s.gens[w], lo, min(lo+blockLen, s.dim))
		return true
	})
}

// start moves the stream to round r: by the state's Seek if it has one,
// else by replaying rounds 0..r-1.
//
// The replay runs block by block into a block of workspace per worker,
// without the std: the state does not depend on it (Next scales a round's
// output after the state's Block). Before, it replayed by Next into a
// vector of dimension d, which the memory check did not count (8 TiB at d
// = 2^40 for the Toeplitz operator, which declares no state vectors), and
// which never advanced past a round whose noise overflowed (a std near
// the float64 maximum: New never returned).
func (s *stream) start(r int) {
	if r == 0 {
		return
	}
	s.round = r
	if mem := s.op.Memory(); mem.States == 0 && mem.PastRows == 0 {
		return // no state to set
	}
	if sk, ok := s.st.(factorize.Seeker); ok {
		s.forBlocks(func(g *gen, lo, hi int) { sk.Seek(g, r, lo, hi-lo) })
		return
	}
	for q := 0; q < r; q++ {
		s.st.Prepare(q)
		s.forBlocks(func(g *gen, lo, hi int) { s.st.Block(g, q, lo, workspace(&g.replay)[:hi-lo]) })
	}
}

// Round implements Mechanism.
func (s *stream) Round() int { return s.round }

// Rounds implements Mechanism.
func (s *stream) Rounds() int { return s.rounds }

// Dim implements Mechanism.
func (s *stream) Dim() int { return s.dim }

// Std implements Mechanism.
func (s *stream) Std() float64 { return s.std }

// StateBytes implements Mechanism: the operator's state vectors, the
// past noise rows kept so far and, in keep mode, the slice headers that
// index them (allocated by New, see [keptHeaders]).
func (s *stream) StateBytes() int64 {
	n := int64(s.op.Memory().States) * int64(s.dim) * 8
	if s.past != nil {
		n += s.past.held.Load() + s.past.headers
	}
	return n
}

// sliceHeader is the size of a slice header: 24 bytes on 64-bit
// platforms, 12 on 32-bit ones.
const sliceHeader = int64(unsafe.Sizeof([]float64(nil)))

// keptHeaders returns the bytes of the slice headers with which keep
// mode indexes m noise rows of dimension dim: one header per block of
// blockLen coordinates of each row, and one per row (newStream allocates
// both up front). Before, StateBytes left them out: at d = 1 they are 6
// times the 8 bytes of a row, at d = 10^6 0.07% of them.
func keptHeaders(m, dim int) int64 {
	nb := (int64(dim) + blockLen - 1) / blockLen
	return int64(m) * (nb + 1) * sliceHeader
}

// String names the mechanism, for example "blt(k=4)" or "dense(keep)".
func (s *stream) String() string {
	name := s.op.String()
	switch {
	case s.past == nil:
		return name
	case s.past.keep:
		return fmt.Sprintf("%s(keep)", name)
	case s.past.auto:
		return fmt.Sprintf("%s(regenerate: chosen by MemoryAuto, %s)", name, s.past.autoReason())
	}
	return fmt.Sprintf("%s(regenerate)", name)
}
