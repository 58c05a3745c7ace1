package factorize_test

import (
	"context"
	"errors"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dpmf/dpmf/factorize"
)

// TestRegistryServesAgreesWithFactorize: for every registered strategy,
// workload kind and participation, the registry's Serves accepts exactly
// the workloads that the strategy's Factorize factorizes. The workloads
// cover each kind of structure: prefix sums (also at R = 1), momentum
// (Toeplitz, two subdiagonals in its inverse), weighted prefix sums (a
// bidiagonal inverse, not Toeplitz), a Toeplitz matrix without a banded
// inverse, and a matrix neither Toeplitz nor with a banded inverse. What
// is expected of each, written by hand from the strategies' documentation,
// is checked as well, so that neither side can drift alone.
func TestRegistryServesAgreesWithFactorize(t *testing.T) {
	ctx := context.Background()
	const r = 12
	prefix, _ := factorize.Prefix(r)
	prefix1, _ := factorize.Prefix(1)
	momentum, _ := factorize.Momentum(r, 0.9)
	ws := make([]float64, r)
	for i := range ws {
		ws[i] = 1 + float64(i%3)
	}
	weighted, _ := factorize.WeightedPrefix(ws)
	// A Toeplitz matrix whose inverse is not banded: 1 on the diagonal,
	// 1/(k+1)^2 on the k-th subdiagonal.
	toep := mat.NewTriDense(r, mat.Lower, nil)
	// A matrix of neither structure: entries 1 + (i + 2j mod 5) / 10.
	gen := mat.NewTriDense(r, mat.Lower, nil)
	for i := 0; i < r; i++ {
		for j := 0; j <= i; j++ {
			toep.SetTri(i, j, 1/float64((i-j+1)*(i-j+1)))
			gen.SetTri(i, j, 1+float64((i+2*j)%5)/10)
		}
	}
	toeplitz, err := factorize.NewWorkload(toep)
	if err != nil {
		t.Fatal(err)
	}
	general, err := factorize.NewWorkload(gen)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := toeplitz.InverseBand(); ok {
		t.Fatal("the Toeplitz test matrix has a banded inverse")
	}
	if _, ok := general.InverseBand(); ok {
		t.Fatal("the general test matrix has a banded inverse")
	}
	workloads := map[string]*factorize.Workload{"prefix": prefix, "prefix R=1": prefix1, "momentum": momentum, "weighted": weighted, "toeplitz": toeplitz, "general": general}
	// want[strategy][workload]: served under single participation; the
	// participation-dependent cases are below.
	toeplitzOnly := map[string]bool{"prefix": true, "prefix R=1": true, "momentum": true, "toeplitz": true}
	want := map[string]map[string]bool{
		"identity":        {"prefix": true, "prefix R=1": true, "momentum": true, "weighted": true, "toeplitz": true, "general": true},
		"tree":            {"prefix": true, "prefix R=1": true},
		"sqrt":            {"prefix": true, "prefix R=1": true},
		"sqrt-normalized": {"prefix": true, "prefix R=1": true},
		"banded":          toeplitzOnly,
		"bsr":             toeplitzOnly,
		"banded-toeplitz": toeplitzOnly,
		"bisr":            toeplitzOnly,
		"bandinv":         toeplitzOnly,
		"blt":             toeplitzOnly,
		"semiseparable":   {"prefix": true, "weighted": true},
		"optimal":         {"prefix": true, "prefix R=1": true, "momentum": true, "weighted": true, "toeplitz": true, "general": true},
	}
	for _, name := range factorize.Strategies() {
		if want[name] == nil {
			t.Errorf("strategy %s: no expectation written for it", name)
			continue
		}
		s, _ := factorize.ParseStrategy(name)
		s, _ = factorize.WithLossOnly(s, false) // semiseparable forms its factors, as under other participation it must
		info, _ := factorize.Lookup(name)
		if info.Workloads == "" {
			t.Errorf("strategy %s: Workloads is empty", name)
		}
		for wname, w := range workloads {
			for _, p := range []factorize.Participation{factorize.SingleParticipation(), factorize.FixedEpochs(w.R()), factorize.FixedEpochs(min(2, w.R())), factorize.MinSeparation(min(3, w.R()), 0)} {
				expect := want[name][wname]
				switch {
				case name == "banded" && p.Kind == factorize.KindMinSep:
					_, expect = w.InverseBand() // the certified banded solver
				case name == "optimal" && p.Kind == factorize.KindEpochs && p.K > 1 && p.K < w.R():
					_, expect = w.InverseBand() // the multi-epoch solver
				}
				err := info.Serves(s, w, p)
				var pe *factorize.ParamError
				if (err == nil) != expect || (err != nil && (!errors.As(err, &pe) || pe.Param != "workload")) {
					t.Errorf("%s on %s under %v: Serves = %v, want served = %v", name, wname, p, err, expect)
				}
				_, ferr := s.Factorize(ctx, w, p)
				if (ferr == nil) != (err == nil) {
					t.Errorf("%s on %s under %v: Factorize = %v, Serves = %v", name, wname, p, ferr, err)
				}
			}
		}
	}
	// optimal's structured path needs a banded inverse.
	s, _ := factorize.ParseStrategy("optimal:path=structured")
	info, _ := factorize.Lookup("optimal")
	for wname, w := range workloads {
		_, banded := w.InverseBand()
		err := info.Serves(s, w, factorize.SingleParticipation())
		_, ferr := s.Factorize(ctx, w, factorize.SingleParticipation())
		if (err == nil) != banded || (ferr == nil) != banded {
			t.Errorf("optimal:path=structured on %s: Serves = %v, Factorize = %v, want served = %v", wname, err, ferr, banded)
		}
	}
}
