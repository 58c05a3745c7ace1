//go:build newtoncg

// Scratch measurement for issue 20 item 3 (docs/solver.md, "A truncated Newton method"):
// a truncated Newton method for the second phase of the banded solver,
// compared with its L-BFGS phase from the same point and with the same
// certificate. Not part of the solver; run with
//
//	go test -tags newtoncg -run NewtonCG -v ./factorize/
//
// (DPMF_NEWTON_R=1000,2000 picks the orders; DPMF_NEWTON_ENERGY=1 stops
// CG on the model decrease left instead of the residual;
// DPMF_NEWTON_TARGET=1 floors the forcing term at 0.5 sqrt(tol / gap);
// DPMF_NEWTON_SWITCH=1e-3 is the gap at which the hybrid run leaves
// L-BFGS; DPMF_NEWTON_H the difference step).
package factorize

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dpmf/dpmf/linalg"
)

// newtonTarget sets the target-aware floor on the forcing term.
var newtonTargetFloor bool

// newtonEnergy replaces the residual test by an estimate of the CG
// iterate's remaining decrease of the quadratic model (the sum of the
// next newtonDelay terms alpha_j r_j.z_j / 2, a lower bound; Strakos and
// Tichy 2002): stop when it is at most 0.1 tol f, or at most
// min(0.1, sqrt(decrease / f)) times the decrease so far.
var newtonEnergy bool

const newtonDelay = 5

// newtonRemFrac is the fraction of tol f below which the model decrease
// left stops CG: the certified gap is up to about 30 times the true one.
var newtonRemFrac = 1e-3

// newtonStats counts the work of [bandedProblem.newtonCG].
type newtonStats struct {
	outer, cg, hv, evals int
	gaps                 []float64
	cgPer                []int
	etas, resid          []float64
}

// hvFD writes into out the product of f's Hessian in the off-diagonal band
// entries of X (at x, layout of x.Data) with d, by central differences of
// the gradient with step h (in the largest entry of d, hmax). It costs two
// evaluations and leaves bp.hx invalid. ok is false if either point is not
// positive definite.
func (bp *bandedProblem) hvFD(x []float64, d, out []float64, hmax float64, tmp linalg.SymBand, gp, gm, gbuf []float64) bool {
	dm := 0.0
	for _, v := range d {
		dm = math.Max(dm, math.Abs(v))
	}
	if dm == 0 {
		clear(out)
		return true
	}
	h := hmax / dm
	for i := range x {
		tmp.Data[i] = x[i] + h*d[i]
	}
	if _, ok := bp.eval(tmp, gp, gbuf); !ok {
		return false
	}
	for i := range x {
		tmp.Data[i] = x[i] - h*d[i]
	}
	if _, ok := bp.eval(tmp, gm, gbuf); !ok {
		return false
	}
	for i := range out {
		out[i] = (gp[i] - gm[i]) / (2 * h)
	}
	return true
}

