package mechanism

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/factorize"
	"gonum.org/v1/gonum/mat"
)

// requireParam checks that err is a *ParamError about param.
func requireParam(t *testing.T, err error, param string) {
	t.Helper()
	var pe *ParamError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T), want a *ParamError about %q", err, err, param)
	}
	if pe.Param != param {
		t.Fatalf("error %q is about %q, want %q", err, pe.Param, param)
	}
}

// Missing arguments and bad options are *ParamErrors, never panics.
func TestMissingArgumentsAreParamErrors(t *testing.T) {
	one := mat.NewDense(1, 1, []float64{1})
	for _, f := range []*factorize.Factorization{nil, {}, {B: one, C: one}} {
		_, err := New(f, 1, 1)
		requireParam(t, err, "factorization")
	}
	_, err := NoiseMatrix(nil)
	requireParam(t, err, "mechanism")
	f := sqrtFactorization(t, 3)
	_, err = New(f, 1, 1, nil)
	requireParam(t, err, "option")
	_, err = New(f, 0, 1)
	requireParam(t, err, "dim")
	_, err = New(f, 1, -1)
	requireParam(t, err, "std")
	_, err = New(f, 1, 1, WithWorkers(0))
	requireParam(t, err, "workers")
	_, err = New(f, 1, 1, WithStartRound(4))
	requireParam(t, err, "start round")
}

// The all-zero key, what an unset [32]byte holds, is refused: its noise is
// public, as SeedKey's of a known seed is. Before, New accepted it and
// drew noise anyone could draw again. One nonzero byte anywhere is a key.
func TestZeroKeyRefused(t *testing.T) {
	f := sqrtFactorization(t, 3)
	_, err := New(f, 1, 1, WithKey([32]byte{}))
	requireParam(t, err, "key")
	if strings.Contains(err.Error(), "\n") {
		t.Fatalf("error %q is not one line", err)
	}
	for _, i := range []int{0, 31} {
		var k [32]byte
		k[i] = 1
		if _, err := New(f, 1, 1, WithKey(k)); err != nil {
			t.Fatalf("key with byte %d set: %v", i, err)
		}
	}
}

// A standard deviation near the top of the float64 range gives an
// OverflowError, never Inf noise, and the stream stays ended.
func TestOverflowIsAnError(t *testing.T) {
	w, err := factorize.Prefix(4)
	if err != nil {
		t.Fatal(err)
	}
	f, err := factorize.IdentityStrategy{}.Factorize(context.Background(), w, factorize.SingleParticipation())
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(f, 1000, 1e308, WithSeed(1))
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]float64, 1000)
	err = m.Next(dst)
	var oe *OverflowError
	if !errors.As(err, &oe) || oe.Round != 0 {
		t.Fatalf("Next with std 1e308: %v, want an OverflowError for round 0", err)
	}
	for i, v := range dst {
		if v != 0 {
			t.Fatalf("dst[%d] = %v after an overflow, want 0", i, v)
		}
	}
	if err2 := m.Next(dst); !errors.As(err2, &oe) {
		t.Errorf("second Next: %v, want the OverflowError again", err2)
	}
	if _, err := NoiseMatrix(m); err == nil {
		t.Error("NoiseMatrix of an overflowing stream succeeded")
	}
	// A large but safe std streams finite noise.
	m, _ = New(f, 1000, 1e300, WithSeed(1))
	if err := m.Next(dst); err != nil {
		t.Fatalf("std 1e300: %v", err)
	}
}

// Sizes past what an int can count are *ParamErrors, not allocation
// panics: a dimension above 2^40 (before, accepted and then a makeslice
// panic or an out-of-memory crash where state vectors are allocated), and a
// noise matrix of more than MaxInt bytes (before, gonum's NewDense panicked
// on the overflowing length).
func TestHugeSizesAreParamErrors(t *testing.T) {
	w, err := factorize.Prefix(64)
	if err != nil {
		t.Fatal(err)
	}
	f, err := factorize.IdentityStrategy{}.Factorize(context.Background(), w, factorize.SingleParticipation())
	if err != nil {
		t.Fatal(err)
	}
	for _, dim := range []int{maxDim + 1, math.MaxInt} {
		_, err := New(f, dim, 1)
		requireParam(t, err, "dim")
	}
	_, err = NoiseMatrix(hugeMechanism{})
	requireParam(t, err, "mechanism")
}

// hugeMechanism claims 2^36 rounds of dimension 2^40 (2^79 bytes in all;
// 2^20 rounds of dimension 2^24 on a 32-bit platform); it draws nothing.
type hugeMechanism struct{}

