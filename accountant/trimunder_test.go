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
