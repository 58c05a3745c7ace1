package mechanism_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/mechanism"
)

// sweepCase is one factorization of the sweep: a strategy spec, a
// participation and R; lean is the same request computed loss-only (nil
// where the strategy has no loss-only path under the participation, or
// its loss-only result has no operator).
type sweepCase struct {
	name string
	f    *factorize.Factorization
	lean *factorize.Factorization
}

// sweepSpecs are the specs tried for each registered strategy: the
// default settings and odd ones (bands beyond R, one buffer, a dense
// optimal path). A registered strategy missing here is a test failure.
var sweepSpecs = map[string][]string{
	factorize.StrategyIdentity:       {"identity"},
	factorize.StrategyTree:           {"tree"},
	factorize.StrategySqrt:           {"sqrt"},
	factorize.StrategySqrtNormalized: {"sqrt-normalized"},
	factorize.StrategyBanded:         {"banded", "banded:bands=1", "banded:bands=2", "banded:bands=40"},
	factorize.StrategyBSR:            {"bsr", "bsr:bands=1", "bsr:bands=40"},
	factorize.StrategyBandedToeplitz: {"banded-toeplitz", "banded-toeplitz:bands=1", "banded-toeplitz:bands=40"},
	factorize.StrategyBISR:           {"bisr", "bisr:bands=1", "bisr:bands=40"},
	factorize.StrategyBandInv:        {"bandinv", "bandinv:bands=1", "bandinv:bands=40"},
	factorize.StrategyBLT:            {"blt", "blt:buffers=1"},
	factorize.StrategySemisep:        {"semiseparable", "semiseparable:buffers=1"},
	factorize.StrategyOptimal:        {"optimal", "optimal:path=dense"},
}

// sweepCases factorizes every registered strategy (with the specs of
// sweepSpecs) under every participation it accepts, on the prefix
// workload with R rounds for each R in rs. A request that Factorize
// refuses (a participation the strategy does not take, a setting out of
// range for R) is skipped; single participation with the default
// settings must never be refused, except where the strategy documents it
// (semiseparable needs R >= 2).
func sweepCases(t *testing.T, rs []int) []sweepCase {
	t.Helper()
	ctx := context.Background()
	var out []sweepCase
	for _, info := range factorize.Registry() {
		specs, ok := sweepSpecs[info.Name]
		if !ok {
			t.Errorf("strategy %s is registered but not swept", info.Name)
			continue
		}
		for _, r := range rs {
			w, err := factorize.Prefix(r)
			if err != nil {
				t.Fatal(err)
			}
			parts := []factorize.Participation{factorize.SingleParticipation(), factorize.MinSeparation(2, 0), factorize.MinSeparation(1, 2)}
			if r > 1 {
				parts = append(parts, factorize.FixedEpochs(r))
			}
			if r%2 == 0 {
				parts = append(parts, factorize.FixedEpochs(2))
			}
			for i, spec := range specs {
				s, err := factorize.ParseStrategy(spec)
				if err != nil {
					t.Fatalf("%s: %v", spec, err)
				}
				for j, p := range parts {
					f, err := s.Factorize(ctx, w, p)
					if err != nil {
						if i == 0 && j == 0 && !(info.Name == factorize.StrategySemisep && r == 1) {
							t.Errorf("%s R=%d single: %v", spec, r, err)
						}
						continue
					}
					c := sweepCase{name: fmt.Sprintf("%s/R=%d/%v", spec, r, p), f: f}
					if info.LossOnlyUnder(p) {
						ls, err := factorize.WithLossOnly(s, true)
						if err != nil {
							t.Fatalf("%s: %v", spec, err)
						}
						// The loss-only paths refuse some requests the full
						// ones take (more bands than the separation).
						if c.lean, err = ls.Factorize(ctx, w, p); err != nil || c.lean.Operator == nil {
							c.lean = nil
						}
					}
					out = append(out, c)
				}
			}
		}
	}
	return out
}

// referenceZ returns the first m noise rows at coordinates [0, d) of the
// key, computed from the package documentation alone: the entries of row j
// at coordinates [4096 b, 4096 (b+1)) are NormFloat64 draws of a ChaCha8
// generator whose seed is SHA-256 of the domain string, the key, j and b
// (64-bit little-endian).
func referenceZ(key [32]byte, m, d int) *mat.Dense {
	z := mat.NewDense(m, d, nil)
	for j := 0; j < m; j++ {
		row := z.RawRowView(j)
		for lo := 0; lo < d; lo += 4096 {
			in := append([]byte("dpmf/mechanism/noise-block/v1"), key[:]...)
			in = binary.LittleEndian.AppendUint64(in, uint64(j))
			in = binary.LittleEndian.AppendUint64(in, uint64(lo/4096))
			g := rand.New(rand.NewChaCha8(sha256.Sum256(in)))
			for i := lo; i < min(lo+4096, d); i++ {
				row[i] = g.NormFloat64()
			}
		}
	}
	return z
}

