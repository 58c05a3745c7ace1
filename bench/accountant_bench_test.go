package bench_test

import (
	"strconv"
	"testing"

	"github.com/dpmf/dpmf/accountant"
)

// BenchmarkPLDBounds times the two-sided PLD accountant of issue 20, item 5:
// eps at delta = 1e-10 of steps compositions of the Poisson-subsampled
// Gaussian (add/remove), both sides (one SampledGaussian and one
// EpsilonBounds), over the target box's grid: q in {1e-4, 1e-3, 1e-2, 0.1,
// 1}, sigma in {0.5, 1, 2, 5, 20}, steps in {10^3, ..., 10^6}. The targets
// are at most 5 s per call on a quiet 2-core machine and a relative width
// (safe - optimistic)/safe of at most 1e-3, reported as the metric "width"
// (with "eps", the safe side); at q = 1 the exact eps of T Gaussian steps
// (mu-GDP) must lie between the sides. docs/privacy.md lists the table:
//
//	go test -run '^$' -bench PLDBounds -benchtime 1x ./bench/
//
// -bench 'PLDBounds/q=0.001,' picks one q.
func BenchmarkPLDBounds(b *testing.B) {
	type point struct {
		q, sigma float64
		steps    int
	}
	points := []point{{0.01, 4, 1000}} // the example: truth in [0.4685, 0.4696]
	for _, q := range []float64{1e-4, 1e-3, 1e-2, 0.1, 1} {
		for _, sigma := range []float64{0.5, 1, 2, 5, 20} {
			for _, steps := range []int{1e3, 1e4, 1e5, 1e6} {
				points = append(points, point{q, sigma, steps})
			}
		}
	}
	for _, c := range points {
		name := "q=" + strconv.FormatFloat(c.q, 'g', -1, 64) + ",sigma=" + strconv.FormatFloat(c.sigma, 'g', -1, 64) +
			",T=" + strconv.Itoa(c.steps)
		b.Run(name, func(b *testing.B) {
			var bd accountant.Bounds
			for b.Loop() {
				var err error
				bd, err = accountant.SampledGaussianEpsilonBounds(c.q, c.sigma, c.steps, 1e-10, accountant.AddRemove)
				if err != nil {
					b.Fatal(err)
				}
			}
			if c.q == 1 {
				// T Gaussian steps are exactly mu-GDP (an independent
				// closed form): it must lie between the sides.
				exact, err := accountant.Epsilon(c.sigma, 1e-10, c.steps, accountant.Exact)
				if err != nil {
					b.Fatal(err)
				}
				if !(bd.Optimistic <= exact && exact <= bd.Safe) {
					b.Fatalf("exact eps %.12g outside the bounds %+v", exact, bd)
				}
			}
			b.ReportMetric(bd.Width(), "width")
			b.ReportMetric(bd.Safe, "eps")
		})
	}
}
