package mechanism

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/dpmf/dpmf/factorize"
	"gonum.org/v1/gonum/mat"
)

// testCase is a factorization and the options that select one mechanism.
type testCase struct {
	name string
	f    *factorize.Factorization
	opts []Option
	want string // the mechanism's String()
}

// cases returns every mechanism for the R-round prefix workload.
func cases(t *testing.T, r int) []testCase {
	t.Helper()
	ctx := context.Background()
	w, err := factorize.Prefix(r)
	if err != nil {
		t.Fatal(err)
	}
	get := func(s factorize.Strategy) *factorize.Factorization {
		f, err := s.Factorize(ctx, w, factorize.Participation{})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	id := get(factorize.IdentityStrategy{})
	tree := get(factorize.TreeStrategy{})
	sq := get(factorize.SqrtStrategy{})
	sqn := get(factorize.SqrtStrategy{Normalized: true})
	band3 := get(factorize.BandedStrategy{Bands: 3})
	bandR := get(factorize.BandedStrategy{Bands: r})
	blt := get(factorize.BLTStrategy{Buffers: 2})
	opt := get(factorize.OptimalStrategy{})
	semi := get(factorize.SemisepStrategy{Buffers: 3, Factors: true})
	bisr := get(factorize.BISRStrategy{Bands: 4})
	bandinv := get(factorize.BandInvStrategy{Bands: 3})
	btoep := get(factorize.BandedToeplitzStrategy{Bands: 3})
	keep, regen := WithMemory(MemoryKeep), WithMemory(MemoryRegenerate)
	return []testCase{
		{"identity", id, nil, "independent"},
		{"tree", tree, nil, fmt.Sprintf("tree(buffers=%d)", bitsLen(r)-1)},
		{"sqrt/keep", sq, []Option{keep}, "toeplitz(keep)"},
		{"sqrt/regenerate", sq, []Option{regen}, "toeplitz(regenerate)"},
		{"sqrt-normalized/auto", sqn, nil, "toeplitz(keep)"},
		{"banded3", band3, nil, "banded(b=3)"},
		{"bandedR", bandR, nil, fmt.Sprintf("banded(b=%d)", r)},
		{"blt", blt, nil, "blt(k=2)"},
		{"optimal", opt, nil, fmt.Sprintf("semiseparable(K=%d)", opt.Operator.Memory().States)},
		{"dense/optimal/keep", opt, []Option{WithDense(), keep}, "dense(keep)"},
		{"dense/optimal/regenerate", opt, []Option{WithDense(), regen}, "dense(regenerate)"},
		{"dense/identity", id, []Option{WithDense()}, "dense(keep)"},
		{"dense/tree/keep", tree, []Option{WithDense(), keep}, "dense(keep)"},
		{"dense/tree/regenerate", tree, []Option{WithDense(), regen}, "dense(regenerate)"},
		{"dense/sqrt-normalized/keep", sqn, []Option{WithDense(), keep}, "dense(keep)"},
		{"dense/sqrt-normalized/regenerate", sqn, []Option{WithDense(), regen}, "dense(regenerate)"},
		{"dense/blt/regenerate", blt, []Option{WithDense(), regen}, "dense(regenerate)"},
		{"semiseparable", semi, nil, "semiseparable(K=3)"},
		{"dense/semiseparable", semi, []Option{WithDense(), regen}, "dense(regenerate)"},
		{"bisr", bisr, nil, "banded-inverse(p=4)"},
		{"bandinv", bandinv, nil, "banded-inverse(p=3)"},
		{"banded-toeplitz", btoep, nil, "banded(b=3)"},
	}
}

func bitsLen(r int) int {
	n := 0
	for ; r > 0; r >>= 1 {
		n++
	}
	return n
}

// explicitNoise returns std * A^{-1} B Z (C^{-1} Z via C for square
// factors) computed densely by gonum's LU solver, with Z drawn row by row
// from the source with the key of WithSeed(seed).
func explicitNoise(t *testing.T, f *factorize.Factorization, dim int, std float64, seed uint64) *mat.Dense {
	t.Helper()
	b, c, err := f.Factors()
	if err != nil {
		t.Fatal(err)
	}
	r, m := b.Dims()
	g := newGen(&source{key: SeedKey(seed)})
	z := mat.NewDense(m, dim, nil)
	for j := 0; j < m; j++ {
		g.row(j, z.RawRowView(j))
	}
	var y mat.Dense
	if m == r {
		if err := y.Solve(c, z); err != nil {
			t.Fatal(err)
		}
	} else {
		var bz mat.Dense
		bz.Mul(b, z)
		if err := y.Solve(mat.DenseCopyOf(f.Workload.Matrix()), &bz); err != nil {
			t.Fatal(err)
		}
	}
	y.Scale(std, &y)
	return &y
}

// maxRelDiff returns max |a - b| / (1 + max |b|).
func maxRelDiff(a, b *mat.Dense) float64 {
	r, c := b.Dims()
	diff, scale := 0.0, 0.0
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			diff = math.Max(diff, math.Abs(a.At(i, j)-b.At(i, j)))
			scale = math.Max(scale, math.Abs(b.At(i, j)))
		}
	}
	return diff / (1 + scale)
}

