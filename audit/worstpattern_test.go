package audit

import (
	"context"
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dpmf/dpmf/factorize"
)

// bruteWorst returns max over learners i and over every non-empty set S of
// at most k of the rounds 0..R-1 pairwise at least b apart (k = 0: no
// limit) of ||sum_{r in S} w[r][i] C[:, r]||, by enumerating the 2^R
// subsets as bit masks.
func bruteWorst(c *mat.Dense, b, k int, w [][]float64) float64 {
	m, R := c.Dims()
	best := 0.0
	for mask := uint(1); mask < 1<<R; mask++ {
		if k > 0 && bits.OnesCount(mask) > k {
			continue
		}
		ok, last := true, -1
		for r := 0; r < R; r++ {
			if mask&(1<<r) != 0 {
				if last >= 0 && r-last < b {
					ok = false
					break
				}
				last = r
			}
		}
		if !ok {
			continue
		}
		for i := range w[0] {
			ss := 0.0
			for a := 0; a < m; a++ {
				v := 0.0
				for r := 0; r < R; r++ {
					if mask&(1<<r) != 0 {
						v += w[r][i] * c.At(a, r)
					}
				}
				ss += v * v
			}
			best = math.Max(best, math.Sqrt(ss))
		}
	}
	return best
}

// worstCase is a C, a separation b, a limit k (0: none) and the server's
// weights w[r][i].
type worstCase struct {
	name string
	c    *mat.Dense
	b, k int
	w    [][]float64
}

// worstCases builds the brute-force cases at R = 12 with n = 3 learners:
// banded C (columns b or more apart with disjoint supports, so C^T C is
// banded within b) with random signed entries and random weights, as
// dropouts make them; the square-root Toeplitz C (coefficients
// binom(2j, j) / 4^j: non-negative, non-increasing) with equal weights;
// and a dense C with random signed entries and random weights.
func worstCases() []worstCase {
	const R, n = 12, 3
	rng := rand.New(rand.NewPCG(26, 4))
	weights := func(equal bool) [][]float64 {
		w := make([][]float64, R)
		for r := range w {
			w[r] = make([]float64, n)
			for i := range w[r] {
				w[r][i] = 1.0 / n
				if !equal {
					w[r][i] = (0.5 + rng.Float64()) / n
				}
			}
		}
		return w
	}
	var out []worstCase
	for _, b := range []int{2, 3, 5} {
		for _, k := range []int{0, 2} {
			banded := mat.NewDense(R, R, nil)
			for r := 0; r < R; r++ {
				for a := r; a < R && a-r < b; a++ {
					banded.Set(a, r, rng.NormFloat64())
				}
			}
			out = append(out, worstCase{"banded", banded, b, k, weights(false)})
			sqrt := mat.NewDense(R, R, nil)
			coef := 1.0
			for j := 0; j < R; j++ {
				for r := 0; r+j < R; r++ {
					sqrt.Set(r+j, r, coef)
				}
				coef *= float64(2*j+1) / float64(2*j+2) // binom(2j+2, j+1) / 4^(j+1)
			}
			out = append(out, worstCase{"sqrt Toeplitz", sqrt, b, k, weights(true)})
			dense := mat.NewDense(R, R, nil)
			for a := 0; a < R; a++ {
				for r := 0; r <= a; r++ {
					dense.Set(a, r, rng.NormFloat64())
				}
			}
			out = append(out, worstCase{"dense signed", dense, b, k, weights(false)})
		}
	}
	return out
}

