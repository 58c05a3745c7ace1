package mechanism

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dpmf/dpmf/factorize"
)

// TestMemoryAutoIsReported: above DefaultKeepLimit, MemoryAuto regenerates
// past rows, and says so in String and MemoryOf; an explicit choice is
// reported as such. (New allocates no per-dimension state, so a huge
// dimension costs nothing here.)
func TestMemoryAutoIsReported(t *testing.T) {
	w, err := factorize.Prefix(4)
	if err != nil {
		t.Fatal(err)
	}
	f, err := factorize.OptimalStrategy{}.Factorize(context.Background(), w, factorize.SingleParticipation())
	if err != nil {
		t.Fatal(err)
	}
	// 4 rows of dimension 2^26 + 1 take just over 2 GiB; 4 rows of 2^20
	// take 32 MiB.
	big, small := 1<<26+1, 1<<20
	for _, tc := range []struct {
		dim      int
		opts     []Option
		mode     Memory
		auto     bool
		contains string
	}{
		{big, nil, MemoryRegenerate, true, "dense(regenerate: chosen by MemoryAuto, keeping the past rows would take more than 1 GiB)"},
		{small, nil, MemoryKeep, false, "dense(keep)"},
		{big, []Option{WithMemory(MemoryKeep)}, MemoryKeep, false, "dense(keep)"},
		{small, []Option{WithMemory(MemoryRegenerate)}, MemoryRegenerate, false, "dense(regenerate)"},
	} {
		m, err := New(f, tc.dim, 1, append(tc.opts, WithSeed(1), WithDense())...)
		if err != nil {
			t.Fatal(err)
		}
		mode, auto, ok := MemoryOf(m)
		if !ok || mode != tc.mode || auto != tc.auto {
			t.Errorf("dim %d %d options: MemoryOf = %v, %v, %v, want %v, %v, true", tc.dim, len(tc.opts), mode, auto, ok, tc.mode, tc.auto)
		}
		if s := m.(fmt.Stringer).String(); s != tc.contains {
			t.Errorf("dim %d: String %q, want %q", tc.dim, s, tc.contains)
		}
	}
	tree, err := factorize.TreeStrategy{}.Factorize(context.Background(), w, factorize.SingleParticipation())
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(tree, 3, 1, WithSeed(1))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := MemoryOf(m); ok || strings.Contains(m.(fmt.Stringer).String(), "regenerate") {
		t.Errorf("tree: MemoryOf ok %v, String %q", ok, m.(fmt.Stringer).String())
	}
}

// A hostile number of workers does not multiply New's allocation: each
// worker holds a noise generator (about 500 bytes), and New made one per
// block of 4096 coordinates up to WithWorkers, so that WithWorkers(2^20)
// with a dimension of 2^40 allocated 0.5 GB and WithWorkers(math.MaxInt)
// 2^28 generators, over 100 GB (found by FuzzMechanism). The identity
// operator holds no state, so New must allocate almost nothing.
func TestManyWorkersBounded(t *testing.T) {
	w, err := factorize.Prefix(4)
	if err != nil {
		t.Fatal(err)
	}
	id, err := factorize.IdentityStrategy{}.Factorize(context.Background(), w, factorize.SingleParticipation())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1 << 20, math.MaxInt} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if _, err := New(id, maxDim, 1, WithWorkers(n), WithSeed(1)); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
			t.Errorf("New(identity, 2^40, WithWorkers(%d)) allocated %d bytes", n, got)
		}
	}
}

