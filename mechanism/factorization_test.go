package mechanism

import (
	"context"
	"testing"

	"github.com/dpmf/dpmf/factorize"
)

// wrapped is a Mechanism around another that says so (Unwrap).
type wrapped struct{ Mechanism }

func (w wrapped) Unwrap() Mechanism { return w.Mechanism }

// TestFactorizationOf: a mechanism of New reports the factorization it was
// given (with WithDense too), as it was at New: a later change of the
// caller's Factorization does not change it; a wrapper with Unwrap reports
// the inner one's; a Mechanism of another kind reports none.
func TestFactorizationOf(t *testing.T) {
	w, err := factorize.Prefix(4)
	if err != nil {
		t.Fatal(err)
	}
	f, err := factorize.TreeStrategy{}.Factorize(context.Background(), w, factorize.SingleParticipation())
	if err != nil {
		t.Fatal(err)
	}
	for _, opts := range [][]Option{nil, {WithDense()}} {
		m, err := New(f, 2, 1, append(opts, WithSeed(1))...)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := FactorizationOf(m)
		if !ok || got.Workload != f.Workload || got.Strategy != "tree" {
			t.Errorf("options %d: FactorizationOf = %v, %v, want the tree's", len(opts), got, ok)
		}
		if got, ok := FactorizationOf(wrapped{wrapped{m}}); !ok || got.Workload != f.Workload {
			t.Errorf("a wrapper of a wrapper: %v, %v, want the tree's", got, ok)
		}
	}
	m, _ := New(f, 2, 1, WithSeed(1))
	f.Strategy, f.Operator = "changed", nil
	if got, _ := FactorizationOf(m); got.Strategy != "tree" || got.Operator == nil {
		t.Errorf("after the caller changed its Factorization: %q, want the tree as given", got.Strategy)
	}
	if _, ok := FactorizationOf(wrapped{nil}); ok {
		t.Error("a wrapper of nothing reports a factorization")
	}
	if _, ok := FactorizationOf(nil); ok {
		t.Error("nil reports a factorization")
	}
}
