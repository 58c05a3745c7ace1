package factorize

import (
	"context"
	"fmt"

	"github.com/dpmf/dpmf/linalg"
)

// StrategyBSR is the name of [BSRStrategy].
const StrategyBSR = "bsr"

func init() {
	register(StrategyInfo{
		Name: StrategyBSR, rank: 60, Doc: "the banded square root with unit column norms",
		Stream:      "b - 1 (15 by default)",
		Workloads:   servesToeplitz,
		serves:      func(_ Strategy, w *Workload, _ Participation) bool { return isToeplitz(w) },
		Settings:    []Setting{bandsSetting("number of bands of C")},
		proto:       BSRStrategy{},
		lossOnly:    []ParticipationKind{KindSingle, KindMinSep},
		lossOnlyPtr: func(p any) *bool { return &p.(*BSRStrategy).LossOnly },
		cBands:      func(s Strategy) int { return bandsOrDefault(s.(BSRStrategy).Bands) },
		fields: []field{
			{ptr: func(p any) any { return &p.(*BSRStrategy).Bands }, lo: 1},
		},
		streamVectors: func(s Strategy, r int) int { return min(bandsOrDefault(s.(BSRStrategy).Bands), r) - 1 },
	})
}

// BSRStrategy is the banded square root with unit column norms (see
// [BandedSqrt]; Kalinin and Lampert 2024), a closed form for
// min-separation.
//
// With LossOnly, the metrics come from the coefficients without B and C,
// in O(R^2) time and O(R b) memory (see [scaledToeplitz]): C = T_c N^{-1}
// with c the first b coefficients of the workload's square root and N
// its column norms, B = A N T_c^{-1}; under b'-min-separation the
// sensitivity is exact for b <= b' (the banded rule on the unit
// diagonal), else the dynamic-programming bound over X's rows. The
// prefix-sum workload only.
type BSRStrategy struct {
	// Bands is the number of bands; 0 means [DefaultBands], and under
	// b-min-separation min(DefaultBands, b).
	Bands int
	// LossOnly skips forming B and C: the result has only its metrics
	// (single participation and min-separation only).
	LossOnly bool
}

// Name returns "bsr".
func (BSRStrategy) Name() string { return StrategyBSR }

// Spec returns "bsr:bands=B", or "bsr" for the default.
func (s BSRStrategy) Spec() string { return specOf(s) }

// Factorize returns [BandedSqrt](w, bands, 0) with metrics under p.
func (s BSRStrategy) Factorize(ctx context.Context, w *Workload, p Participation) (f *Factorization, err error) {
	defer keyed(s, &f, &err)
	if s.Bands < 0 {
		return nil, fmt.Errorf("factorize: bands %d, want >= 1 (or 0 for the default %d)", s.Bands, DefaultBands)
	}
	b := bandsFor(s.Bands, p)
	if s.LossOnly {
		return checkedLossOnly(bsrLossOnly(ctx, w, b, p))
	}
	return under(ctx, w, p, true, func() (*Factorization, error) {
		f, err := BandedSqrt(w, b, 0)
		if err != nil {
			return nil, err
		}
		f.Strategy = StrategyBSR
		return f, nil
	})
}

// bsrLossOnly returns the metrics-only bsr result with b bands under p.
func bsrLossOnly(ctx context.Context, w *Workload, b int, p Participation) (*Factorization, error) {
	if err := checkContext(ctx); err != nil {
		return nil, err
	}
	tw, err := checkLossOnly(StrategyBSR, w, b, p)
	if err != nil {
		return nil, err
	}
	r := w.R()
	b = min(b, r)
	sq := tw.sqrt(b)
	c := padded(sq, r)
	st := &scaledToeplitz{tw: tw, c: c, u: linalg.SeriesInverse(sq, r), scale: columnNorms(c)}
	m, err := st.metrics(p)
	if err != nil {
		return nil, err
	}
	return squareResult(StrategyBSR, scaledBandedOp(c, st.scale, b), w, m), nil
}
