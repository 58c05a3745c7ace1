package mechanism

import (
	"context"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/factorize"
	"gonum.org/v1/gonum/mat"
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

// TestDenseMustStreamTheOperator: WithDense streams f's dense factors,
// while FactorizationOf reports f, named by its structured operator. The
// identity's operator (noise Z) with the factors B = A / 2, C = 2 I
// (noise Z / 2: M = A^{-1} B = I / 2, by hand) is refused; before the fix
// it streamed half the noise under the identity's name. The identity's
// own factors stream its operator's noise and are accepted.
func TestDenseMustStreamTheOperator(t *testing.T) {
	const R = 4
	w, err := factorize.Prefix(R)
	if err != nil {
		t.Fatal(err)
	}
	f, err := factorize.IdentityStrategy{}.Factorize(context.Background(), w, factorize.SingleParticipation())
	if err != nil {
		t.Fatal(err)
	}
	b := mat.NewDense(R, R, nil)
	c := mat.NewDense(R, R, nil)
	for i := range R {
		for j := 0; j <= i; j++ {
			b.Set(i, j, 0.5)
		}
		c.Set(i, i, 2)
	}
	g := *f
	g.B, g.C = b, c
	if _, err := New(&g, 2, 1, WithDense(), WithSeed(1)); err == nil || !strings.Contains(err.Error(), "stream other noise") {
		t.Errorf("identity's operator with factors of C = 2 I, WithDense: error %v, want a refusal", err)
	}
	h := *f
	if h.B, h.C, err = f.Factors(); err != nil {
		t.Fatal(err)
	}
	if _, err := New(&h, 2, 1, WithDense(), WithSeed(1)); err != nil {
		t.Errorf("the identity's own factors, WithDense: %v", err)
	}
}