func (hugeMechanism) Next([]float64) error { return errors.New("not drawn") }
func (hugeMechanism) Round() int           { return 0 }
func (hugeMechanism) Rounds() int          { return 1 << (strconv.IntSize/2 + 4) }
func (hugeMechanism) Dim() int             { return 1 << (strconv.IntSize/2 + 8) }
func (hugeMechanism) Std() float64         { return 1 }
func (hugeMechanism) StateBytes() int64    { return 0 }

// Allocations beyond the machine's memory are *ParamErrors up front, not
// the runtime's fatal out-of-memory error (which no recover catches):
// before, NoiseMatrix of 64 rounds of dimension 2^40 (512 TiB) ended the
// process. With the machine's memory set to 1 MiB, the tree's state of
// ceil(log2 64) + 1 vectors of dimension 2^15 (256 KiB each) and a 64 x
// 4096 noise matrix (2 MiB) are refused, and a 64 x 1024 one (512 KiB) is
// drawn.
func TestBeyondMemoryIsAParamError(t *testing.T) {
	w, err := factorize.Prefix(64)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	id, err := factorize.IdentityStrategy{}.Factorize(ctx, w, factorize.SingleParticipation())
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(id, maxDim, 1) // 2^40, or 2^27-1 on a 32-bit platform
	if err != nil {
		t.Fatal(err)
	}
	_, err = NoiseMatrix(m)
	requireParam(t, err, "mechanism")

	defer func(f func() float64) { machineBytes = f }(machineBytes)
	machineBytes = func() float64 { return 1 << 20 }
	tree, err := factorize.TreeStrategy{}.Factorize(ctx, w, factorize.SingleParticipation())
	if err != nil {
		t.Fatal(err)
	}
	if states := tree.Operator.Memory().States; states*(1<<15)*8 <= 1<<20 {
		t.Fatalf("the tree's %d states fit", states)
	}
	_, err = New(tree, 1<<15, 1)
	requireParam(t, err, "dim")
	m, err = New(id, 4096, 1)
	if err != nil {
		t.Fatal(err)
	}
	_, err = NoiseMatrix(m)
	requireParam(t, err, "mechanism")
	m, err = New(id, 1024, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NoiseMatrix(m); err != nil {
		t.Errorf("64 x 1024 in 1 MiB: %v", err)
	}
}

// TestHandAssembledFactorsChecked streams factorizations assembled by hand,
// which only WithDense can stream (the dense operator M = A^{-1} B), and
// one with another factorization's operator. The noise B Z that M Z adds
// up to is calibrated by C's sensitivity only when B C = A, so factors that
// do not reproduce the workload must be refused, as must factors of the
// wrong size, non-finite factors, negative availability rounds and an
// operator of another number of rounds: each is a one-line error, never a
// panic or a stream. Before, B = A with C = I/2 (gamma 1/2 by the
// factors' own metrics) streamed Z, twice the sensitivity that calibrated
// it; B of 5 rounds for a workload of 10 streamed 5 rounds; a NaN in B was
// reported as an overflow of std; a C of 5 columns for R = 10 and a
// negative availability round panicked ("mat: column index out of
// range"); and an operator of 5 rounds streamed for a workload of 10.
// The reference case, B = A and C = I, must stream Z itself (C^{-1} Z = Z:
// the identity strategy's stream, bit for bit), and without WithDense the
// error must name it (before, it called the factorization a loss-only
// result).
func TestHandAssembledFactorsChecked(t *testing.T) {
	const r, d = 10, 3
	w, err := factorize.Prefix(r)
	if err != nil {
		t.Fatal(err)
	}
	a := mat.DenseCopyOf(w.Matrix())
	eye := func(n int, v float64) *mat.Dense {
		m := mat.NewDense(n, n, nil)
		for i := 0; i < n; i++ {
			m.Set(i, i, v)
		}
		return m
	}
	avail := func(n int) []int {
		av := make([]int, n)
		for i := range av {
			av[i] = i
		}
		return av
	}
	stream := func(f *factorize.Factorization, opts ...Option) (*mat.Dense, error) {
		m, err := New(f, d, 1, append([]Option{WithSeed(5)}, opts...)...)
		if err != nil {
			return nil, err
		}
		return NoiseMatrix(m)
	}
	ok := &factorize.Factorization{Workload: w, B: a, C: eye(r, 1), Available: avail(r)}
	got, err := stream(ok, WithDense())
	if err != nil {
		t.Fatalf("B = A, C = I: %v", err)
	}
	id, err := factorize.IdentityStrategy{}.Factorize(context.Background(), w, factorize.SingleParticipation())
	if err != nil {
		t.Fatal(err)
	}
	want, err := stream(id)
	if err != nil {
		t.Fatal(err)
	}
	if !mat.Equal(got, want) {
		t.Errorf("B = A, C = I streams other noise than Z")
	}
	// Without WithDense the error says that it is needed.
	if _, err := stream(ok); err == nil || !strings.Contains(err.Error(), "WithDense") {
		t.Errorf("factors without an operator, no WithDense: error %v, want one that names WithDense", err)
	}

	nan := mat.DenseCopyOf(a)
	nan.Set(3, 1, math.NaN())
	negative := avail(r)
	negative[4] = -2
	a5, err := factorize.Prefix(5)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		f    *factorize.Factorization
		want string
	}{
		{"B C = A/2", &factorize.Factorization{Workload: w, B: a, C: eye(r, 0.5), Available: avail(r)}, "reproduce"},
		{"B C = 2A", &factorize.Factorization{Workload: w, B: a, C: eye(r, 2), Available: avail(r)}, "reproduce"},
		{"B of 5 rounds", &factorize.Factorization{Workload: w, B: mat.DenseCopyOf(a5.Matrix()), C: eye(5, 1), Available: avail(5)}, "R = 10"},
		{"C of 5 columns", &factorize.Factorization{Workload: w, B: a, C: mat.NewDense(r, 5, nil), Available: avail(r)}, "R = 10"},
		{"NaN in B", &factorize.Factorization{Workload: w, B: nan, C: eye(r, 1), Available: avail(r)}, "NaN"},
		{"negative availability", &factorize.Factorization{Workload: w, B: a, C: eye(r, 1), Available: negative}, "availability round -2"},
	} {
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("%s: panic %v", tc.name, p)
				}
			}()
			_, err := stream(tc.f, WithDense())
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%s: error %v, want one line about %q", tc.name, err, tc.want)
			}
		}()
	}

	short, err := factorize.BLTStrategy{}.Factorize(context.Background(), a5, factorize.SingleParticipation())
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(&factorize.Factorization{Workload: w, Operator: short.Operator}, d, 1)
	requireParam(t, err, "factorization")
}

