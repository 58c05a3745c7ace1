package mechanism

import (
	"context"
	"errors"
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
	w, err := factorize.Prefix(3)
	if err != nil {
		t.Fatal(err)
	}
	f, err := factorize.SqrtStrategy{}.Factorize(context.Background(), w, factorize.SingleParticipation())
	if err != nil {
		t.Fatal(err)
	}
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
