//go:build certgap

// An experiment, not a test of the default suite: a dual certificate for
// the banded problem that needs no bound on lambda_max(X* - X).
//
//	go test -tags certgap -run DualNuc -v ./factorize/
//
// Z = G - R + Y (Y supported on the diagonal and off the band) is PSD when
// E = M (R - Y) M^T <= I (M = L^T X, L = A^{-1}), since
// Z = X^{-1} A^T (I - E) A X^{-1}. Weak duality gives f* >= tau^2 / tr Z
// with tau = tr((A Z A^T)^{1/2}) = ||(I - E)^{1/2} N||_* >= tr((I - E)^{1/2} N),
// N = A X^{-1} A^T, and (I - E)^{1/2} >= I - E/2 - c E^2 for
// c = 1 / (2 (1 + sqrt(1 - e))^2), e >= lambda_max(E). With tr N = f,
// tr(N E) = <R - Y, X> and tr(N E^2) = tr(W X W^T), W = M (R - Y).

package factorize_test

import (
	"context"

	"github.com/dpmf/dpmf/factorize"
	"math"
	"os"
	"strconv"
	"testing"

	"gonum.org/v1/gonum/mat"
)

func TestDualNuc(t *testing.T) {
	b := 16
	tols := []float64{1e-3, 1e-4, 1e-5, 1e-6}
	n := 300
	if v, err := strconv.Atoi(os.Getenv("CERTGAP_N")); err == nil && v > 0 {
		n = v
	}
	ref := solveRef(t, n, b)
	for _, tol := range tols {
		cur, _ := certgapSolveCur(t, n, b, tol)
		dualNuc(t, n, b, cur.C, ref.C, cur.Gap)
	}
}

