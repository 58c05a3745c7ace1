package mechanism

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/factorize"
)

// fuzzMechBytes reads a fuzz input as a stream of choices; past its end
// every read is 0.
type fuzzMechBytes struct {
	b []byte
	i int
}

// huge and huge1 are 2^40 and 2^40 + 1 where int has 64 bits, and the
// largest int on 32-bit platforms (the fuzz targets build there too).
const (
	huge  = int(min(uint64(math.MaxInt), 1<<40))
	huge1 = int(min(uint64(math.MaxInt), 1<<40+1))
)

func (f *fuzzMechBytes) byte() byte {
	if f.i >= len(f.b) {
		return 0
	}
	f.i++
	return f.b[f.i-1]
}

func (f *fuzzMechBytes) pick(xs []int) int { return xs[int(f.byte())%len(xs)] }

func (f *fuzzMechBytes) uint64() uint64 {
	var b [8]byte
	for i := range b {
		b[i] = f.byte()
	}
	return binary.LittleEndian.Uint64(b[:])
}

// fuzzMachine is the machine's memory while FuzzMechanism runs: 256 MiB,
// so that the refusals do not depend on the machine.
const fuzzMachine = 256 << 20

// FuzzMechanism calls New with a factorization of a few rounds from the
// registry and a hostile dimension (up to 2^40 and MaxInt), std (NaN,
// infinities, 0, negative, subnormal, MaxFloat64), seed, number of
// workers, memory mode and start round, on a machine of 256 MiB
// (machineBytes). Whatever they are, New returns a one-line *ParamError
// naming its parameter, or a mechanism whose construction allocated at
// most its declared state (OperatorMemory: States vectors, and PastRows
// rows kept under MemoryKeep) plus 4 MiB (for up to 1024 workers), whose
// state fits in the machine, and which (for dimensions up to 64) draws
// Rounds() - start rounds of
// finite noise (or an *OverflowError for a std near the float64 maximum)
// equal, seed for seed, to the dense operator's (WithDense, a second
// algorithm: rows of A^{-1} B applied to the same noise rows), and then
// ErrExhausted.
func FuzzMechanism(f *testing.F) {
	// Seeds, in the order read: rounds, strategy, dim, std, seed (8
	// bytes), workers, memory, dense, start.
	f.Add([]byte{3, 0, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0})
	f.Add([]byte{7, 1, 3, 1, 1, 2, 3, 4, 5, 6, 7, 8, 2, 1, 0, 1})
	f.Add([]byte{5, 10, 4, 2, 9, 9, 9, 9, 9, 9, 9, 9, 0, 2, 1, 2})
	f.Add([]byte{7, 2, 5, 3, 0, 0, 0, 0, 0, 0, 0, 0, 3, 3, 0, 3})
	f.Add([]byte{7, 9, 6, 4, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 4}) // dim 2^40
	f.Add([]byte{7, 3, 7, 5, 0, 0, 0, 0, 0, 0, 0, 0, 5, 1, 0, 5}) // dim MaxInt
	f.Add([]byte{6, 4, 1, 6, 0, 0, 0, 0, 0, 0, 0, 0, 6, 4, 1, 0})
	f.Add([]byte{6, 5, 2, 7, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 1, 0}) // std MaxFloat64
	f.Add([]byte{6, 6, 8, 8, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0})
	f.Add([]byte{4, 7, 9, 9, 0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 0, 0})
	f.Add([]byte{4, 8, 10, 10, 0, 0, 0, 0, 0, 0, 0, 0, 7, 1, 0, 0})
	f.Add([]byte{3, 0, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0}) // identity, dim 2^40, 2^20 workers
	defer func(m func() float64) { machineBytes = m }(machineBytes)
	machineBytes = func() float64 { return fuzzMachine }
	reg := factorize.Registry()
	facts := map[string]*factorize.Factorization{}
	f.Fuzz(func(t *testing.T, data []byte) {
		in := &fuzzMechBytes{b: data}
		r := 1 + int(in.byte())%8
		info := reg[int(in.byte())%len(reg)]
		key := fmt.Sprint(info.Name, r)
		fz, ok := facts[key]
		if !ok {
			s, err := factorize.ParseStrategy(info.Name)
			if err == nil && info.HasLossOnly() {
				s, err = factorize.WithLossOnly(s, false)
			}
			if err != nil {
				t.Fatal(err)
			}
			w, err := factorize.Prefix(r)
			if err != nil {
				t.Fatal(err)
			}
			if fz, err = s.Factorize(context.Background(), w, factorize.SingleParticipation()); err != nil {
				return // semiseparable needs R >= 2
			}
			facts[key] = fz
		}
		dim := in.pick([]int{1, 2, 3, 5, 64, 4097, huge, math.MaxInt, 0, -1, huge1, 1 << 24, 1 << 27, math.MinInt})
		std := []float64{1, 0.5, 1e-300, 5e-324, 1e300, math.MaxFloat64, 0, -1, math.NaN(), math.Inf(1), math.Inf(-1), 2}[int(in.byte())%12]
		seed := in.uint64()
		workers := in.pick([]int{1, 2, 3, 0, -1, 1 << 20, math.MaxInt, 64})
		memory := Memory(in.pick([]int{int(MemoryAuto), int(MemoryKeep), int(MemoryRegenerate), -1, 7}))
		dense := in.byte()%2 == 1
		start := in.pick([]int{0, 1, r - 1, r, r + 1, -1, math.MaxInt})
		opts := []Option{WithSeed(seed), WithWorkers(workers), WithMemory(memory), WithStartRound(start)}
		if dense {
			opts = append(opts, WithDense())
		}
		call := fmt.Sprintf("New(%s R=%d, dim %d, std %v, seed %d, workers %d, memory %d, dense %v, start %d)", info.Name, r, dim, std, seed, workers, memory, dense, start)

		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		m, err := New(fz, dim, std, opts...)
		runtime.ReadMemStats(&after)
		if err != nil {
			msg := err.Error()
			var pe *ParamError
			if !errors.As(err, &pe) || pe.Param == "" || strings.ContainsAny(msg, "\n\r") {
				t.Fatalf("%s: error %T %q, want a one-line *ParamError naming its parameter", call, err, msg)
			}
			return
		}
		op := fz.Operator
		if dense {
			op, _ = factorize.DenseOperator(fz)
		}
		mem := op.Memory()
		declared := 8 * float64(mem.States) * float64(dim)
		if mode, _, ok := MemoryOf(m); ok && mode == MemoryKeep {
			declared += 8 * float64(mem.PastRows) * float64(dim)
		}
		if declared > fuzzMachine {
			t.Fatalf("%s: accepted a state of %.3g bytes on a machine of %d", call, declared, fuzzMachine)
		}
		if got := float64(after.TotalAlloc - before.TotalAlloc); got > declared+4<<20 {
			t.Fatalf("%s: New allocated %.3g bytes, its declared state is %.3g", call, got, declared)
		}
		if m.Rounds() != r || m.Round() != start || m.Dim() != dim || m.Std() != std {
			t.Fatalf("%s: Rounds %d, Round %d, Dim %d, Std %v", call, m.Rounds(), m.Round(), m.Dim(), m.Std())
		}
		if dim > 64 {
			return
		}
		checkDrawn(t, call, m, fz, dim, std, seed, start, dense)
	})
}

