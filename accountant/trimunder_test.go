package accountant

import (
	"math"
	"testing"
)

// TestTrimUnderflowKeepsBound: trim drops the bottom masses m_i of a tilted
// distribution while sum m_i e^(tau i) stays within the error bound
// e^logErr, and adds that sum to the bound. Its weights were formed as
// m_i e^(tau i) in float64: at a large tilt and a very negative absolute
// index they underflow to 0, and where e^logErr underflows too (logErr <
// -745) every such mass was dropped and counted as 0, whatever its size (a
// composition found by comparing G-like step distributions composed
// SelfCompose(30) then Compose then SelfCompose(3) against a math/big
// direct convolution lost a mass of 0.17). Here, at tau = 4 from index -190,
// the masses' weights are e^-760 and up, far above e^logErr = e^-850:
// nothing may be dropped without counting it. The check is the property
// the queries use, computed directly: for every absolute index j, the tail
// sum of what trim changed, sum_{i >= j} |m_i - m'_i|, is at most
// errFrom(j) (the input's masses taken as exact).
func TestTrimUnderflowKeepsBound(t *testing.T) {
	for _, c := range []struct {
		lo     int
		tau    float64
		logErr float64
	}{{-190, 4, -850}, {-190, 4, -700}, {-400, 2, -1000}, {-10, 0.5, -30}} {
		mass := []float64{0.5, 0.3, 0.1, 0.05, 0.03, 0.02}
		orig := append([]float64(nil), mass...)
		d := &lossDist{lo: c.lo, mass: mass, tau: c.tau, logErr: c.logErr}
		d.trim()
		hi := c.lo + len(orig) - 1
		for j := c.lo - 3; j <= hi+1; j++ {
			diff := 0.0
			for i := max(j, c.lo); i <= hi; i++ {
				kept := 0.0
				if i >= d.lo {
					kept = d.mass[i-d.lo]
				}
				diff += math.Abs(orig[i-c.lo] - kept)
			}
			if b := d.errFrom(float64(j)); diff > b {
				t.Errorf("lo %d tau %v logErr %v: after trim (lo %d), the tail sum at %d of the masses dropped is %.6g > its bound %.6g",
					c.lo, c.tau, c.logErr, d.lo, j, diff, b)
			}
		}
	}
}

// TestTiltedTinyTopMass: tilted divides the tilted masses m_i e^(t (i -
// last)) by their sum Z, at most the top mass; where that is subnormal
// (1e-310 here), 1/Z overflowed and the composition's masses and error
// bound came out NaN. And the masses lost to underflow before the
// division weigh up to 2^-1074 / Z each in the normalised units, not the
// 2^-1074 its callers counted. a has 0.3 at index 0 and the top mass at
// 186 (or 0.5 at 0 and 1e-300 at 200), composed with b = (0.5, 0.5) at
// tilt 4 per index; the exact composition is computed directly, and every
// tail sum of the difference must be within errFrom (a NaN bound fails).
func TestTiltedTinyTopMass(t *testing.T) {
	for _, c := range []struct {
		n        int
		bot, top float64
	}{{187, 0.3, 1e-310}, {201, 0.5, 1e-300}} {
		am := make([]float64, c.n)
		am[0], am[c.n-1] = c.bot, c.top
		a := &lossDist{lo: 0, mass: am, tau: 4, logErr: math.Inf(-1)}
		b := &lossDist{lo: 0, mass: []float64{0.5, 0.5}, tau: 4, logErr: math.Inf(-1)}
		exact := make([]float64, c.n+1)
		for i, x := range am {
			for j, y := range b.mass {
				exact[i+j] += x * y
			}
		}
		for _, spans := range []*tailSpans{nil, {lowB: 0}} {
			r, err := convolveBound(a, b, 4, spans)
			if err != nil {
				t.Fatal(err)
			}
			for j := -2; j <= c.n+1; j++ {
				diff := 0.0
				for i := max(j, 0); i < len(exact); i++ {
					got := 0.0
					if k := i - r.lo; k >= 0 && k < len(r.mass) {
						got = r.mass[k]
					}
					diff += exact[i] - got
				}
				if bd := r.errFrom(float64(j)); !(math.Abs(diff) <= bd*(1+1e-9)+r.rel*exact[0]) {
					t.Errorf("top %v, spans %v: tail sum at %d of the error is %.6g, bound %.6g", c.top, spans != nil, j, diff, bd)
					break
				}
			}
		}
	}
}