// newtonCG is a truncated Newton method in the off-diagonal band entries
// of X from x until the certified gap is at most tol: each step solves
// H d = -grad by conjugate gradients preconditioned with the row-band
// preconditioner ([bandedProblem.precondition]) to the Eisenstat-Walker
// forcing term (choice 2, gamma 0.9, alpha 2, at most 0.5), then
// backtracks from the unit step (Armijo, indefinite trial points
// rejected, and the approximate Wolfe conditions once f changes by less
// than its rounding), as [bandedProblem.descend] does.
func (bp *bandedProblem) newtonCG(x linalg.SymBand, tol float64, rnd bandedRounding, hmax float64, st *bandedSolution) (*bandedPoint, newtonStats, bool) {
	var ns newtonStats
	m := bp.n * bp.b
	roundErr := rnd.f
	cur, trial := bp.newPoint(), bp.newPoint()
	copy(cur.v, x.Data)
	ph := &xPhase{bp: bp}
	if !ph.eval(cur) {
		return nil, ns, false
	}
	ns.evals++
	h := make([]float64, bp.precondLen())
	r, z, p, hp, d := make([]float64, m), make([]float64, m), make([]float64, m), make([]float64, m), make([]float64, m)
	tmp := linalg.NewSymBand(bp.n, bp.b-1)
	gp, gm, gbuf := make([]float64, m), make([]float64, m), make([]float64, m)
	etaPrev, gnPrev := 0.5, 0.0
	for ns.outer < 200 {
		// The preconditioner needs bp.hx at cur: before any Hv product.
		bp.precondition(cur.x, cur.g, h)
		gap := bp.gapOf(cur.x, cur.g, cur.f, rnd.g, tol-2*roundErr) + 2*roundErr
		if lb := cur.f / (1 + gap); lb > st.lower {
			st.lower = lb
		} else if st.lower > 0 {
			gap = math.Min(gap, cur.f*(1+2*roundErr)/st.lower-1)
		}
		st.gap = gap
		ns.gaps = append(ns.gaps, gap)
		if gap <= tol {
			return cur, ns, true
		}
		ns.outer++
		// PCG on H d = -grad.
		for i := range r {
			r[i] = -cur.grad[i]
		}
		copy(z, r)
		bp.applyPrecondition(h, z)
		rz := dot(r, z)
		gn := math.Sqrt(rz)
		eta := 0.5
		if gnPrev > 0 {
			eta = 0.9 * (gn / gnPrev) * (gn / gnPrev)
			if s := 0.9 * etaPrev * etaPrev; s > 0.1 {
				eta = math.Max(eta, s)
			}
			eta = math.Min(eta, 0.5)
		}
		eta = math.Max(eta, 1e-6)
		if newtonTargetFloor {
			// The certificate needs the gap only to tol: with the gap
			// about quadratic in the gradient, a relative residual of
			// sqrt(tol / gap) suffices.
			eta = math.Max(eta, math.Min(0.5, 0.5*math.Sqrt(tol/gap)))
		}
		etaPrev, gnPrev = eta, gn
		copy(p, z)
		clear(d)
		cgIt := 0
		var terms []float64
		dsum := 0.0
		for cgIt < 2000 {
			if !bp.hvFD(cur.v, p, hp, hmax, tmp, gp, gm, gbuf) {
				return nil, ns, false
			}
			ns.hv++
			cgIt++
			php := dot(p, hp)
			if !(php > 0) {
				if cgIt == 1 {
					copy(d, p)
				}
				break
			}
			a := rz / php
			for i := range d {
				d[i] += a * p[i]
				r[i] -= a * hp[i]
			}
			copy(z, r)
			bp.applyPrecondition(h, z)
			rzn := dot(r, z)
			if newtonEnergy {
				terms = append(terms, a*rz/2)
				dsum += a * rz / 2
				if k := len(terms); k >= newtonDelay {
					rem := 0.0
					for _, v := range terms[k-newtonDelay:] {
						rem += v
					}
					if rem <= newtonRemFrac*tol*cur.f || rem <= math.Min(0.1, math.Sqrt(dsum/cur.f))*dsum {
						break
					}
				}
			} else if math.Sqrt(rzn) <= eta*gn {
				break
			}
			beta := rzn / rz
			rz = rzn
			for i := range p {
				p[i] = z[i] + beta*p[i]
			}
		}
		ns.cg += cgIt
		ns.etas = append(ns.etas, eta)
		ns.resid = append(ns.resid, math.Sqrt(math.Abs(dot(r, z)))/gn)
		ns.cgPer = append(ns.cgPer, cgIt)
		slope := dot(cur.grad, d)
		if !(slope < 0) {
			return cur, ns, false
		}
		step, accepted := 1.0, false
		for ls := 0; ls < 50; ls++ {
			for i := range trial.v {
				trial.v[i] = cur.v[i] + step*d[i]
			}
			ok := ph.eval(trial)
			ns.evals++
			if ok && trial.f <= cur.f+1e-4*step*slope {
				accepted = true
				break
			}
			if ok && trial.f <= cur.f+8*roundErr*math.Abs(cur.f) {
				if s1 := dot(trial.grad, d); s1 >= 0.9*slope && s1 <= -0.8*slope {
					accepted = true
					break
				}
			}
			step /= 2
		}
		if !accepted {
			return cur, ns, false
		}
		cur, trial = trial, cur
	}
	return cur, ns, false
}

