package bench_test

import (
	"strconv"
	"testing"

	"github.com/dpmf/dpmf/accountant"
)

// BenchmarkPLDBounds times the two-sided PLD accountant of issue 20, item 5:
// eps at delta = 1e-10 of steps compositions of the Poisson-subsampled
// Gaussian, both sides (one SampledGaussian and one EpsilonBounds), with
// the target of at most 5 s per call on the 2-core machine and a relative
// width (safe - optimistic)/safe of at most 1e-3, reported as the metric
// "width". docs/scaling.md lists the medians:
//
//	go test -run '^$' -bench PLDBounds -count 3 ./bench/
func BenchmarkPLDBounds(b *testing.B) {
	for _, c := range []struct {
		q, sigma float64
		steps    int
	}{
		{0.01, 4, 1000},       // the example: truth in [0.4685, 0.4696]
		{0.01, 2, 1000000},    // 10^6 steps
		{1, 500, 1000000},     // 10^6 Gaussian steps (mu = 2)
		{0.0001, 20, 1000000}, // the smallest losses of the target box
		{0.001, 1, 1000000},
	} {
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
			b.ReportMetric(bd.Width(), "width")
			b.ReportMetric(bd.Safe, "eps")
		})
	}
}