// hugeStateOp is an operator that declares 2^30 state vectors and
// allocates none: a state of 2^73 bytes at dimension 2^40, more than an
// int can count on any platform.
type hugeStateOp struct{}

func (hugeStateOp) Rounds() int    { return 2 }
func (hugeStateOp) NoiseRows() int { return 2 }
func (hugeStateOp) Memory() factorize.OperatorMemory {
	return factorize.OperatorMemory{States: 1 << 30}
}
func (hugeStateOp) NewState(int) factorize.OperatorState           { return hugeState{} }
func (hugeStateOp) String() string                                 { return "huge" }
func (hugeState) Prepare(int)                                      {}
func (hugeState) Block(factorize.NoiseSource, int, int, []float64) {}

type hugeState struct{}

// TestStateFitsAnInt refuses state vectors whose size in bytes does not
// fit in an int, whatever the machine's memory (here claimed to be 2^80
// bytes): no allocation of them can succeed, and the element counts of
// their slices overflow. (Past rows kept under MemoryKeep are held block
// by block and are not limited by this: TestMemoryAutoIsReported keeps
// just over 2 GiB of them on 32-bit platforms too.) Before, only the machine's memory was checked, and on a
// 32-bit platform on a host of 64 GB the semiseparable operator of order
// 33 at dimension 130150525 (state 34 GB, 33 x 130150525 = 2^32 + 29
// elements) was accepted with a state of 29 float64s, and its first
// round would have panicked (a slice of the state out of range). Run with
// GOARCH=386 for that case; the operator declaring 2^30 state vectors
// checks the rule on every platform.
func TestStateFitsAnInt(t *testing.T) {
	defer func(f func() float64) { machineBytes = f }(machineBytes)
	machineBytes = func() float64 { return 1 << 80 }
	w, err := factorize.Prefix(2)
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(&factorize.Factorization{Workload: w, Operator: hugeStateOp{}}, maxDim, 1)
	requireParam(t, err, "dim")
	if strconv.IntSize == 64 {
		return
	}
	w, err = factorize.Prefix(40)
	if err != nil {
		t.Fatal(err)
	}
	f, err := factorize.SemisepStrategy{Buffers: 33}.Factorize(context.Background(), w, factorize.SingleParticipation())
	if err != nil {
		t.Fatal(err)
	}
	if k := f.Operator.Memory().States; k != 33 {
		t.Fatalf("%v declares %d state vectors, want 33", f.Operator, k)
	}
	_, err = New(f, 130150525, 1)
	requireParam(t, err, "dim")
}