// At R = 24 (b = 5, prefix sums and a random p = 2 workload) the
// differenced product against 2 (H V G + G V H) on the band from dense
// H = X^{-1} and G = X^{-1} S X^{-1} (gonum), at a random feasible X.
func TestNewtonCGHvDense(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const n, b = 24, 5
	for _, inv := range []*mat.TriBandDense{randomInverseBand(rng, n, 2), randomInverseBand(rng, n, 1)} {
		bp := newBandedProblem(inv, b)
		xd, x := randomBandedX(rng, n, b)
		m := n * b
		v := make([]float64, m)
		for i := 0; i < n; i++ {
			for d := 1; d < b && d <= i; d++ {
				v[i*b+d] = rng.NormFloat64()
			}
		}
		out := make([]float64, m)
		require.True(t, bp.hvFD(x.Data, v, out, 1e-5, linalg.NewSymBand(n, b-1), make([]float64, m), make([]float64, m), make([]float64, m)))
		// Dense.
		vd := mat.NewSymDense(n, nil)
		for i := 0; i < n; i++ {
			for j := max(0, i-b+1); j < i; j++ {
				vd.SetSym(i, j, v[i*b+i-j])
			}
		}
		a := denseFromInverseBand(inv)
		var s mat.Dense
		s.Mul(a.T(), a)
		var hinv mat.Dense
		require.NoError(t, hinv.Inverse(xd))
		var g, t1, t2, hvg mat.Dense
		g.Mul(&hinv, &s)
		g.Mul(&g, &hinv)
		t1.Mul(&hinv, vd)
		t1.Mul(&t1, &g)
		t2.Mul(&g, vd)
		t2.Mul(&t2, &hinv)
		hvg.Add(&t1, &t2)
		worst := 0.0
		for i := 0; i < n; i++ {
			for d := 1; d < b && d <= i; d++ {
				want := 2 * hvg.At(i, i-d)
				worst = math.Max(worst, math.Abs(out[i*b+d]-want)/math.Max(1, math.Abs(want)))
			}
		}
		t.Logf("worst relative difference %.3g", worst)
		require.Less(t, worst, 1e-6)
	}
}