// TestMatchesExplicit checks every mechanism against std * C^{-1} Z (or
// A^{-1} B Z) formed densely from the same noise rows Z, with a dimension
// that spans several blocks and ends in a partial one.
func TestMatchesExplicit(t *testing.T) {
	const (
		r    = 13
		dim  = 2*blockLen + 123
		std  = 1.7
		seed = 99
	)
	for _, tc := range cases(t, r) {
		t.Run(tc.name, func(t *testing.T) {
			m, err := New(tc.f, dim, std, append([]Option{WithSeed(seed), WithWorkers(3)}, tc.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(m); got != tc.want {
				t.Errorf("mechanism %s, want %s", got, tc.want)
			}
			got, err := NoiseMatrix(m)
			if err != nil {
				t.Fatal(err)
			}
			want := explicitNoise(t, tc.f, dim, std, seed)
			if d := maxRelDiff(got, want); d > 1e-12 {
				t.Errorf("max relative difference from the explicit noise %.3g, want <= 1e-12", d)
			}
			if m.Round() != r || m.Rounds() != r || m.Dim() != dim || m.Std() != std {
				t.Errorf("Round, Rounds, Dim, Std = %d, %d, %d, %v; want %d, %d, %d, %v", m.Round(), m.Rounds(), m.Dim(), m.Std(), r, r, dim, std)
			}
			dst := make([]float64, dim)
			dst[0] = 42
			if err := m.Next(dst); !errors.Is(err, ErrExhausted) || dst[0] != 42 {
				t.Errorf("Next after the last round: %v, dst[0] = %v; want ErrExhausted and dst unchanged", err, dst[0])
			}
		})
	}
}

// drain returns the noise matrix of a new mechanism.
func drain(t *testing.T, f *factorize.Factorization, dim int, opts ...Option) *mat.Dense {
	t.Helper()
	m, err := New(f, dim, 1, opts...)
	if err != nil {
		t.Fatal(err)
	}
	y, err := NoiseMatrix(m)
	if err != nil {
		t.Fatal(err)
	}
	return y
}

// sameBits reports whether a and b are equal bit for bit.
func sameBits(a, b *mat.Dense) bool {
	ar, ac := a.Dims()
	br, bc := b.Dims()
	if ar != br || ac != bc {
		return false
	}
	for i := 0; i < ar; i++ {
		for j := 0; j < ac; j++ {
			if math.Float64bits(a.At(i, j)) != math.Float64bits(b.At(i, j)) {
				return false
			}
		}
	}
	return true
}

// TestReproducible checks that a seed fixes the stream bit for bit whatever
// the number of goroutines, that keep and regenerate agree bit for bit, and
// that another seed (or the default crypto/rand key) gives another stream.
func TestReproducible(t *testing.T) {
	const (
		r   = 9
		dim = 3*blockLen + 7
	)
	for _, tc := range cases(t, r) {
		t.Run(tc.name, func(t *testing.T) {
			with := func(o ...Option) []Option { return append(append([]Option(nil), tc.opts...), o...) }
			ref := drain(t, tc.f, dim, with(WithSeed(5), WithWorkers(1))...)
			for _, w := range []int{2, 3, 8} {
				if !sameBits(ref, drain(t, tc.f, dim, with(WithSeed(5), WithWorkers(w))...)) {
					t.Errorf("%d goroutines differ from 1", w)
				}
			}
			for _, mode := range []Memory{MemoryKeep, MemoryRegenerate} {
				if !sameBits(ref, drain(t, tc.f, dim, with(WithSeed(5), WithMemory(mode))...)) {
					t.Errorf("memory mode %v differs", mode)
				}
			}
			if sameBits(ref, drain(t, tc.f, dim, with(WithSeed(6))...)) {
				t.Error("seeds 5 and 6 give the same stream")
			}
			if sameBits(drain(t, tc.f, dim, tc.opts...), drain(t, tc.f, dim, tc.opts...)) {
				t.Error("two default (crypto/rand) keys give the same stream")
			}
		})
	}
}

// TestStartRound checks that a stream started at any round r0 continues
// an uninterrupted stream bit for bit, on a vector of two blocks and with
// another number of goroutines than the uninterrupted stream's (1 to 3,
// by round): round r's noise is a function of the key and r alone.
func TestStartRound(t *testing.T) {
	const (
		r   = 13
		dim = blockLen + 5
	)
	for _, tc := range cases(t, r) {
		t.Run(tc.name, func(t *testing.T) {
			ref := drain(t, tc.f, dim, append([]Option{WithSeed(8), WithWorkers(2)}, tc.opts...)...)
			for r0 := 1; r0 < r; r0++ {
				got := drain(t, tc.f, dim, append([]Option{WithSeed(8), WithStartRound(r0), WithWorkers(1 + r0%3)}, tc.opts...)...)
				if !sameBits(got, ref.Slice(r0, r, 0, dim).(*mat.Dense)) {
					t.Errorf("start at round %d (%d goroutines) differs from the uninterrupted stream (2)", r0, 1+r0%3)
				}
			}
			m, err := New(tc.f, dim, 1, append([]Option{WithStartRound(r)}, tc.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := NoiseMatrix(m); !errors.Is(err, ErrExhausted) {
				t.Errorf("NoiseMatrix of a stream started at round R: %v, want ErrExhausted", err)
			}
		})
	}
}

// TestStateBytes checks the state each mechanism reports after its last
// round against the buffers its recurrence needs (and, in keep mode, the
// slice headers that index the kept rows).
func TestStateBytes(t *testing.T) {
	const (
		r   = 13
		dim = 1000
	)
	per := map[string]int{ // vectors of state after the last round
		"identity": 0, "tree": 3, "sqrt/keep": r, "sqrt/regenerate": 0,
		"sqrt-normalized/auto": r, "banded3": 2, "bandedR": r - 1, "blt": 2,
		"dense/identity": r, "dense/tree/keep": r, "dense/tree/regenerate": 0,
		"dense/sqrt-normalized/keep": r, "dense/sqrt-normalized/regenerate": 0,
		"dense/blt/regenerate": 0, "dense/optimal/keep": r, "dense/optimal/regenerate": 0,
		"semiseparable": 3, "dense/semiseparable": 0,
		"bisr": 3, "bandinv": 2, "banded-toeplitz": 2,
	}
	for _, tc := range cases(t, r) {
		m, err := New(tc.f, dim, 1, tc.opts...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := NoiseMatrix(m); err != nil {
			t.Fatal(err)
		}
		n, ok := per[tc.name]
		if tc.name == "optimal" {
			// K state vectors, the order of the solver's rational
			// approximation (about 20 to 60).
			n, ok = tc.f.Operator.Memory().States, true
			if n < 10 || n > 64 {
				t.Errorf("optimal: %d state vectors", n)
			}
		}
		if !ok {
			t.Fatalf("%s: no expected state", tc.name)
		}
		want := int64(n * dim * 8)
		if mode, _, ok := MemoryOf(m); ok && mode == MemoryKeep {
			// Keep mode's index of its rows: a slice header per block of
			// 4096 coordinates of each noise row and one per row (see
			// TestStateBytesCountsHeaders).
			want += int64(m.(*stream).op.NoiseRows()) * (int64(dim+4095)/4096 + 1) * sliceHeader
		}
		if got := m.StateBytes(); got != want {
			t.Errorf("%s: StateBytes %d, want %d", tc.name, got, want)
		}
	}
}

// explicitOperator returns M = A^{-1} B by gonum's LU solver (C^{-1} for
// square factors).
func explicitOperator(t *testing.T, f *factorize.Factorization) *mat.Dense {
	t.Helper()
	b, c, err := f.Factors()
	if err != nil {
		t.Fatal(err)
	}
	r, m := b.Dims()
	var op mat.Dense
	if m == r {
		id := mat.NewDense(r, r, nil)
		for i := 0; i < r; i++ {
			id.Set(i, i, 1)
		}
		if err := op.Solve(c, id); err != nil {
			t.Fatal(err)
		}
		return &op
	}
	if err := op.Solve(mat.DenseCopyOf(f.Workload.Matrix()), b); err != nil {
		t.Fatal(err)
	}
	return &op
}

// TestOtherWorkloads checks the mechanisms of the Toeplitz strategies on
// the momentum workload, and the dense mechanism on a general
// (non-Toeplitz, no banded inverse) workload, against the explicit noise.
func TestOtherWorkloads(t *testing.T) {
	const (
		r   = 10
		dim = 300
	)
	ctx := context.Background()
	mom, err := factorize.Momentum(r, 0.9)
	if err != nil {
		t.Fatal(err)
	}
	a := mat.NewDense(r, r, nil)
	for i := 0; i < r; i++ {
		for j := 0; j <= i; j++ {
			a.Set(i, j, 1+float64((3*i+j)%5)/7) // lower triangular, not Toeplitz
		}
	}
	gen, err := factorize.NewWorkload(a)
	if err != nil {
		t.Fatal(err)
	}
	var fs []*factorize.Factorization
	for _, s := range []factorize.Strategy{factorize.BandedStrategy{Bands: 4}, factorize.BLTStrategy{Buffers: 3},
		factorize.BISRStrategy{Bands: 4}, factorize.BandInvStrategy{Bands: 3}, factorize.BandedToeplitzStrategy{Bands: 4}} {
		f, err := s.Factorize(ctx, mom, factorize.Participation{})
		if err != nil {
			t.Fatal(err)
		}
		fs = append(fs, f)
	}
	for _, w := range []*factorize.Workload{gen, mom} {
		f, err := factorize.IdentityStrategy{}.Factorize(context.Background(), w, factorize.SingleParticipation())
		if err != nil {
			t.Fatal(err)
		}
		fs = append(fs, f)
	}
	for _, f := range fs {
		for _, opts := range [][]Option{nil, {WithDense()}} {
			m, err := New(f, dim, 2, append([]Option{WithSeed(3)}, opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			got, err := NoiseMatrix(m)
			if err != nil {
				t.Fatal(err)
			}
			if d := maxRelDiff(got, explicitNoise(t, f, dim, 2, 3)); d > 1e-11 {
				t.Errorf("%s on %s (%v): max relative difference %.3g from the explicit noise", f.Strategy, f.Workload.Name(), m, d)
			}
		}
	}
}

// TestNewErrors checks that bad parameters are errors, not panics.
func TestNewErrors(t *testing.T) {
	w, _ := factorize.Prefix(5)
	f, err := factorize.IdentityStrategy{}.Factorize(context.Background(), w, factorize.SingleParticipation())
	if err != nil {
		t.Fatal(err)
	}
	blt, err := factorize.BLT(context.Background(), w, 2)
	if err != nil {
		t.Fatal(err)
	}
	bltCopy := *blt
	bltCopy.Operator = nil // a factorization whose operator was dropped
	lossOnly := *f
	lossOnly.B, lossOnly.C, lossOnly.Operator = nil, nil, nil
	acausal := *f
	acausal.C = mat.DenseCopyOf(f.C)
	acausal.C.Set(0, 3, 1)
	for _, tc := range []struct {
		name string
		f    *factorize.Factorization
		dim  int
		std  float64
		opts []Option
	}{
		{"nil factorization", nil, 3, 1, nil},
		{"loss-only", &lossOnly, 3, 1, nil},
		{"dense of a non-causal factorization", &acausal, 3, 1, []Option{WithDense()}},
		{"dense of a loss-only result", &lossOnly, 3, 1, []Option{WithDense()}},
		{"dim 0", f, 0, 1, nil},
		{"std 0", f, 3, 0, nil},
		{"std < 0", f, 3, -1, nil},
		{"std NaN", f, 3, math.NaN(), nil},
		{"std Inf", f, 3, math.Inf(1), nil},
		{"workers 0", f, 3, 1, []Option{WithWorkers(0)}},
		{"memory mode", f, 3, 1, []Option{WithMemory(Memory(7))}},
		{"start < 0", f, 3, 1, []Option{WithStartRound(-1)}},
		{"start > R", f, 3, 1, []Option{WithStartRound(6)}},
		{"no operator", &bltCopy, 3, 1, nil},
	} {
		if m, err := New(tc.f, tc.dim, tc.std, tc.opts...); err == nil {
			t.Errorf("%s: New returned %v and no error", tc.name, m)
		}
	}
	// It still works through the dense operator.
	if _, err := New(&bltCopy, 3, 1, WithDense()); err != nil {
		t.Errorf("dense mechanism of a BLT copy: %v", err)
	}
}

// The participation-aware factorizations (under min-separation) declare
// the structure they stream with, and their structured noise equals the
// explicit noise M Z.
func TestMinSepStrategiesStream(t *testing.T) {
	const r, dim = 24, 3
	w, _ := factorize.Prefix(r)
	p := factorize.MinSeparation(6, 2)
	for _, s := range []factorize.Strategy{factorize.BandedStrategy{}, factorize.BSRStrategy{}, factorize.BLTStrategy{Buffers: 2},
		factorize.BISRStrategy{}, factorize.BandInvStrategy{Bands: 4}, factorize.BandedToeplitzStrategy{}} {
		f, err := s.Factorize(context.Background(), w, p)
		if err != nil {
			t.Fatal(err)
		}
		m, err := New(f, dim, 2, WithSeed(3))
		if err != nil {
			t.Fatalf("%s: %v", s.Name(), err)
		}
		if _, _, past := MemoryOf(m); past {
			t.Errorf("%s: %v reads past noise rows", s.Name(), m)
		}
		got, err := NoiseMatrix(m)
		if err != nil {
			t.Fatal(err)
		}
		if d := maxRelDiff(got, explicitNoise(t, f, dim, 2, 3)); d > 1e-11 {
			t.Errorf("%s (%v): max relative difference %.3g from the explicit noise", s.Name(), m, d)
		}
	}
}

// A semiseparable factorization without dense factors streams from its
// generators, with the same noise as with its factors formed.
func TestSemisepWithoutFactors(t *testing.T) {
	w, err := factorize.Prefix(40)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	full, err := factorize.SemisepStrategy{Buffers: 4, Factors: true}.Factorize(ctx, w, factorize.SingleParticipation())
	if err != nil {
		t.Fatal(err)
	}
	lean, err := factorize.SemisepStrategy{Buffers: 4}.Factorize(ctx, w, factorize.SingleParticipation())
	if err != nil {
		t.Fatal(err)
	}
	if lean.B != nil || lean.C != nil {
		t.Fatal("factors formed without Factors")
	}
	const dim = 300
	a, err := New(lean, dim, 1, WithSeed(4))
	if err != nil {
		t.Fatal(err)
	}
	got, err := NoiseMatrix(a)
	if err != nil {
		t.Fatal(err)
	}
	if d := maxRelDiff(got, explicitNoise(t, full, dim, 1, 4)); d > 1e-12 {
		t.Errorf("max relative difference %.3g from the explicit noise", d)
	}
	// The dense operator forms B and C from the generators.
	if d := maxRelDiff(drain(t, lean, dim, WithSeed(4), WithDense()), got); d > 1e-12 {
		t.Errorf("dense operator of the generators: max relative difference %.3g", d)
	}
}

// row writes noise row `row` at coordinates [0, len(dst)) into dst, block
// by block. It is the serial reference of what the mechanisms draw.
func (g *gen) row(row int, dst []float64) {
	for lo := 0; lo < len(dst); lo += blockLen {
		g.Fill(row, lo, dst[lo:min(lo+blockLen, len(dst))])
	}
}
