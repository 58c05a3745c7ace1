package factorize

import (
	"context"
	"fmt"
)

// StrategyBSR is the name of [BSRStrategy].
const StrategyBSR = "bsr"

func init() {
	register(StrategyInfo{
		Name: StrategyBSR, rank: 60, Doc: "the banded square root with unit column norms",
		Stream:   "b - 1 (15 by default)",
		Settings: []Setting{bandsSetting("number of bands of C")},
		proto:    BSRStrategy{},
		cBands:   func(s Strategy) int { return bandsOrDefault(s.(BSRStrategy).Bands) },
		fields: []field{
			{ptr: func(p any) any { return &p.(*BSRStrategy).Bands }, lo: 1},
		},
		streamVectors: func(s Strategy, r int) int { return min(bandsOrDefault(s.(BSRStrategy).Bands), r) - 1 },
	})
}

// BSRStrategy is the banded square root with unit column norms (see
// [BandedSqrt]; Kalinin and Lampert 2024), a closed form for
// min-separation.
type BSRStrategy struct {
	// Bands is the number of bands; 0 means [DefaultBands], and under
	// b-min-separation min(DefaultBands, b).
	Bands int
}

// Name returns "bsr".
func (BSRStrategy) Name() string { return StrategyBSR }

// Spec returns "bsr:bands=B", or "bsr" for the default.
func (s BSRStrategy) Spec() string { return specOf(s) }

// Factorize returns [BandedSqrt](w, bands, 0) with metrics under p.
func (s BSRStrategy) Factorize(ctx context.Context, w *Workload, p Participation) (*Factorization, error) {
	if s.Bands < 0 {
		return nil, fmt.Errorf("factorize: bands %d, want >= 1 (or 0 for the default %d)", s.Bands, DefaultBands)
	}
	b := bandsFor(s.Bands, p)
	return under(ctx, w, p, func() (*Factorization, error) {
		f, err := BandedSqrt(w, b, 0)
		if err != nil {
			return nil, err
		}
		f.Strategy = StrategyBSR
		return f, nil
	})
}
