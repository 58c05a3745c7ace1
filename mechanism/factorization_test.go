package mechanism

import (
	"context"
	"math"
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

// TestDenseCheckNotAimed: the comparison of WithDense's factors with the
// structured operator must not be evadable by factors built for it. With
// a probe drawn under a fixed key (SeedKey(0x64656e7365), coordinates
// 0..3, as before), the probe Z is known, and factors whose noise
// operator M' = C'^{-1} differs from the operator's M = C^{-1} by a D with
// D Z = 0 streamed the same probe and passed. Here M' keeps rows 0..R-2
// of banded:bands=3's M and replaces the last row by its projection onto
// the span of Z's 4 columns (restricted to rows 0..R-1): D Z = 0, B' =
// A M' and C' = M'^{-1} reproduce A exactly, and round R-1's noise has a
// smaller std than the record of banded's operator states. It must be
// refused (the probe is now drawn under a key from crypto/rand, which no
// one building the factors can know).
func TestDenseCheckNotAimed(t *testing.T) {
	const R = 8
	w, err := factorize.Prefix(R)
	if err != nil {
		t.Fatal(err)
	}
	f, err := factorize.BandedStrategy{Bands: 3}.Factorize(context.Background(), w, factorize.SingleParticipation())
	if err != nil {
		t.Fatal(err)
	}
	m := explicitOperator(t, f) // M = C^{-1}, by LU
	// The probe of the fixed key: Z[j][c] for noise rows j, coordinates c < 4.
	z := mat.NewDense(R, 4, nil)
	g := newGen(&source{key: SeedKey(0x64656e7365)})
	for j := range R {
		g.Fill(j, 0, z.RawRowView(j))
	}
	// Project the last row of M onto the column space of Z: v' = Z (Z^T Z)^{-1} Z^T v.
	v := mat.NewVecDense(R, nil)
	v.CopyVec(m.RowView(R - 1))
	var coef mat.VecDense
	if err := coef.SolveVec(z, v); err != nil { // least squares: Z coef ~ v
		t.Fatal(err)
	}
	var proj mat.VecDense
	proj.MulVec(z, &coef)
	alt := mat.DenseCopyOf(m)
	alt.SetRow(R-1, proj.RawVector().Data)
	var dz mat.Dense
	diff := mat.DenseCopyOf(alt)
	diff.Sub(alt, m)
	dz.Mul(diff, z)
	if mat.Norm(&dz, math.Inf(1)) > 1e-12 || proj.Norm(2) > 0.99*v.Norm(2) {
		t.Fatalf("the crafted operator: |D Z| = %v, last row's norm %v against %v", mat.Norm(&dz, math.Inf(1)), proj.Norm(2), v.Norm(2))
	}
	var b, c mat.Dense
	b.Mul(w.Matrix(), alt)
	if err := c.Inverse(alt); err != nil {
		t.Fatal(err)
	}
	for i := range R { // exactly lower triangular
		for j := i + 1; j < R; j++ {
			c.Set(i, j, 0)
			b.Set(i, j, 0)
		}
	}
	crafted := *f
	crafted.B, crafted.C = &b, &c
	if _, err := New(&crafted, 2, 1, WithDense(), WithSeed(1)); err == nil || !strings.Contains(err.Error(), "stream other noise") {
		t.Errorf("banded's operator with factors whose noise differs only off the fixed probe, WithDense: error %v, want a refusal", err)
	}
	if _, err := New(f, 2, 1, WithDense(), WithSeed(1)); err != nil {
		t.Errorf("banded's own factors, WithDense: %v", err)
	}
}