// TestNewtonCGCounts runs, for prefix sums with 64 bands, the first phase
// (L-BFGS in C to the gap 1e-1) and then from the same X both the L-BFGS
// phase in X and newtonCG to a certified 1e-8, and logs their work.
func TestNewtonCGCounts(t *testing.T) {
	rs := []int{1000, 2000, 4000}
	if e := os.Getenv("DPMF_NEWTON_R"); e != "" {
		rs = nil
		for _, f := range strings.Split(e, ",") {
			r, err := strconv.Atoi(f)
			require.NoError(t, err)
			rs = append(rs, r)
		}
	}
	hmax := 1e-5
	if e := os.Getenv("DPMF_NEWTON_H"); e != "" {
		var err error
		hmax, err = strconv.ParseFloat(e, 64)
		require.NoError(t, err)
	}
	newtonTargetFloor = os.Getenv("DPMF_NEWTON_TARGET") != ""
	newtonEnergy = os.Getenv("DPMF_NEWTON_ENERGY") != ""
	const b, tol = 64, 1e-8
	ctx := context.Background()
	for _, n := range rs {
		w := prefix(t, n)
		inv, ok := w.InverseBand()
		require.True(t, ok)
		bp := newBandedProblem(inv, b)
		x0, err := bp.start()
		require.NoError(t, err)
		opt := Options{Tol: tol, MaxIter: 100000}
		rnd := bp.aPriori()
		st := &bandedSolution{}
		c, ok := bandedCholesky(x0)
		require.True(t, ok)
		ph := &cPhase{bp: bp, nrm: make([]float64, n), gx: make([]float64, n), gradX: make([]float64, n*b), firstLen: 1e-2}
		cur := bp.newPoint()
		copy(cur.v, c)
		res, err := bp.descend(ctx, ph, cur, bp.newPoint(), bandedSwitchGap, rnd, opt, st)
		require.NoError(t, err)
		xs := linalg.SymBand{N: n, K: b - 1, Data: append([]float64(nil), res.x.Data...)}
		c1, e1 := st.iter, st.evals
		t.Logf("R=%d first phase: %d iterations, %d evaluations, gap %.3g", n, c1, e1, st.gap)

		sl := *st
		x1 := linalg.SymBand{N: n, K: b - 1, Data: append([]float64(nil), xs.Data...)}
		sol, err := bp.finish(ctx, x1, opt, &sl, rnd)
		require.NoError(t, err)
		t.Logf("R=%d L-BFGS X phase: %d iterations, %d evaluations (incl. 3 for the scatter), f %.10f gap %.3g",
			n, sl.iter-c1, sl.evals-e1, sol.f, sl.gap)

		sn := *st
		sc, ok := bp.scatter(xs)
		require.True(t, ok)
		rn := rnd
		rn.f = math.Max(rn.f, 4*sc.f)
		rn.g = 4 * sc.g
		pt, ns, ok := bp.newtonCG(xs, tol, rn, hmax, &sn)
		if pt != nil {
			// The two certified losses agree within the two gaps.
			require.LessOrEqual(t, math.Abs(pt.f-sol.f), math.Max(pt.f, sol.f)*(sn.gap+sl.gap))
			t.Logf("R=%d Newton-CG: %d outer, %d CG (%d Hv), %d evaluations + 3 scatter, f %.10f gap %.3g ok %v; CG per step %v; gaps %.2g; eta %.2g; residual %.2g",
				n, ns.outer, ns.cg, ns.hv, ns.evals, pt.f, sn.gap, ok, ns.cgPer, ns.gaps, ns.etas, ns.resid)
		} else {
			t.Logf("R=%d Newton-CG failed: %+v", n, ns)
		}
		// Hybrid: the L-BFGS phase in X to newtonSwitch, then Newton-CG.
		sw := 1e-3
		if e := os.Getenv("DPMF_NEWTON_SWITCH"); e != "" {
			sw, err = strconv.ParseFloat(e, 64)
			require.NoError(t, err)
		}
		sh := *st
		x2 := linalg.SymBand{N: n, K: b - 1, Data: append([]float64(nil), xs.Data...)}
		o2 := opt
		o2.Tol = sw
		sol2, err := bp.finish(ctx, x2, o2, &sh, rnd)
		require.NoError(t, err)
		i2, e2 := sh.iter-c1, sh.evals-e1
		xh := linalg.SymBand{N: n, K: b - 1, Data: append([]float64(nil), sol2.x.Data...)}
		sc2, ok := bp.scatter(xh)
		require.True(t, ok)
		rh := rnd
		rh.f = math.Max(rh.f, 4*sc2.f)
		rh.g = 4 * sc2.g
		pt2, ns2, ok := bp.newtonCG(xh, tol, rh, hmax, &sh)
		require.NotNil(t, pt2)
		t.Logf("R=%d hybrid: L-BFGS to %.0e %d iterations %d evaluations, then Newton-CG %d outer, %d Hv, %d evaluations + 3 scatter, gap %.3g ok %v; CG per step %v; gaps %.2g; eta %.2g",
			n, sw, i2, e2, ns2.outer, ns2.hv, ns2.evals, sh.gap, ok, ns2.cgPer, ns2.gaps, ns2.etas)
	}
}