// TestWorstSampleMinSepBruteForce: under min-separation the replay's
// adversarial sample is placed at the worst pattern the sensitivity claim
// covers (any rounds at least b apart, at most k), checked against every
// subset of 12 rounds. With the exhaustive search (the audit's small
// plans) it is the maximum for any C and weights. Without it (large R)
// it still is for a banded C under any weights (the dynamic program on
// the columns' norms) and for a non-negative non-increasing Toeplitz C
// under equal weights (runs exactly b apart, Kalinin & Lampert 2024), and
// never above the maximum otherwise. Before, only runs exactly b apart
// were tried: under weights that differ by round (dropouts) they missed
// the banded C's worst pattern, and the replay measured less than the
// claim covers.
func TestWorstSampleMinSepBruteForce(t *testing.T) {
	ctx := context.Background()
	for _, c := range worstCases() {
		_, R := c.c.Dims()
		p := factorize.MinSeparation(c.b, c.k)
		present := make([][]bool, R)
		for r := range present {
			present[r] = []bool{true, true, true}
		}
		want := bruteWorst(c.c, c.b, c.k, c.w)
		_, s, got, err := worstSample(ctx, c.c, p, c.w, present)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-want) > 1e-12*want {
			t.Errorf("%s, b = %d, k = %d: worst pattern %v gives %.15g, brute force %.15g", c.name, c.b, c.k, s, got, want)
		}
		_, s, got, err = worstSampleWithin(ctx, c.c, p, c.w, present, 0)
		if err != nil {
			t.Fatal(err)
		}
		if c.name == "dense signed" {
			if got > want*(1+1e-12) {
				t.Errorf("%s, b = %d, k = %d: without the exhaustive search %v gives %.15g, above the maximum %.15g", c.name, c.b, c.k, s, got, want)
			}
			continue
		}
		if math.Abs(got-want) > 1e-12*want {
			t.Errorf("%s, b = %d, k = %d: without the exhaustive search %v gives %.15g, brute force %.15g", c.name, c.b, c.k, s, got, want)
		}
	}
}

// TestSeparatedSets: the exhaustive search lists every set (the count
// from the brute force's masks), and refuses past its limit.
func TestSeparatedSets(t *testing.T) {
	for _, c := range []struct{ R, b, k int }{{12, 2, 12}, {12, 3, 2}, {16, 4, 4}, {5, 1, 5}, {7, 100, 1}} {
		want := 0
		for mask := uint(1); mask < 1<<c.R; mask++ {
			ok, last := bits.OnesCount(mask) <= c.k, -1
			for r := 0; r < c.R && ok; r++ {
				if mask&(1<<r) != 0 {
					ok = last < 0 || r-last >= c.b
					last = r
				}
			}
			if ok {
				want++
			}
		}
		got, ok := separatedSets(c.R, c.b, c.k, 1<<20)
		if !ok || len(got) != want {
			t.Errorf("R = %d, b = %d, k = %d: %d sets (ok %v), want %d", c.R, c.b, c.k, len(got), ok, want)
		}
		if _, ok := separatedSets(c.R, c.b, c.k, want-1); ok {
			t.Errorf("R = %d, b = %d, k = %d: %d sets within a limit of %d", c.R, c.b, c.k, want, want-1)
		}
	}
}

// TestBestSeparatedSet: the dynamic program's set is valid (indices at
// least b apart, at most k, non-empty) and its sum is the largest over
// every subset of 12 indices (brute force), where k binds and where it
// does not (k >= ceil(R / b): the one-table path).
func TestBestSeparatedSet(t *testing.T) {
	const R = 12
	rng := rand.New(rand.NewPCG(7, 12))
	for trial := range 60 {
		d := make([]float64, R)
		for i := range d {
			if rng.IntN(4) > 0 { // some zeros
				d[i] = rng.ExpFloat64()
			}
		}
		b, k := 1+rng.IntN(5), 1+rng.IntN(6)
		best := 0.0
		for mask := uint(1); mask < 1<<R; mask++ {
			ok, last, sum := bits.OnesCount(mask) <= k, -1, 0.0
			for r := 0; r < R && ok; r++ {
				if mask&(1<<r) != 0 {
					ok = last < 0 || r-last >= b
					last, sum = r, sum+d[r]
				}
			}
			if ok {
				best = max(best, sum)
			}
		}
		s := bestSeparatedSet(d, b, k)
		sum := 0.0
		for j, r := range s {
			sum += d[r]
			if j > 0 && r-s[j-1] < b {
				t.Fatalf("trial %d (b = %d, k = %d): %v has indices closer than b", trial, b, k, s)
			}
		}
		if len(s) == 0 || len(s) > k || math.Abs(sum-best) > 1e-12*best {
			t.Errorf("trial %d (b = %d, k = %d): set %v of sum %v, want at most %d indices of sum %v", trial, b, k, s, sum, k, best)
		}
	}
}