// TestHandBuiltBLTChecked streams BLT parameters assembled by hand
// (factorize.BLTParams is the one operator type of package factorize with
// exported fields). Valid ones stream C^{-1} Z = diag(s) T_d Z with
// d_0 = 1, d_k = sum_i w_i lambda_i^(k-1), checked against that sum formed
// here from the independent stream's Z (the identity strategy, same seed).
// Invalid ones are a *ParamError about the factorization: before, a zero
// scale streamed a round of zero noise (round 2 here, whatever the
// calibration), fewer decay rates than weights panicked in Next (index out
// of range), nil parameters panicked in New, and a NaN weight was reported
// as an overflow of std.
func TestHandBuiltBLTChecked(t *testing.T) {
	const r, d = 4, 3
	w, err := factorize.Prefix(r)
	if err != nil {
		t.Fatal(err)
	}
	id, err := factorize.IdentityStrategy{}.Factorize(context.Background(), w, factorize.SingleParticipation())
	if err != nil {
		t.Fatal(err)
	}
	draw := func(f *factorize.Factorization) (*mat.Dense, error) {
		m, err := New(f, d, 1, WithSeed(9))
		if err != nil {
			return nil, err
		}
		return NoiseMatrix(m)
	}
	z, err := draw(id)
	if err != nil {
		t.Fatal(err)
	}
	p := &factorize.BLTParams{Weights: []float64{0.5, -0.25}, Lambdas: []float64{0.9, 0.3}, Scale: []float64{1, 0.5, 2, 1}}
	got, err := draw(&factorize.Factorization{Workload: w, Operator: p})
	if err != nil {
		t.Fatalf("valid BLT parameters: %v", err)
	}
	for i := 0; i < r; i++ {
		for c := 0; c < d; c++ {
			want := z.At(i, c)
			for k := 1; k <= i; k++ {
				want += (0.5*math.Pow(0.9, float64(k-1)) - 0.25*math.Pow(0.3, float64(k-1))) * z.At(i-k, c)
			}
			want *= p.Scale[i]
			if math.Abs(got.At(i, c)-want) > 1e-14 {
				t.Errorf("round %d coordinate %d: %v, want %v", i, c, got.At(i, c), want)
			}
		}
	}
	for name, p := range map[string]*factorize.BLTParams{
		"zero scale":          {Weights: []float64{0.5}, Lambdas: []float64{0.9}, Scale: []float64{1, 1, 0, 1}},
		"fewer decay rates":   {Weights: []float64{0.5, 0.2}, Lambdas: []float64{0.9}, Scale: []float64{1, 1, 1, 1}},
		"NaN weight":          {Weights: []float64{math.NaN()}, Lambdas: []float64{0.9}, Scale: []float64{1, 1, 1, 1}},
		"infinite decay rate": {Weights: []float64{0.5}, Lambdas: []float64{math.Inf(1)}, Scale: []float64{1, 1, 1, 1}},
		"nil parameters":      nil,
	} {
		func() {
			defer func() {
				if v := recover(); v != nil {
					t.Errorf("%s: panic %v", name, v)
				}
			}()
			_, err := draw(&factorize.Factorization{Workload: w, Operator: p})
			var pe *ParamError
			if !errors.As(err, &pe) || pe.Param != "factorization" {
				t.Errorf("%s: error %v, want a *ParamError about the factorization", name, err)
			}
		}()
	}
}

// A subnormal std is refused where it enters, as plan.Plan.Calibrate and
// accountant.Scale refuse one: below 2^-1022 a float64 keeps fewer
// significant bits (5e-324 = 2^-1074 has one), so std x z would be
// rounded to a multiple of 2^-1074 and the noise would not have the std it
// claims. Before, New accepted every std > 0. The smallest normal float64
// is accepted.
func TestSubnormalStdRefused(t *testing.T) {
	f := sqrtFactorization(t, 3)
	for _, std := range []float64{5e-324, 1e-310, math.Nextafter(0x1p-1022, 0)} {
		_, err := New(f, 1, std)
		requireParam(t, err, "std")
		if msg := err.Error(); strings.ContainsAny(msg, "\n\r") || !strings.Contains(msg, "std = ") || !strings.Contains(msg, "at least 2.2e-308") {
			t.Errorf("New with std %v: error %q, want one line naming std and the normal range", std, msg)
		}
	}
	m, err := New(f, 1, 0x1p-1022)
	if err != nil {
		t.Fatalf("New with the smallest normal std 2^-1022: %v", err)
	}
	if m.Std() != 0x1p-1022 {
		t.Errorf("Std() = %v, want 2^-1022", m.Std())
	}
}