// WithStartRound replays the rounds before it without a vector of
// dimension d and without the std: the Toeplitz operator of sqrt declares
// no state vectors, so New accepted a dimension of 2^24 on a machine of 64
// MiB and then allocated 128 MiB to replay (8 TiB at 2^40), and with a
// std near the float64 maximum the replay by Next never advanced past the
// first overflowing round, so that New never returned (found by
// FuzzMechanism). The replayed stream's next round is the uninterrupted
// one's, entry for entry.
func TestStartRoundReplayBounded(t *testing.T) {
	w, err := factorize.Prefix(4)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sqrt, err := factorize.SqrtStrategy{}.Factorize(ctx, w, factorize.SingleParticipation())
	if err != nil {
		t.Fatal(err)
	}
	func() {
		defer func(f func() float64) { machineBytes = f }(machineBytes)
		machineBytes = func() float64 { return 64 << 20 }
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if _, err := New(sqrt, 1<<24, 1, WithMemory(MemoryRegenerate), WithStartRound(1), WithSeed(1), WithWorkers(1)); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		if got := after.TotalAlloc - before.TotalAlloc; got > 8<<20 {
			t.Errorf("New(sqrt, 2^24, WithStartRound(1)) allocated %d bytes", got)
		}
	}()
	for _, name := range factorize.Strategies() {
		s, err := factorize.ParseStrategy(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := s.Factorize(ctx, w, factorize.SingleParticipation())
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			m, err := New(f, 64, math.MaxFloat64, WithStartRound(2), WithSeed(3))
			if err == nil {
				err = m.Next(make([]float64, 64))
			}
			done <- err
		}()
		select {
		case err := <-done:
			var oe *OverflowError
			if !errors.As(err, &oe) {
				t.Errorf("%s: std MaxFloat64 from round 2: %v, want an *OverflowError", name, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: New with std MaxFloat64 and WithStartRound(2) did not return", name)
		}
		// From round 2 with std 1: round 2 of the uninterrupted stream.
		whole, err := New(f, 9, 1, WithSeed(3))
		if err != nil {
			t.Fatal(err)
		}
		resumed, err := New(f, 9, 1, WithSeed(3), WithStartRound(2))
		if err != nil {
			t.Fatal(err)
		}
		want, got := make([]float64, 9), make([]float64, 9)
		for range 3 {
			if err := whole.Next(want); err != nil {
				t.Fatal(err)
			}
		}
		if err := resumed.Next(got); err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: round 2 resumed %v (%v), uninterrupted %v", name, got, err, want)
		}
	}
}

// MemoryAuto keeps past rows only where they fit in the machine: sqrt's
// Toeplitz operator over 3 rounds at dimension 2^24 keeps 3 rows of 128
// MiB, under DefaultKeepLimit but over a machine of 256 MiB, so it
// regenerates them and says why; before, it kept them, which New's
// memory check (made for MemoryKeep only) let through (found by
// FuzzMechanism). An explicit MemoryKeep is refused there.
func TestMemoryAutoWithinMachine(t *testing.T) {
	defer func(f func() float64) { machineBytes = f }(machineBytes)
	machineBytes = func() float64 { return 256 << 20 }
	f := sqrtFactorization(t, 3)
	m, err := New(f, 1<<24, 1, WithSeed(1))
	if err != nil {
		t.Fatal(err)
	}
	requireRegeneratedForMachine(t, m)
	// The reason mfsolve -noise prints: the machine's 256 MiB, not the
	// 1 GiB of DefaultKeepLimit.
	if got, want := AutoMemoryReason(m), "keeping the past rows would take more than this machine's memory (0.25 GiB with swap)"; got != want {
		t.Errorf("AutoMemoryReason %q, want %q", got, want)
	}
	_, err = New(f, 1<<24, 1, WithSeed(1), WithMemory(MemoryKeep))
	requireParam(t, err, "dim")
	if m, err = New(f, 1<<20, 1, WithSeed(1)); err != nil {
		t.Fatal(err)
	}
	if mode, auto, _ := MemoryOf(m); mode != MemoryKeep || auto {
		t.Errorf("dimension 2^20: MemoryOf = %v, %v; want keep", mode, auto)
	}
}

// MemoryAuto counts the index of the kept rows, as MemoryKeep's check and
// StateBytes do: sqrt's Toeplitz operator over R = 1000 rounds at d = 1
// keeps 8 bytes per row and indexes them with two slice headers per row
// (48 bytes on 64-bit platforms, 24 on 32-bit ones), 56000 bytes in all
// (32000). On a machine of 20 KiB MemoryKeep is refused; MemoryAuto must then regenerate, and say it
// chose to because of the machine's memory. Before, it compared the rows'
// 8000 bytes alone with the machine, kept them, and allocated the 48000
// bytes of headers up front (at d = 1 the index is 6 times the rows, and
// DefaultKeepLimit was exceeded the same way).
func TestMemoryAutoCountsHeaders(t *testing.T) {
	defer func(f func() float64) { machineBytes = f }(machineBytes)
	machineBytes = func() float64 { return 20 << 10 }
	const r = 1000
	f := sqrtFactorization(t, r)
	if rows, headers := 8*r, r*2*int(sliceHeader); float64(rows) > machineBytes() || float64(rows+headers) <= machineBytes() {
		t.Fatalf("rows %d and headers %d bytes: the case does not separate them on a machine of %v bytes", rows, headers, machineBytes())
	}
	_, err := New(f, 1, 1, WithSeed(1), WithMemory(MemoryKeep))
	requireParam(t, err, "dim")
	m, err := New(f, 1, 1, WithSeed(1))
	if err != nil {
		t.Fatal(err)
	}
	requireRegeneratedForMachine(t, m)
	if b := m.StateBytes(); b != 0 {
		t.Errorf("StateBytes %d after New, want 0 (nothing kept)", b)
	}
}

// WithDense forms, before any state, the dense noise operator M = A^{-1} B
// (R x m float64) and the lists of its rows' nonzero entries (an index
// and a coefficient each, R (R+1) / 2 of them for a lower-triangular M),
// and first the dense factors B and C (2 R m) where f holds none (a lean
// semiseparable result): at R = 300, 0.72 MB for M, 0.72 MB for the lists
// and 1.44 MB for B and C. On a machine of 1 MiB New must refuse both
// with a *ParamError naming the factorization, as it refuses a state
// beyond the machine: before, it checked only the stream's state (none
// for the dense operator's regenerate mode), and at R = 10^5 the factors
// alone (160 GB) ended the process out of memory. On a machine of 1 GiB
// both are accepted.
func TestDenseOperatorWithinMachine(t *testing.T) {
	defer func(f func() float64) { machineBytes = f }(machineBytes)
	const r = 300
	w, err := factorize.Prefix(r)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	lean, err := factorize.SemisepStrategy{Buffers: 3}.Factorize(ctx, w, factorize.SingleParticipation())
	if err != nil {
		t.Fatal(err)
	}
	full, err := factorize.SemisepStrategy{Buffers: 3, Factors: true}.Factorize(ctx, w, factorize.SingleParticipation())
	if err != nil {
		t.Fatal(err)
	}
	if lean.B != nil || full.B == nil {
		t.Fatal("the lean result holds factors, or the full one none")
	}
	for _, f := range []*factorize.Factorization{lean, full} {
		machineBytes = func() float64 { return 1 << 20 }
		_, err := New(f, 1, 1, WithDense(), WithMemory(MemoryRegenerate), WithSeed(1))
		requireParam(t, err, "factorization")
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("a multi-line error: %q", err)
		}
		machineBytes = func() float64 { return 1 << 30 }
		if _, err := New(f, 1, 1, WithDense(), WithMemory(MemoryRegenerate), WithSeed(1)); err != nil {
			t.Errorf("factors %v, a machine of 1 GiB: %v", f.B != nil, err)
		}
	}
}