func dualNuc(t *testing.T, n, b int, Cc, Cs *mat.Dense, certified float64) {
	gram := func(c *mat.Dense) *mat.Dense {
		var x mat.Dense
		x.Mul(c.T(), c)
		return &x
	}
	X, Xs := gram(Cc), gram(Cs)
	S := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			S.Set(i, j, float64(n-max(i, j)))
		}
	}
	inv := func(a *mat.Dense) *mat.Dense {
		var r mat.Dense
		if err := r.Inverse(a); err != nil {
			t.Fatal(err)
		}
		return &r
	}
	loss := func(x *mat.Dense) float64 {
		var p mat.Dense
		p.Mul(inv(x), S)
		return mat.Trace(&p)
	}
	f, fs := loss(X), loss(Xs)
	truth := f/fs - 1
	Xi := inv(X)
	var G, tmp mat.Dense
	tmp.Mul(Xi, S)
	G.Mul(&tmp, Xi)
	inBand := func(i, j int) bool { d := i - j; return d != 0 && d > -b && d < b }
	R := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if inBand(i, j) {
				R.Set(i, j, G.At(i, j))
			}
		}
	}
	trG := mat.Trace(&G)
	// L = A^{-1}: 1 on the diagonal, -1 below it.
	L := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		L.Set(i, i, 1)
		if i > 0 {
			L.Set(i, i-1, -1)
		}
	}
	var M mat.Dense
	M.Mul(L.T(), X)
	// Gi = M^T M = G^{-1}.
	var Gi mat.Dense
	Gi.Mul(M.T(), &M)
	tw := func(V *mat.Dense) float64 {
		var W, WX, P mat.Dense
		W.Mul(&M, V)
		WX.Mul(&W, X)
		P.MulElem(&WX, &W)
		return mat.Sum(&P)
	}
	lmaxE := func(V *mat.Dense) (exact, gersh float64) {
		var MV, E mat.Dense
		MV.Mul(&M, V)
		E.Mul(&MV, M.T())
		sym := mat.NewSymDense(n, nil)
		gersh = math.Inf(-1)
		for i := 0; i < n; i++ {
			s := E.At(i, i)
			for j := 0; j < n; j++ {
				sym.SetSym(i, j, (E.At(i, j)+E.At(j, i))/2)
				if j != i {
					s += math.Abs(E.At(i, j))
				}
			}
			gersh = max(gersh, s)
		}
		var es mat.EigenSym
		if !es.Factorize(sym, false) {
			t.Fatal("eigen")
		}
		v := es.Values(nil)
		return v[n-1], gersh
	}
	bound := func(V *mat.Dense, e float64) float64 {
		if e >= 1 {
			return math.Inf(1)
		}
		// tr Y for the diagonal part of R - V.
		trY := 0.0
		for i := 0; i < n; i++ {
			trY -= V.At(i, i)
		}
		e = max(e, 0)
		c := 1 / (2 * (1 + math.Sqrt(1-e)) * (1 + math.Sqrt(1-e)))
		tau := (f+trG+trY)/2 - c*tw(V)
		if tau <= 0 {
			return math.Inf(1)
		}
		flo := tau * tau / (trG + trY)
		if flo > fs*(1+1e-12) {
			t.Errorf("bound %v above the optimum %v", flo, fs)
		}
		return f/flo - 1
	}
	// The solver's current quadratic bound with delta = 2b - 1.
	var W mat.Dense
	W.Mul(&M, R)
	wf := mat.Norm(&W, 2)
	q := (tw(R) + float64(2*b-1)*wf*wf) / 4
	old := q / (f - q)
	ex, ge := lmaxE(R)
	var Msvd mat.SVD
	Msvd.Factorize(&M, mat.SVDNone)
	m2 := Msvd.Values(nil)[0]
	m1, mi := mat.Norm(&M, 1), mat.Norm(&M, math.Inf(1))
	t.Logf("   ||W||_F ||M||_2 = %.3g, ||W||_F sqrt(||M||_1 ||M||_inf) = %.3g", wf*m2, wf*math.Sqrt(m1*mi))
	t.Logf("n %d certified %.3g true %.3g | old/true %.3g | lambda_max(E) %.3g gersh %.3g | new(exact e)/true %.3g new(gersh)/true %.3g | tw/4f/true %.3g",
		n, certified, truth, old/truth, ex, ge, bound(R, ex)/truth, bound(R, ge)/truth, tw(R)/(4*f)/truth)
	// Y diagonal: (G^{-1} o X) d = -diag(G^{-1} R X), V = R + diag(d).
	{
		var a, c mat.Dense
		a.Mul(&Gi, R)
		c.Mul(&a, X)
		H := mat.NewDense(n, n, nil)
		rhs := mat.NewVecDense(n, nil)
		for i := 0; i < n; i++ {
			rhs.SetVec(i, -c.At(i, i))
			for j := 0; j < n; j++ {
				H.Set(i, j, Gi.At(i, j)*X.At(i, j))
			}
		}
		var d mat.VecDense
		if err := d.SolveVec(H, rhs); err != nil {
			t.Fatal(err)
		}
		V := mat.DenseCopyOf(R)
		for i := 0; i < n; i++ {
			V.Set(i, i, d.AtVec(i))
		}
		ex, ge := lmaxE(V)
		t.Logf("   Y diagonal : lambda_max(E) %.3g gersh %.3g | new(exact e)/true %.3g new(gersh)/true %.3g | tw/tw0 %.3g", ex, ge, bound(V, ex)/truth, bound(V, ge)/truth, tw(V)/tw(R))
	}
	if os.Getenv("CERTGAP_NOCG") != "" {
		return
	}
	// Y off the band (no diagonal), minimising tr(W X W^T) by CG.
	for name, off := range map[string]func(i, j int) bool{
		"diag+2b":   func(i, j int) bool { d := max(i-j, j-i); return d == 0 || (d >= b && d < 2*b) },
		"within 2b": func(i, j int) bool { d := max(i-j, j-i); return d >= b && d < 2*b },
		"anywhere":  func(i, j int) bool { d := max(i-j, j-i); return d >= b },
	} {
		var idx [][2]int
		for i := 0; i < n; i++ {
			for j := i; j < n; j++ {
				if off(i, j) {
					idx = append(idx, [2]int{i, j})
				}
			}
		}
		apply := func(v *mat.Dense) *mat.Dense {
			var a, c mat.Dense
			a.Mul(&Gi, v)
			c.Mul(&a, X)
			return &c
		}
		z := mat.NewDense(n, n, nil)
		gather := func(m *mat.Dense, out []float64) {
			for k, ij := range idx {
				out[k] = m.At(ij[0], ij[1]) + m.At(ij[1], ij[0])
				if ij[0] == ij[1] {
					out[k] /= 2
				}
			}
		}
		rhs := make([]float64, len(idx))
		gather(apply(R), rhs)
		for k := range rhs {
			rhs[k] = -rhs[k]
		}
		sol := conjugateGradients(func(v, out []float64) {
			z.Zero()
			for k, ij := range idx {
				z.Set(ij[0], ij[1], v[k])
				z.Set(ij[1], ij[0], v[k])
			}
			gather(apply(z), out)
		}, rhs, 200)
		V := mat.DenseCopyOf(R)
		for k, ij := range idx {
			V.Set(ij[0], ij[1], V.At(ij[0], ij[1])+sol[k])
			if ij[0] != ij[1] {
				V.Set(ij[1], ij[0], V.At(ij[1], ij[0])+sol[k])
			}
		}
		ex, ge := lmaxE(V)
		t.Logf("   Y %-9s: lambda_max(E) %.3g gersh %.3g | new(exact e)/true %.3g new(gersh)/true %.3g", name, ex, ge, bound(V, ex)/truth, bound(V, ge)/truth)
	}
}

func solveRef(t *testing.T, n, b int) *factorize.Factorization {
	w, err := factorize.Prefix(n)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := factorize.OptimalBanded(context.Background(), w, b, 0, factorize.Options{Tol: 1e-11})
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

func certgapSolveCur(t *testing.T, n, b int, tol float64) (*factorize.Factorization, error) {
	w, err := factorize.Prefix(n)
	if err != nil {
		t.Fatal(err)
	}
	cur, err := factorize.OptimalBanded(context.Background(), w, b, 0, factorize.Options{Tol: tol})
	if err != nil {
		t.Fatal(err)
	}
	return cur, nil
}
