package factorize

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/dpmf/dpmf/internal/ddfloat"
	"github.com/dpmf/dpmf/internal/testutil"
)

// TestNormsExpoDense checks normsExpo's O(R K) norms of B = A diag(scale)
// T_u for prefix sums against B formed densely, row by row from its
// definition B[i][j] = sum_{j <= t <= i} scale_t u_{t-j}, everything
// (u_k = sum_m w_m lambda_m^(k-1), the rows, the squares and the sums) in
// double-double, with the parameters and scales that
// ParseStrategy("blt:buffers=K") fits at R = 3000, K = 1..8. ||B||_F^2 and
// max_i ||B[i, :]||^2 must agree to a relative 2e-13. Before, with the
// running sums in float64, they differed by up to 1.9e-12 (K = 2 and 7;
// 1.2e-11 at R = 10^4), and the loss-only metrics of blt:buffers=2 at R =
// 3000 missed the dense factorization's by more than lossOnlyAgrees'
// 1e-12; the column recurrence agrees with this reference to 1e-15.
func TestNormsExpoDense(t *testing.T) {
	testutil.SkipOn386Short(t, "eight BLT fits at R = 3000 and a double-double B: float64")
	const r = 3000
	ctx := context.Background()
	w, _ := Prefix(r)
	tw, err := toeplitzOf(StrategyBLT, w)
	if err != nil {
		t.Fatal(err)
	}
	for k := 1; k <= 8; k++ {
		s, err := ParseStrategy(fmt.Sprintf("blt:buffers=%d", k))
		if err != nil {
			t.Fatal(err)
		}
		if s, err = WithLossOnly(s, true); err != nil {
			t.Fatal(err)
		}
		f, err := s.Factorize(ctx, w, SingleParticipation())
		if err != nil {
			t.Fatal(err)
		}
		p := f.Operator.(*BLTParams)
		scale := p.Scale
		if len(scale) != r {
			t.Fatalf("K=%d: %d scales, want %d", k, len(scale), r)
		}
		uh, ul := make([]float64, r), make([]float64, r)
		uh[0] = 1
		for m, wm := range p.Weights {
			ph, pl := wm, 0.0
			for i := 1; i < r; i++ {
				uh[i], ul[i] = ddfloat.Add(uh[i], ul[i], ph, pl)
				ph, pl = ddfloat.Mul(ph, pl, p.Lambdas[m], 0)
			}
		}
		bh, bl := make([]float64, r), make([]float64, r)
		var fh, fl, most float64
		for i := range r {
			var nh, nl float64
			for j := 0; j <= i; j++ {
				th, tl := ddfloat.Mul(uh[i-j], ul[i-j], scale[i], 0)
				bh[j], bl[j] = ddfloat.Add(bh[j], bl[j], th, tl)
				sh, sl := ddfloat.Mul(bh[j], bl[j], bh[j], bl[j])
				nh, nl = ddfloat.Add(nh, nl, sh, sl)
			}
			fh, fl = ddfloat.Add(fh, fl, nh, nl)
			most = math.Max(most, nh+nl)
		}
		frob := fh + fl
		st := &scaledToeplitz{tw: tw, c: bltInverse(p, r), u: p.Coefficients(r), scale: scale, expo: p}
		gotF, gotM := st.normsExpo()
		if math.Abs(gotF-frob) > 2e-13*frob || math.Abs(gotM-most) > 2e-13*most {
			t.Errorf("R=%d K=%d: normsExpo ||B||_F^2 %.17g, max row %.17g; dense %.17g, %.17g (relative %.2g, %.2g)",
				r, k, gotF, gotM, frob, most, gotF/frob-1, gotM/most-1)
		}
	}
}