// TestSourceMatchesDocumentedDerivation pins the counter-based source to
// its documented derivation, recomputed here without the package's code:
// the independent stream (C = I, std 1) is Z itself, row j of which is drawn
// block by block from ChaCha8 keyed by SHA-256(domain, key, j, b); and
// WithSeed(s) is WithKey(SHA-256("dpmf/mechanism/seed/v1", s)). A bug
// that reused a draw across rows or blocks (a dropped counter) or changed
// the stream between releases (a resumed run would get other noise) fails
// here; the other tests compare the stream with the package's own draws.
func TestSourceMatchesDocumentedDerivation(t *testing.T) {
	const r, d = 5, 2*4096 + 3
	w, err := factorize.Prefix(r)
	if err != nil {
		t.Fatal(err)
	}
	f, err := factorize.IdentityStrategy{}.Factorize(context.Background(), w, factorize.SingleParticipation())
	if err != nil {
		t.Fatal(err)
	}
	var seedIn [len("dpmf/mechanism/seed/v1") + 8]byte
	copy(seedIn[:], "dpmf/mechanism/seed/v1")
	binary.LittleEndian.PutUint64(seedIn[len("dpmf/mechanism/seed/v1"):], 77)
	key := sha256.Sum256(seedIn[:])
	if mechanism.SeedKey(77) != key {
		t.Fatalf("SeedKey(77) = %x, want %x", mechanism.SeedKey(77), key)
	}
	m, err := mechanism.New(f, d, 1, mechanism.WithSeed(77), mechanism.WithWorkers(2))
	if err != nil {
		t.Fatal(err)
	}
	got, err := mechanism.NoiseMatrix(m)
	if err != nil {
		t.Fatal(err)
	}
	want := referenceZ(key, r, d)
	for j := 0; j < r; j++ {
		for i := 0; i < d; i++ {
			if math.Float64bits(got.At(j, i)) != math.Float64bits(want.At(j, i)) {
				t.Fatalf("noise row %d coordinate %d = %v, want %v from the documented derivation", j, i, got.At(j, i), want.At(j, i))
			}
		}
	}
	// No two (row, block) streams start alike: the counters do not collide.
	seen := map[uint64]string{}
	for j := 0; j < r; j++ {
		for lo := 0; lo < d; lo += 4096 {
			v := math.Float64bits(got.At(j, lo))
			if prev, dup := seen[v]; dup {
				t.Errorf("row %d block %d starts with the draw of %s", j, lo/4096, prev)
			}
			seen[v] = fmt.Sprintf("row %d block %d", j, lo/4096)
		}
	}
}

// denseNoise returns M Z computed densely, M = C^{-1} (square C) or
// A^{-1} B, by BLAS triangular solves (C and A lower triangular).
func denseNoise(t *testing.T, f *factorize.Factorization, z *mat.Dense) *mat.Dense {
	t.Helper()
	b, c, err := f.Factors()
	if err != nil {
		t.Fatal(err)
	}
	r, m := b.Dims()
	_, d := z.Dims()
	y := mat.NewDense(r, d, nil)
	lower := func(a *mat.Dense, rhs *mat.Dense) {
		n, _ := a.Dims()
		for i := 0; i < n; i++ {
			for j := i + 1; j < n; j++ {
				if a.At(i, j) != 0 {
					t.Fatalf("%s: the triangular factor has (%d, %d) = %v above the diagonal", f.Strategy, i, j, a.At(i, j))
				}
			}
		}
		blas64.Trsm(blas.Left, blas.NoTrans, 1, blas64.Triangular{Uplo: blas.Lower, Diag: blas.NonUnit, N: n, Stride: a.RawMatrix().Stride, Data: a.RawMatrix().Data}, rhs.RawMatrix())
	}
	if m == r {
		y.Copy(z.Slice(0, r, 0, d))
		lower(c, y)
		return y
	}
	y.Mul(b, z.Slice(0, m, 0, d))
	lower(mat.DenseCopyOf(f.Workload.Matrix()), y)
	return y
}

// worstRel returns the largest |got - want| over a round divided by the
// largest |want| of that round, over all rounds.
func worstRel(got, want *mat.Dense) float64 {
	r, d := want.Dims()
	worst := 0.0
	for i := 0; i < r; i++ {
		diff, scale := 0.0, 0.0
		for j := 0; j < d; j++ {
			diff = math.Max(diff, math.Abs(got.At(i, j)-want.At(i, j)))
			scale = math.Max(scale, math.Abs(want.At(i, j)))
		}
		worst = math.Max(worst, diff/scale)
	}
	return worst
}

