package factorize

import (
	"context"
	"testing"
)

// A stored metrics-only record whose sensitivity is zero or below gamma
// is refused: every participation lets a sample take part in one round, so
// the sensitivity is at least the largest column norm, and a smaller one
// would calibrate too little noise. Before, the zero Record (and a nil
// factorization's Record, which panicked) restored without an error, with
// sensitivity 0.
func TestRestoreRefusesSensitivityBelowGamma(t *testing.T) {
	w, err := Prefix(8)
	if err != nil {
		t.Fatal(err)
	}
	var nilF *Factorization
	if _, err := nilF.Record().Restore(w); err == nil {
		t.Error("the record of a nil factorization restored")
	}
	if _, err := (Record{}).Restore(w); err == nil {
		t.Error("the zero record restored")
	}
	s, err := WithLossOnly(BandedStrategy{Bands: 2}, true)
	if err != nil {
		t.Fatal(err)
	}
	f, err := s.Factorize(context.Background(), w, MinSeparation(2, 0))
	if err != nil {
		t.Fatal(err)
	}
	if f.B != nil {
		t.Fatal("not a loss-only result")
	}
	// Its metrics alone, as a metrics-only entry stores them.
	rec := f.Record()
	rec.Operator = nil
	if _, err := rec.Restore(w); err != nil {
		t.Fatalf("the loss-only banded record: %v", err)
	}
	// Halve the sensitivity and quadruple ||B||_F^2: the loss, RMSE and
	// MaxSE stay consistent, and the sensitivity falls below gamma = 1
	// (the banded factor's columns have norm 1).
	if rec.Metrics.Gamma != 1 && !closeRel(rec.Metrics.Gamma, 1) {
		t.Fatalf("gamma %v, want 1", rec.Metrics.Gamma)
	}
	rec.Metrics.UnitSensitivity.Value = rec.Metrics.Gamma / 2
	rec.Metrics.FrobBSq *= 4
	rec.Metrics.MaxRowBSq *= 4
	if _, err := rec.Restore(w); err == nil {
		t.Error("a record with its sensitivity below gamma restored")
	}
}

// The loss-only fixed-epoch optimum, whose gamma is the factors' largest
// column norm (0.589 at R = 64 with 4 epochs, below 1), restores from its
// stored record: the check of loss-only optimal entries wanted gamma 1, so
// every such cache entry was called corrupt and recomputed. A gamma above
// 1 under epochs, or below 1 under single participation, or a sensitivity
// other than 1, is still refused.
func TestRestoreLossOnlyEpochsOptimum(t *testing.T) {
	w, err := Prefix(64)
	if err != nil {
		t.Fatal(err)
	}
	f, err := OptimalEpochs(context.Background(), w, 4, Options{LossOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if g := f.Metrics.Gamma; !(g > 0.5 && g < 0.7) {
		t.Fatalf("gamma %v, want the factors' 0.589", g)
	}
	rec := f.Record()
	rec.Operator = nil
	if _, err := rec.Restore(w); err != nil {
		t.Fatalf("the loss-only epochs record: %v", err)
	}
	for _, c := range []struct {
		name string
		edit func(*Record)
	}{
		{"gamma above 1", func(r *Record) { r.Metrics.Gamma = 1.5 }},
		{"sensitivity 0.9", func(r *Record) { r.Metrics.UnitSensitivity.Value = 0.9 }},
		{"single participation with gamma below 1", func(r *Record) { r.Metrics.Participation = SingleParticipation() }},
	} {
		bad := f.Record()
		bad.Operator = nil
		c.edit(&bad)
		if _, err := bad.Restore(w); err == nil {
			t.Errorf("%s: restored", c.name)
		}
	}
}
