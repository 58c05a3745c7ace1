package mechanism

import (
	"math"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestCovariance checks, for every mechanism, that the empirical covariance
// across coordinates of the R rounds matches V^2 M M^T, M = A^{-1} B formed
// densely (C^{-1} for square C).
//
// Bound and false-failure rate. Round a's entry at a coordinate is
// y_a = u_a . g with u_a row a of L = V M and g standard normal, independent
// across coordinates. y_a y_b = g^T K g with K = (u_a u_b^T + u_b u_a^T)/2,
// whose eigenvalues are (u_a.u_b +- |u_a||u_b|)/2, so summed over d
// coordinates it is l+ X1 + l- X2 with X1, X2 independent chi-square(d)
// variables, l+ >= 0 >= l-, and l+ - l- = |u_a||u_b| = sqrt(S_aa S_bb).
// By Laurent and Massart (2000, Lemma 1), |X - d| <= 2 sqrt(d x) + 2x except
// with probability 2 e^{-x}, so the empirical covariance is within
// sqrt(S_aa S_bb) (2 sqrt(x/d) + 2x/d) of S_ab except with probability
// 4 e^{-x}. A union bound over the R(R+1)/2 entries of every case makes
// the test fail falsely with probability at most 1e-6 (assuming the
// sampler's draws were exactly Gaussian and independent).
func TestCovariance(t *testing.T) {
	const (
		r   = 6
		dim = 100000
		v   = 1.3
	)
	cs := cases(t, r)
	entries := float64(len(cs) * r * (r + 1) / 2)
	x := math.Log(4 * entries / 1e-6)
	rel := 2*math.Sqrt(x/dim) + 2*x/dim
	for _, tc := range cs {
		m, err := New(tc.f, dim, v, tc.opts...) // default key: crypto/rand
		if err != nil {
			t.Fatal(err)
		}
		y, err := NoiseMatrix(m)
		if err != nil {
			t.Fatal(err)
		}
		var emp mat.SymDense
		emp.SymOuterK(1/float64(dim), y)
		op := explicitOperator(t, tc.f)
		var want mat.SymDense
		want.SymOuterK(v*v, op)
		for a := 0; a < r; a++ {
			for b := 0; b <= a; b++ {
				tol := rel * math.Sqrt(want.At(a, a)*want.At(b, b))
				if d := math.Abs(emp.At(a, b) - want.At(a, b)); d > tol {
					t.Errorf("%s: covariance (%d, %d) = %.5g, want %.5g +- %.3g", tc.name, a, b, emp.At(a, b), want.At(a, b), tol)
				}
			}
		}
	}
}

// TestSampler checks the marginal distribution of the source's draws: the
// empirical CDF at a few points, and the frequencies of |z| > 3 and |z| > 4.
//
// False-failure rate: for the CDF, Hoeffding's inequality gives
// P(|p^ - p| >= t) <= 2 exp(-2 n t^2); t is set so that the 7 checks
// together fail with probability 1e-7. For the tails, the Chernoff bounds
// P(X >= (1+e) mu) <= exp(-e^2 mu / (2+e)) and P(X <= (1-e) mu) <=
// exp(-e^2 mu / 2) with the relative tolerances below give at most 5e-8
// each. In total below 3e-7.
func TestSampler(t *testing.T) {
	const n = 1 << 22
	g := newGen(&source{key: SeedKey(0)}) // a fixed key: the test is deterministic
	z := make([]float64, n)
	for row := 0; row < n/blockLen; row++ {
		g.Fill(row, 0, z[row*blockLen:(row+1)*blockLen])
	}
	qs := []float64{-2, -1, -0.5, 0, 0.5, 1, 2}
	tol := math.Sqrt(math.Log(2*float64(len(qs))/1e-7) / (2 * n))
	for _, q := range qs {
		cnt := 0
		for _, v := range z {
			if v <= q {
				cnt++
			}
		}
		p := 0.5 * math.Erfc(-q/math.Sqrt2)
		if got := float64(cnt) / n; math.Abs(got-p) > tol {
			t.Errorf("P(z <= %v) = %.5f, want %.5f +- %.5f", q, got, p, tol)
		}
	}
	for _, tail := range []struct{ q, eps float64 }{{3, 0.12}, {4, 0.45}} {
		cnt := 0
		for _, v := range z {
			if math.Abs(v) > tail.q {
				cnt++
			}
		}
		mu := n * math.Erfc(tail.q/math.Sqrt2)
		if up, down := math.Exp(-tail.eps*tail.eps*mu/(2+tail.eps)), math.Exp(-tail.eps*tail.eps*mu/2); up > 5e-8 || down > 5e-8 {
			t.Fatalf("tail tolerance %v at %v too tight for the stated rate: %.2g, %.2g", tail.eps, tail.q, up, down)
		}
		if got := float64(cnt); math.Abs(got-mu) > tail.eps*mu {
			t.Errorf("#{|z| > %v} = %v, want %.1f within %.0f%%", tail.q, got, mu, 100*tail.eps)
		}
	}
}

// TestSamplerKS compares the whole empirical CDF of the source's draws with
// the standard normal CDF (the Kolmogorov-Smirnov distance), where
// TestSampler checks seven points and the tails: a defect between those
// points (one layer of the ziggurat drawn wrong) shows here. The 2^22
// draws are 32 noise rows times 32 blocks of coordinates, so that both
// counters of the block key vary. The first two moments are checked too.
//
// False-failure rate: by the Dvoretzky-Kiefer-Wolfowitz inequality with
// Massart's constant, P(sup |F_n - F| > e) <= 2 exp(-2 n e^2), and e is set
// so that this is 1e-7. The mean of n standard normals is N(0, 1/n), so
// |mean| > sqrt(2 x / n) has probability at most 2 e^{-x}; the sum of
// squares is chi-square(n), so by Laurent and Massart (2000, Lemma 1)
// |sum z^2 - n| > 2 sqrt(n x) + 2 x has probability at most 2 e^{-x}; with
// x = ln(2 / 1e-7) each. In total below 3e-7 (if the draws were exactly
// Gaussian and independent; the key is fixed, so the test is
// deterministic). A 1% error in the scale moves the KS distance by about
// 0.0024 and the second moment by 0.02, beyond the tolerances (0.0014 and
// 0.004).
func TestSamplerKS(t *testing.T) {
	const rows, blocks = 32, 32
	const n = rows * blocks * blockLen
	g := newGen(&source{key: SeedKey(1)})
	z := make([]float64, 0, n)
	for j := 0; j < rows; j++ {
		for b := 0; b < blocks; b++ {
			blk := make([]float64, blockLen)
			g.Fill(j, b*blockLen, blk)
			z = append(z, blk...)
		}
	}
	var m1, m2 float64
	for _, v := range z {
		m1 += v
		m2 += v * v
	}
	x := math.Log(2 / 1e-7)
	if tol := math.Sqrt(2 * x / n); math.Abs(m1/n) > tol {
		t.Errorf("mean %.5f, want 0 +- %.5f", m1/n, tol)
	}
	if tol := (2*math.Sqrt(n*x) + 2*x) / n; math.Abs(m2/n-1) > tol {
		t.Errorf("mean square %.5f, want 1 +- %.5f", m2/n, tol)
	}
	slices.Sort(z)
	dist := 0.0
	for i, v := range z {
		f := 0.5 * math.Erfc(-v/math.Sqrt2)
		dist = max(dist, math.Abs(float64(i+1)/n-f), math.Abs(f-float64(i)/n))
	}
	if e := math.Sqrt(math.Log(2/1e-7) / (2 * n)); dist > e {
		t.Errorf("Kolmogorov-Smirnov distance %.5f from the standard normal CDF, want at most %.5f", dist, e)
	}
}
