package mechanism_test

import (
	"context"
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/mechanism"
)

// TestCovarianceAcrossSeeds checks that consecutive seeds give independent
// streams with the right correlation: for the optimal factorization at
// R = 8 (its quasiseparable operator, correlated across rounds), each of
// n seeds contributes one sample, the 2R-vector of its first two
// coordinates over the R rounds; their empirical second moment must be
// std^2 diag(S, S), S = C^{-1} C^{-T} formed densely (triangular solve of
// the API's C), with zero cross terms between the coordinates; and the
// cross moment of the samples of seeds 2i and 2i+1 must be zero.
// TestCovariance samples across the coordinates of one key; this samples
// across keys, so a seed derivation that let nearby seeds share or
// correlate their draws fails here.
//
// Bound and false-failure rate, as in TestCovariance: each sample is
// L g with g standard normal and L = std diag(M, M), so by Laurent and
// Massart (2000, Lemma 1) an entry (a, b) of the second moment is within
// sqrt(S_aa S_bb) (2 sqrt(x/n) + 2x/n) of its expectation except with
// probability 4 e^{-x}. The same holds for the cross moment of two
// independent samples over n/2 pairs (y_a y'_b is [g; g']^T K [g; g'] with
// K's eigenvalues +-|u_a||u_b|/2) with expectation 0. A union bound over
// the 2R(2R+1)/2 + R^2 = 200 entries with x = ln(4 200 / 1e-6) makes the
// test fail falsely with probability at most 1e-6 (if the draws were
// exactly Gaussian and independent).
func TestCovarianceAcrossSeeds(t *testing.T) {
	const (
		r   = 8
		n   = 1 << 15
		std = 0.6
	)
	w, err := factorize.Prefix(r)
	if err != nil {
		t.Fatal(err)
	}
	f, err := factorize.OptimalStrategy{}.Factorize(context.Background(), w, factorize.SingleParticipation())
	if err != nil {
		t.Fatal(err)
	}
	if f.Operator.Memory().States == 0 {
		t.Fatalf("optimal at R = %d streams %v without state: not a correlated stream", r, f.Operator)
	}
	minv := denseNoise(t, f, identity(r)) // C^{-1}
	var s mat.SymDense
	s.SymOuterK(std*std, minv)

	y := mat.NewDense(n, 2*r, nil)
	round := make([]float64, 2)
	for seed := 0; seed < n; seed++ {
		m, err := mechanism.New(f, 2, std, mechanism.WithSeed(uint64(seed)), mechanism.WithWorkers(1))
		if err != nil {
			t.Fatal(err)
		}
		row := y.RawRowView(seed)
		for i := 0; i < r; i++ {
			if err := m.Next(round); err != nil {
				t.Fatal(err)
			}
			row[i], row[r+i] = round[0], round[1]
		}
	}
	var emp mat.SymDense
	emp.SymRankK(mat.NewSymDense(2*r, nil), 1/float64(n), y.T())
	x := math.Log(4 * float64(2*r*(2*r+1)/2+r*r) / 1e-6)
	rel := 2*math.Sqrt(x/n) + 2*x/n
	want := func(a, b int) float64 {
		if a/r != b/r {
			return 0 // different coordinates: independent
		}
		return s.At(a%r, b%r)
	}
	worst := 0.0
	for a := 0; a < 2*r; a++ {
		for b := 0; b <= a; b++ {
			tol := rel * math.Sqrt(want(a, a)*want(b, b))
			d := math.Abs(emp.At(a, b) - want(a, b))
			worst = math.Max(worst, d/tol)
			if d > tol {
				t.Errorf("second moment (%d, %d) over %d seeds = %.5g, want %.5g +- %.3g", a, b, n, emp.At(a, b), want(a, b), tol)
			}
		}
	}
	// Seeds 2i and 2i+1, first coordinate.
	relPair := 2*math.Sqrt(2*x/n) + 4*x/n
	for a := 0; a < r; a++ {
		for b := 0; b < r; b++ {
			sum := 0.0
			for i := 0; i+1 < n; i += 2 {
				sum += y.At(i, a) * y.At(i+1, b)
			}
			got := sum / (n / 2)
			tol := relPair * math.Sqrt(s.At(a, a)*s.At(b, b))
			worst = math.Max(worst, math.Abs(got)/tol)
			if math.Abs(got) > tol {
				t.Errorf("cross moment of consecutive seeds, rounds (%d, %d) = %.5g, want 0 +- %.3g", a, b, got, tol)
			}
		}
	}
	t.Logf("%v: largest deviation %.2f of the tolerance (relative %.3g)", f.Operator, worst, rel)
}

// identity returns the n x n identity matrix.
func identity(n int) *mat.Dense {
	id := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		id.Set(i, i, 1)
	}
	return id
}
