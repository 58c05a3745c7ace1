package bench_test

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/mechanism"
)

// Sizes of the mechanism benchmarks: a 10^6-parameter model trained for 800
// rounds. The keep-mode dense and Toeplitz mechanisms are timed at
// mechKeepDim = d / 8 (their past rows at round R/2 take 400 MB there instead
// of 3.2 GB); their work is a stream over the kept rows, so its time per
// coordinate does not depend on d once the rows are far beyond the caches.
const (
	mechRounds  = 800
	mechDim     = 1_000_000
	mechKeepDim = mechDim / 8
	// mechStateDim is the dimension at which the state per coordinate is
	// measured after the last round (it does not depend on d).
	mechStateDim = 16
)

// mechFactorizations computes, once per process, the factorizations of the
// prefix workload with R = mechRounds that the mechanisms stream.
var mechFactorizations = sync.OnceValues(func() (map[string]*factorize.Factorization, error) {
	ctx := context.Background()
	w, err := factorize.Prefix(mechRounds)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*factorize.Factorization)
	for _, s := range []struct {
		name     string
		strategy factorize.Strategy
	}{
		{"identity", factorize.IdentityStrategy{}},
		{"tree", factorize.TreeStrategy{}},
		{"banded-b4", factorize.BandedStrategy{Bands: 4}},
		{"banded-b16", factorize.BandedStrategy{Bands: 16}},
		{"banded-b64", factorize.BandedStrategy{Bands: 64}},
		{"blt-k2", factorize.BLTStrategy{Buffers: 2}},
		{"blt-k4", factorize.BLTStrategy{Buffers: 4}},
		{"blt-k8", factorize.BLTStrategy{Buffers: 8}},
		{"semisep-k2", factorize.SemisepStrategy{Buffers: 2}},
		{"semisep-k4", factorize.SemisepStrategy{Buffers: 4}},
		{"semisep-k8", factorize.SemisepStrategy{Buffers: 8}},
		{"semisep-k16", factorize.SemisepStrategy{Buffers: 16}},
		{"sqrt", factorize.SqrtStrategy{}},
		{"sqrt-normalized", factorize.SqrtStrategy{Normalized: true}},
		{"optimal", factorize.OptimalStrategy{}},
	} {
		f, err := s.strategy.Factorize(ctx, w, factorize.Participation{})
		if err != nil {
			return nil, err
		}
		out[s.name] = f
	}
	return out, nil
})

// mechFactorization returns a factorization of mechFactorizations.
func mechFactorization(b *testing.B, name string) *factorize.Factorization {
	b.Helper()
	fs, err := mechFactorizations()
	if err != nil {
		b.Fatal(err)
	}
	return fs[name]
}

// mechStatePerCoord returns the bytes of state per coordinate that the
// mechanism holds after its last round.
func mechStatePerCoord(b *testing.B, f *factorize.Factorization, opts []mechanism.Option) float64 {
	b.Helper()
	m, err := mechanism.New(f, mechStateDim, 1, append([]mechanism.Option{mechanism.WithSeed(1)}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	dst := make([]float64, mechStateDim)
	for m.Round() < m.Rounds() {
		if err := m.Next(dst); err != nil {
			b.Fatal(err)
		}
	}
	return float64(m.StateBytes()) / mechStateDim
}

// reportMechanism adds the factorization's loss and RMSE and the state per
// coordinate to the benchmark's output.
func reportMechanism(b *testing.B, f *factorize.Factorization, opts []mechanism.Option) {
	b.ReportMetric(f.Metrics.Loss, "loss")
	b.ReportMetric(f.Metrics.RMSE, "RMSE")
	b.ReportMetric(mechStatePerCoord(b, f, opts), "stateB/coord")
}

// BenchmarkMechanism times one round (ns/op) of every streaming mechanism
// whose cost does not grow with the round, at d = 10^6 and R = 800 on one
// goroutine, against the floor: d Gaussians from one ChaCha8 stream with
// math/rand/v2's NormFloat64, and nothing else. Rounds run in order from
// round 0, a new stream replacing an exhausted one outside the timer.
func BenchmarkMechanism(b *testing.B) {
	b.Run("floor", func(b *testing.B) {
		rng := rand.New(rand.NewChaCha8([32]byte{1}))
		dst := make([]float64, mechDim)
		for b.Loop() {
			for i := range dst {
				dst[i] = rng.NormFloat64()
			}
		}
	})
	for _, name := range []string{"identity", "tree", "banded-b4", "banded-b16", "banded-b64", "blt-k2", "blt-k4", "blt-k8", "semisep-k2", "semisep-k4", "semisep-k8", "semisep-k16", "optimal"} {
		b.Run(name, func(b *testing.B) {
			f := mechFactorization(b, name)
			opts := []mechanism.Option{mechanism.WithSeed(2), mechanism.WithWorkers(1)}
			newMech := func() mechanism.Mechanism {
				m, err := mechanism.New(f, mechDim, 1, opts...)
				if err != nil {
					b.Fatal(err)
				}
				return m
			}
			m := newMech()
			dst := make([]float64, mechDim)
			for b.Loop() {
				if m.Round() == m.Rounds() {
					b.StopTimer()
					m = newMech()
					b.StartTimer()
				}
				if err := m.Next(dst); err != nil {
					b.Fatal(err)
				}
			}
			reportMechanism(b, f, opts)
		})
	}
}

// BenchmarkMechanismDense times the mechanisms whose round r costs O(r d) —
// the Toeplitz (sqrt) and dense (the optimal factorization through
// WithDense, the path it took before it streamed its quasiseparable
// factor) operators, keeping or regenerating past noise rows — from round
// R/2 on, whose cost is the
// average over the R rounds. Keep mode runs at d = mechKeepDim (see
// above): multiply its ns/op by mechDim / mechKeepDim = 8 for d = 10^6.
// One regenerating round takes seconds: use -benchtime 2x.
func BenchmarkMechanismDense(b *testing.B) {
	for _, name := range []string{"sqrt", "optimal"} {
		for _, mode := range []mechanism.Memory{mechanism.MemoryKeep, mechanism.MemoryRegenerate} {
			dim := mechDim
			if mode == mechanism.MemoryKeep {
				dim = mechKeepDim
			}
			b.Run(name+"/"+mode.String()+"/d="+strconv.Itoa(dim), func(b *testing.B) {
				f := mechFactorization(b, name)
				opts := []mechanism.Option{mechanism.WithSeed(3), mechanism.WithWorkers(1), mechanism.WithMemory(mode)}
				if name == "optimal" {
					opts = append(opts, mechanism.WithDense())
				}
				m, err := mechanism.New(f, dim, 1, append([]mechanism.Option{mechanism.WithStartRound(mechRounds / 2)}, opts...)...)
				if err != nil {
					b.Fatal(err)
				}
				dst := make([]float64, dim)
				for b.Loop() {
					if err := m.Next(dst); err != nil {
						b.Fatal(err) // more than R/2 iterations: lower -benchtime
					}
				}
				reportMechanism(b, f, opts)
			})
		}
	}
}
