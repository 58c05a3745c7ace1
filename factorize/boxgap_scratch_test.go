//go:build certgap

// An experiment, not a test of the default suite (docs/solver.md, "What
// limits R = 10^5"): the quadratic bound with the box |X*_ij| <= 1.
//
//	go test -tags certgap -run BoxGap -v ./factorize/

package factorize_test

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestBoxGap: f(X*) = f(X) - <R, D> + tr(G D X*^{-1} D) with D = X* - X on
// the band's off-diagonal, and X*^{-1} >= P^{-1} for P = X + delta I or
// Lambda I (Lambda >= lambda_max(X*), 2b - 1 by Gershgorin), so the gap is
// at most sup over D in the box -1 - X_ij <= D_ij <= 1 - X_ij of
// <R, D> - tr(G D P^{-1} D). By duality that is the minimum over splits
// R = R1 + R2 of 1/4 tr(R1^T G^{-1} R1 P) + sum_ij c_ij(R2_ij),
// c(y) = (1 - x) y for y >= 0 and (1 + x) |y| below: every split gives a
// valid bound. R2 = 0 is the solver's quadratic bound, R1 = 0 the linear
// one; the split is found by FISTA.
func TestBoxGap(t *testing.T) {
	b := 16
	n, X, Xs, S, gap := certgapCase(t, b)
	iters := 3000
	var Xi, Si, tmp, G, Gi mat.Dense
	if err := Xi.Inverse(X); err != nil {
		t.Fatal(err)
	}
	if err := Si.Inverse(S); err != nil {
		t.Fatal(err)
	}
	loss := func(x *mat.Dense) float64 {
		var a, p mat.Dense
		if err := a.Inverse(x); err != nil {
			t.Fatal(err)
		}
		p.Mul(&a, S)
		return mat.Trace(&p)
	}
	f, fs := loss(X), loss(Xs)
	truth := f/fs - 1
	tmp.Mul(&Xi, S)
	G.Mul(&tmp, &Xi)
	tmp.Mul(X, &Si)
	Gi.Mul(&tmp, X)
	inBand := func(i, j int) bool { d := i - j; return d != 0 && d > -b && d < b }
	R := mat.NewDense(n, n, nil)
	lin := 0.0
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if inBand(i, j) {
				g, x := G.At(i, j), X.At(i, j)
				R.Set(i, j, g)
				lin += max(g*(1-x), -g*(1+x))
			}
		}
	}
	var es mat.EigenSym
	giSym := mat.NewSymDense(n, nil)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			giSym.SetSym(i, j, (Gi.At(i, j)+Gi.At(j, i))/2)
		}
	}
	es.Factorize(giSym, false)
	giMax := es.Values(nil)[n-1]
	t.Logf("n %d b %d: certified %.3g, true gap %.3g; linear part alone %.3g x", n, b, gap, truth, lin/(f-lin)/truth)
	for _, pc := range []struct {
		name string
		P    *mat.Dense
		pMax float64
	}{
		{"X + (2b-1) I", addDiag(X, float64(2*b-1)), 0},
		{"(2b-1) I", addDiag(mat.NewDense(n, n, nil), float64(2*b-1)), float64(2*b - 1)},
	} {
		if pc.pMax == 0 {
			pc.pMax = float64(2*b-1) * 2 // Gershgorin on X, plus delta
		}
		// F(R2) = 1/4 tr((R - R2)^T Gi (R - R2) P) + c(R2).
		quad := func(v *mat.Dense) (float64, *mat.Dense) {
			var a, g mat.Dense
			a.Mul(&Gi, v)
			g.Mul(&a, pc.P)
			var e mat.Dense
			e.MulElem(v, &g)
			// gradient wrt v: 1/2 Gi v P, on the band only
			for i := 0; i < n; i++ {
				for j := 0; j < n; j++ {
					if !inBand(i, j) {
						g.Set(i, j, 0)
					}
				}
			}
			g.Scale(0.5, &g)
			return mat.Sum(&e) / 4, &g
		}
		cost := func(r2 *mat.Dense) float64 {
			v := mat.DenseCopyOf(R)
			v.Sub(v, r2)
			q, _ := quad(v)
			c := 0.0
			for i := 0; i < n; i++ {
				for j := 0; j < n; j++ {
					if y := r2.At(i, j); y != 0 {
						x := X.At(i, j)
						c += max(y*(1-x), -y*(1+x))
					}
				}
			}
			return q + c
		}
		L := 0.5 * giMax * pc.pMax
		step := 1 / L
		r2 := mat.NewDense(n, n, nil)
		yk := mat.DenseCopyOf(r2)
		tk := 1.0
		best := cost(r2)
		t.Logf("  P = %-13s R2 = 0: %.3g x true", pc.name, best/(f-best)/truth)
		for it := 1; it <= iters; it++ {
			v := mat.DenseCopyOf(R)
			v.Sub(v, yk)
			_, g := quad(v) // d/dR2 = -g
			next := mat.NewDense(n, n, nil)
			for i := 0; i < n; i++ {
				for j := 0; j < n; j++ {
					if !inBand(i, j) {
						continue
					}
					z := yk.At(i, j) + step*g.At(i, j)
					x := X.At(i, j)
					a, a2 := step*(1-x), step*(1+x)
					switch {
					case z > a:
						next.Set(i, j, z-a)
					case z < -a2:
						next.Set(i, j, z+a2)
					}
				}
			}
			tn := (1 + math.Sqrt(1+4*tk*tk)) / 2
			yk = mat.DenseCopyOf(next)
			d := mat.DenseCopyOf(next)
			d.Sub(d, r2)
			d.Scale((tk-1)/tn, d)
			yk.Add(yk, d)
			r2, tk = next, tn
			if it%500 == 0 || it == iters {
				c := cost(r2)
				best = min(best, c)
				t.Logf("  P = %-13s FISTA %5d: %.3g x true", pc.name, it, best/(f-best)/truth)
			}
		}
	}
}

func addDiag(a *mat.Dense, d float64) *mat.Dense {
	c := mat.DenseCopyOf(a)
	r, _ := c.Dims()
	for i := 0; i < r; i++ {
		c.Set(i, i, c.At(i, i)+d)
	}
	return c
}