// TestRegistrySweepMatchesDense streams every registered strategy, with
// odd settings (bands beyond R, a single band or buffer, the dense optimal
// path), under every participation it accepts, at R = 1, 2, 3 and 7 (not a
// power of two for the tree), and compares each round with std * M Z formed
// densely: Z reconstructed from the documented derivation
// (referenceZ), M Z by triangular solves against the dense factors; and
// so does the dense operator (WithDense, regenerating its past rows). For
// each it also checks that
//   - the stream ends with ErrExhausted after R rounds;
//   - a stream resumed at any round (WithStartRound) gives the bits of the
//     uninterrupted one, whatever state its operator holds;
//   - the result stored as the Record a cache entry holds and read back
//     (verified as a cache load verifies it) streams the same bits;
//   - the loss-only result, where it has an operator, streams the same
//     noise (to 1e-9), and so does its stored copy, bit for bit.
//
// d = 3 keeps it fast: the split of a row into blocks is checked by
// TestSourceMatchesDocumentedDerivation and TestMatchesExplicit.
func TestRegistrySweepMatchesDense(t *testing.T) {
	const (
		d    = 3
		std  = 0.75
		seed = 2026
	)
	cs := sweepCases(t, []int{1, 2, 3, 7})
	stream := func(name string, f *factorize.Factorization, opts ...mechanism.Option) (mechanism.Mechanism, *mat.Dense) {
		t.Helper()
		m, err := mechanism.New(f, d, std, append([]mechanism.Option{mechanism.WithSeed(seed)}, opts...)...)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		y, err := mechanism.NoiseMatrix(m)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return m, y
	}
	// restored returns f stored and read back as the Record a cache
	// entry holds, verified as a cache load verifies it (the bytes of an
	// entry are checked bit for bit by the cache's tests, and
	// TestCachedStreamsAsFresh streams each strategy through a cache
	// directory; each store there syncs the disk, too slow for this sweep).
	restored := func(name string, f *factorize.Factorization) *factorize.Factorization {
		t.Helper()
		g, err := f.Record().Restore(f.Workload)
		if err != nil {
			t.Errorf("%s: the stored record is refused: %v", name, err)
			return f
		}
		return g
	}
	worst, worstName, leans := 0.0, "", 0
	for _, tc := range cs {
		_, m := mustFactors(t, tc.f)
		z := referenceZ(mechanism.SeedKey(seed), m, d)
		want := denseNoise(t, tc.f, z)
		want.Scale(std, want)
		mech, got := stream(tc.name, tc.f, mechanism.WithWorkers(2))
		if e := worstRel(got, want); !(e <= 1e-9) {
			t.Errorf("%s (%v): relative error %.3g from the dense C^{-1} Z, want <= 1e-9", tc.name, mech, e)
		} else if e > worst {
			worst, worstName = e, tc.name
		}
		if dm, dy := stream(tc.name+"/dense", tc.f, mechanism.WithDense(), mechanism.WithMemory(mechanism.MemoryRegenerate)); !(worstRel(dy, want) <= 1e-9) {
			t.Errorf("%s (%v): relative error %.3g from the dense C^{-1} Z, want <= 1e-9", tc.name, dm, worstRel(dy, want))
		}
		if err := mech.Next(make([]float64, d)); !errors.Is(err, mechanism.ErrExhausted) {
			t.Errorf("%s: Next after R rounds: %v, want ErrExhausted", tc.name, err)
		}
		r, _ := got.Dims()
		for r0 := 1; r0 < r; r0++ {
			res, rest := stream(tc.name, tc.f, mechanism.WithStartRound(r0))
			if !sameRows(rest, got, r0) {
				t.Errorf("%s (%v): resumed at round %d, the stream differs from the uninterrupted one", tc.name, res, r0)
			}
		}
		if _, y := stream(tc.name, restored(tc.name, tc.f)); !sameRows(y, got, 0) {
			t.Errorf("%s: the cached factorization streams other bits", tc.name)
		}
		if tc.lean == nil {
			continue
		}
		leans++
		lm, ly := stream(tc.name+"/loss-only", tc.lean)
		if e := worstRel(ly, want); !(e <= 1e-9) {
			t.Errorf("%s loss-only (%v): relative error %.3g from the dense C^{-1} Z, want <= 1e-9", tc.name, lm, e)
		}
		if _, y := stream(tc.name, restored(tc.name+"/loss-only", tc.lean)); !sameRows(y, ly, 0) {
			t.Errorf("%s loss-only: the cached factorization streams other bits", tc.name)
		}
	}
	t.Logf("%d factorizations (%d loss-only with an operator); worst relative error %.3g (%s)", len(cs), leans, worst, worstName)
}

// sameRows reports whether a holds rows r0.. of b bit for bit.
func sameRows(a, b *mat.Dense, r0 int) bool {
	ar, ac := a.Dims()
	br, bc := b.Dims()
	if ar != br-r0 || ac != bc {
		return false
	}
	for i := 0; i < ar; i++ {
		for j := 0; j < ac; j++ {
			if math.Float64bits(a.At(i, j)) != math.Float64bits(b.At(i+r0, j)) {
				return false
			}
		}
	}
	return true
}

// mustFactors returns the dimensions R x m of f's B.
func mustFactors(t *testing.T, f *factorize.Factorization) (int, int) {
	t.Helper()
	b, _, err := f.Factors()
	if err != nil {
		t.Fatalf("%s: %v", f.Strategy, err)
	}
	return b.Dims()
}
