package plan

import (
	"strconv"
	"testing"

	"github.com/dpmf/dpmf/factorize"
)

// BenchmarkCalibrate times Calibrate (its recomputation of the streamed
// sensitivity included) of the banded and BLT factorizations of a plan at
// R = 10^4 and 10^5, under single participation and, for banded,
// min-separation. The factorization is the strategy's loss-only result
// (its operator without dense factors, which at R = 10^5 do not fit in
// memory), computed once, outside the loop.
func BenchmarkCalibrate(b *testing.B) {
	for _, c := range []struct{ strategy, part string }{
		{"banded:bands=8", ""}, {"banded:bands=8,tol=0.05", "minsep:8"}, {"blt", ""},
	} {
		for _, r := range []int{10_000, 100_000} {
			b.Run(c.strategy+"/"+c.part+"/R="+strconv.Itoa(r), func(b *testing.B) {
				p := &Plan{Rounds: r, Algorithm: AlgoCorrelated, Learners: 10, Clip: 1, Strategy: c.strategy, Participation: c.part,
					Target: &Target{Eps: 2, Delta: 1e-5}}
				part, err := p.Pattern()
				if err != nil {
					b.Fatal(err)
				}
				s, err := factorize.ParseStrategy(c.strategy)
				if err != nil {
					b.Fatal(err)
				}
				if s, err = factorize.WithLossOnly(s, true); err != nil {
					b.Fatal(err)
				}
				w, err := factorize.Prefix(r)
				if err != nil {
					b.Fatal(err)
				}
				f, err := s.Factorize(b.Context(), w, part)
				if err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					if err := p.Calibrate(b.Context(), f); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