// TestKeepBeyondAddressSpace checks that on a 32-bit platform a stream
// whose kept past rows exceed the process's 4 GiB address space is a
// *ParamError from New: before, the check compared them with the
// machine's memory (24 GiB here), New succeeded, and drawing the rows
// would have ended the process out of memory. The Toeplitz operator keeps
// R rows of dimension d: 8 R d = 8 GiB at R = 64, d = 2^24. On 64-bit
// platforms the limit is the machine's memory, tested above.
func TestKeepBeyondAddressSpace(t *testing.T) {
	if math.MaxInt > 1<<40 {
		t.Skip("64-bit platform: the address space is not the limit")
	}
	if machineBytes() == 0 {
		t.Skip("the machine's memory is unknown here: the check is off")
	}
	w, err := factorize.Prefix(64)
	if err != nil {
		t.Fatal(err)
	}
	f, err := factorize.SqrtStrategy{}.Factorize(context.Background(), w, factorize.Participation{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(f, 1<<24, 1, WithSeed(1), WithMemory(MemoryKeep))
	var pe *ParamError
	if !errors.As(err, &pe) || pe.Param != "dim" {
		t.Fatalf("New with 8 GiB of kept rows on a 32-bit platform: %v, want a *ParamError for dim", err)
	}
}

// sqrtFactorization returns the square-root factorization of prefix sums
// over r rounds under single participation.
func sqrtFactorization(t *testing.T, r int) *factorize.Factorization {
	t.Helper()
	w, err := factorize.Prefix(r)
	if err != nil {
		t.Fatal(err)
	}
	f, err := factorize.SqrtStrategy{}.Factorize(context.Background(), w, factorize.SingleParticipation())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// requireRegeneratedForMachine checks that MemoryAuto chose to regenerate
// m's past rows, and that m's String says it was for the machine's memory.
func requireRegeneratedForMachine(t *testing.T, m Mechanism) {
	t.Helper()
	if mode, auto, ok := MemoryOf(m); mode != MemoryRegenerate || !auto || !ok {
		t.Errorf("MemoryOf = %v, %v, %v; want regenerate, chosen by MemoryAuto", mode, auto, ok)
	}
	if s := m.(fmt.Stringer).String(); !strings.Contains(s, "machine's memory") {
		t.Errorf("String %q does not say why", s)
	}
}