// checkDrawn draws every remaining round of m and compares it with the
// dense operator's stream of the same seed (or, for a dense m, the
// structured one's), to 1e-9 of std times the sum of |M| |Z| bounded by
// the largest entries.
func checkDrawn(t *testing.T, call string, m Mechanism, fz *factorize.Factorization, dim int, std float64, seed uint64, start int, dense bool) {
	t.Helper()
	opts := []Option{WithSeed(seed), WithStartRound(start), WithWorkers(1)}
	if !dense {
		opts = append(opts, WithDense())
	}
	ref, err := New(fz, dim, std, opts...)
	if err != nil {
		t.Fatalf("%s: the second mechanism: %v", call, err)
	}
	got, want := make([]float64, dim), make([]float64, dim)
	for r := start; r < m.Rounds(); r++ {
		err1, err2 := m.Next(got), ref.Next(want)
		var oe *OverflowError
		if errors.As(err1, &oe) {
			if std < 1e300 {
				t.Fatalf("%s: round %d: %v with std %v", call, r, err1, std)
			}
			return
		}
		if err1 != nil || err2 != nil && !errors.As(err2, &oe) {
			t.Fatalf("%s: round %d: %v, %v", call, r, err1, err2)
		}
		for i := range got {
			if math.IsNaN(got[i]) || math.IsInf(got[i], 0) {
				t.Fatalf("%s: round %d: entry %d is %v", call, r, i, got[i])
			}
			if err2 == nil && !(math.Abs(got[i]-want[i]) <= 1e-9*(math.Abs(want[i])+std)*float64(m.Rounds())*8+1e-320) {
				t.Fatalf("%s: round %d: entry %d is %v, the other operator's %v", call, r, i, got[i], want[i])
			}
		}
	}
	if err := m.Next(got); !errors.Is(err, ErrExhausted) {
		t.Fatalf("%s: after the last round: %v, want ErrExhausted", call, err)
	}
}
