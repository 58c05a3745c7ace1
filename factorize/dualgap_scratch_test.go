//go:build certgap

// An experiment, not a test of the default suite (docs/solver.md, "What
// limits R = 10^5", a dual point): run it with
//
//	go test -tags certgap -run DualGap -v ./factorize/
//
// (n = 300 with 16 bands, about 2 minutes on two cores; CERTGAP_N and
// CERTGAP_TOL pick another order and iterate). Everything is dense.

package factorize_test

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestDualGap: the Lagrangian bound f* >= f(Y)^2 / T(Y) holds for every
// positive definite Y (Z = G(Y) = Y^{-1} S Y^{-1} as the multiplier of the
// band and unit-diagonal constraints; T(Y) = sum_i G(Y)_ii + sum over the
// in-band off-diagonal of |G(Y)_ij|). At Y = X it is the linear bound. Here
// Y = X + E with E supported off the band (and its diagonal), found by
// Gauss-Newton so that the in-band off-diagonal of G(Y) vanishes; then the
// bound needs no delta.
func TestDualGap(t *testing.T) {
	b := 16
	n, X, Xs, S, gap := certgapCase(t, b)
	inv := func(a mat.Matrix) (*mat.Dense, bool) {
		var r mat.Dense
		if err := r.Inverse(a); err != nil {
			return nil, false
		}
		return &r, true
	}
	isPD := func(a mat.Matrix) bool {
		s := mat.NewSymDense(n, nil)
		for i := 0; i < n; i++ {
			for j := i; j < n; j++ {
				s.SetSym(i, j, (a.At(i, j)+a.At(j, i))/2)
			}
		}
		var c mat.Cholesky
		return c.Factorize(s)
	}
	type point struct {
		f, T, maxR float64
		Xi, G      *mat.Dense
	}
	eval := func(y mat.Matrix) point {
		yi, ok := inv(y)
		if !ok || !isPD(y) {
			return point{f: math.NaN()}
		}
		var p, g mat.Dense
		p.Mul(yi, S)
		g.Mul(&p, yi)
		pt := point{f: mat.Trace(&p), Xi: yi, G: &g}
		for i := 0; i < n; i++ {
			pt.T += g.At(i, i)
			for j := max(0, i-b+1); j < min(n, i+b); j++ {
				if j != i {
					pt.T += math.Abs(g.At(i, j))
					pt.maxR = max(pt.maxR, math.Abs(g.At(i, j)))
				}
			}
		}
		return pt
	}
	fs := eval(Xs).f
	p0 := eval(X)
	truth := p0.f/fs - 1
	bound := func(p point) float64 { return p0.f/(p.f*p.f/p.T) - 1 }
	t.Logf("n %d b %d: certified %.3g, true gap %.3g, linear bound at X %.3g (%.3g x)", n, b, gap, truth, bound(p0), bound(p0)/truth)

	type ij struct{ i, j int }
	var omega []ij
	for i := 0; i < n; i++ {
		for j := i + 1; j < min(n, i+b); j++ {
			omega = append(omega, ij{i, j})
		}
	}
	for _, set := range []struct {
		name string
		in   func(i, j int) bool
	}{
		{"[b, 2b) and diagonal", func(i, j int) bool { d := j - i; return d == 0 || d >= b && d < 2*b }},
		{"[b, 2b)", func(i, j int) bool { d := j - i; return d >= b && d < 2*b }},
		{"off the band and diagonal", func(i, j int) bool { d := j - i; return d == 0 || d >= b }},
	} {
		var vs []ij
		for i := 0; i < n; i++ {
			for j := i; j < n; j++ {
				if set.in(i, j) {
					vs = append(vs, ij{i, j})
				}
			}
		}
		Y := mat.DenseCopyOf(X)
		p := p0
		for it := 0; it < 8; it++ {
			// r: the in-band off-diagonal of G(Y), to drive to 0.
			r := make([]float64, len(omega))
			for k, e := range omega {
				r[k] = p.G.At(e.i, e.j)
			}
			// J e = upper Omega of M(E) = -(Yi E G + G E Yi); adjoint as derived.
			sym := func(vals []float64, idx []ij) *mat.Dense {
				m := mat.NewDense(n, n, nil)
				for k, e := range idx {
					m.Set(e.i, e.j, vals[k])
					m.Set(e.j, e.i, vals[k])
				}
				return m
			}
			sandwich := func(E *mat.Dense) *mat.Dense { // A E B + B E A with A = Yi, B = G
				var a, c, d mat.Dense
				a.Mul(p.Xi, E)
				c.Mul(&a, p.G)
				a.Mul(p.G, E)
				d.Mul(&a, p.Xi)
				c.Add(&c, &d)
				return &c
			}
			J := func(e []float64) []float64 {
				m := sandwich(sym(e, vs))
				out := make([]float64, len(omega))
				for k, o := range omega {
					out[k] = -m.At(o.i, o.j)
				}
				return out
			}
			JT := func(y []float64) []float64 {
				nm := sandwich(sym(y, omega))
				out := make([]float64, len(vs))
				for k, v := range vs {
					if v.i == v.j {
						out[k] = -nm.At(v.i, v.i) / 2
					} else {
						out[k] = -nm.At(v.i, v.j)
					}
				}
				return out
			}
			neg := make([]float64, len(r))
			for k := range r {
				neg[k] = -r[k]
			}
			y := conjugateGradients(func(v, out []float64) { copy(out, J(JT(v))) }, neg, 300)
			e := JT(y)
			{
				je := J(e)
				num, den := 0.0, 0.0
				for k := range je {
					num += (je[k] - neg[k]) * (je[k] - neg[k])
					den += neg[k] * neg[k]
				}
				// Finite-difference check of J along e.
				h := 1e-6 / (1e-300 + maxAbs(e))
				Yh := mat.DenseCopyOf(Y)
				Yh.Add(Yh, sym(scaled(e, h), vs))
				ph := eval(Yh)
				fdErr, fdDen := 0.0, 0.0
				for k, o := range omega {
					d := (ph.G.At(o.i, o.j) - p.G.At(o.i, o.j)) / h
					fdErr += (d - je[k]) * (d - je[k])
					fdDen += je[k] * je[k]
				}
				t.Logf("    CG relative residual %.3g; J vs finite differences %.3g; max|e| %.3g; max|R| %.3g", math.Sqrt(num/den), math.Sqrt(fdErr/fdDen), maxAbs(e), p.maxR)
			}
			// Backtrack on max |R'| so that Y stays positive definite.
			step := 1.0
			var np point
			var Yn *mat.Dense
			for ; step > 1e-4; step /= 2 {
				Yn = mat.DenseCopyOf(Y)
				Yn.Add(Yn, sym(scaled(e, step), vs))
				np = eval(Yn)
				if !math.IsNaN(np.f) && np.maxR < p.maxR {
					break
				}
			}
			if math.IsNaN(np.f) || np.maxR >= p.maxR {
				t.Logf("  %s: stalled at iteration %d", set.name, it)
				break
			}
			Y, p = Yn, np
			t.Logf("  %-26s it %d step %.3g: max|R'| %.3g, f(Y) %.10g, bound %.3g (%.3g x true)", set.name, it, step, p.maxR, p.f, bound(p), bound(p)/truth)
		}
	}
}

func scaled(v []float64, s float64) []float64 {
	out := make([]float64, len(v))
	for i := range v {
		out[i] = s * v[i]
	}
	return out
}

func maxAbs(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		m = max(m, math.Abs(x))
	}
	return m
}
