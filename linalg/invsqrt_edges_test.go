package linalg

import (
	"math"
	"strings"
	"testing"
	"time"
)

// invSqrtError returns max |r(x) sqrt(x) - 1| over the ends, the geometric
// midpoint and 64 points equally spaced in log x on [lo, hi], computed
// here from math.Sqrt, independently of the approximation's own grid.
func invSqrtError(q InvSqrtRational, lo, hi float64) float64 {
	worst := 0.0
	xs := []float64{lo, hi, math.Sqrt(lo) * math.Sqrt(hi)}
	for i := 1; i < 64; i++ {
		xs = append(xs, math.Exp(math.Log(lo)+(math.Log(hi)-math.Log(lo))*float64(i)/64))
	}
	for _, x := range xs {
		e := math.Abs(q.Eval(x)*math.Sqrt(x) - 1)
		if !(e <= worst) {
			worst = e // NaN sticks
		}
	}
	return worst
}

// Every interval that NewInvSqrtRational accepts (InvSqrtInterval), at
// the ends of the accepted range and with tolerances down to 1e-300,
// gets at most 200 nodes (as documented) within a second, and a RelErr
// that is finite and no smaller than the error measured here against
// math.Sqrt. Every interval it refuses panics with a "linalg: " message
// (a programmer error, as for a negative end). Before, a tolerance far
// below the achievable one on a wide interval (1e-300 on [1e-300, 1])
// took tens of thousands of nodes and ran for hours, 1e-16 on [1, 1e10]
// gave 215 nodes, an interval whose hi / lo overflows ([1e-320, 1],
// [1e-10, 1e300]) gave NaN nodes or a makeslice panic, one near the top
// of the float64 range ([1e300, MaxFloat64]) shifts that overflowed
// (r(hi) = 0 with a RelErr of 1e-14), and a subnormal lo ([1e-320,
// 1e-300]) an error of 5e-8 at lo with a RelErr of 1e-14.
func TestInvSqrtRationalEdges(t *testing.T) {
	type iv struct{ lo, hi float64 }
	good := []iv{{1, 1}, {0x1p-960, 0x1p-960}, {0x1p960, 0x1p960}, {0x1p-960, 1}, {1, 0x1p960},
		{1e-10, 1e10}, {1e-280, 1e-10}, {1, 1e288}, {0x1p-480, 0x1p480}}
	for _, c := range good {
		if !InvSqrtInterval(c.lo, c.hi) {
			t.Fatalf("[%g, %g] refused", c.lo, c.hi)
		}
		for _, tol := range []float64{1e-300, 1e-16, 1e-8, 0.5} {
			done := make(chan InvSqrtRational, 1)
			go func() { done <- NewInvSqrtRational(c.lo, c.hi, tol) }()
			var q InvSqrtRational
			select {
			case q = <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("[%g, %g] tol %g: no answer after 10 s", c.lo, c.hi, tol)
			}
			if len(q.Shifts) > 200 {
				t.Errorf("[%g, %g] tol %g: %d nodes, want at most 200", c.lo, c.hi, tol, len(q.Shifts))
			}
			got := invSqrtError(q, c.lo, c.hi)
			if !(q.RelErr < math.Inf(1)) || !(got <= q.RelErr) {
				t.Errorf("[%g, %g] tol %g: RelErr %g, measured %g", c.lo, c.hi, tol, q.RelErr, got)
			}
			if q.RelErr <= tol || len(q.Shifts) == 200 {
				continue
			}
			t.Errorf("[%g, %g] tol %g: RelErr %g above tol with %d nodes", c.lo, c.hi, tol, q.RelErr, len(q.Shifts))
		}
		for _, n := range []int{1, 16, 200} {
			q := NewInvSqrtRationalN(c.lo, c.hi, n)
			if got := invSqrtError(q, c.lo, c.hi); !(q.RelErr < math.Inf(1)) || !(got <= q.RelErr) {
				t.Errorf("[%g, %g] %d nodes: RelErr %g, measured %g", c.lo, c.hi, n, q.RelErr, got)
			}
		}
	}
	bad := []iv{{1e-320, 1e-300}, {1e-320, 1}, {1e-300, 1}, {1e-10, 1e300}, {1e300, math.MaxFloat64},
		{1, math.MaxFloat64}, {0x1p-961, 1}, {1, 0x1p961}, {0x1p-500, 0x1p461}, {0, 1}, {2, 1}, {1, math.Inf(1)}, {math.NaN(), 1}}
	for _, c := range bad {
		if InvSqrtInterval(c.lo, c.hi) {
			t.Errorf("[%g, %g] accepted", c.lo, c.hi)
		}
		for _, f := range []func(){
			func() { NewInvSqrtRational(c.lo, c.hi, 1e-8) },
			func() { NewInvSqrtRationalN(c.lo, c.hi, 16) },
		} {
			msg := func() (msg string) {
				defer func() {
					r := recover()
					msg, _ = r.(string)
					if r == nil {
						msg = "no panic"
					}
				}()
				f()
				return ""
			}()
			if !strings.HasPrefix(msg, "linalg: ") {
				t.Errorf("[%g, %g]: %q, want a panic with a \"linalg: \" message", c.lo, c.hi, msg)
			}
		}
	}
}
