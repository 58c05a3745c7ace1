package linalg

import (
	"fmt"
	"math"
)

// InvSqrtRational is a rational approximation of x^{-1/2} on an interval
// [m, m Cond]:
//
//	x^{-1/2} ~ r(x) = sum_j Weights[j] / (x + Shifts[j]),
//
// with every weight and shift positive, so r(T) = sum_j w_j (T + s_j I)^{-1}
// approximates T^{-1/2} for a symmetric positive definite T with spectrum in
// the interval through shifted solves only.
//
// The nodes come from the elliptic-function quadrature of Hale, Higham and
// Trefethen ("Computing A^alpha, log(A), and related matrix functions by
// contour integrals", SIAM J. Numer. Anal. 46(5), 2008, method 3) applied to
// x^{-1/2} = (2/pi) int_0^inf dt / (t^2 + x): the substitution
// t = sqrt(m) sc(u | k), with complementary modulus k' = Cond^{-1/2}, turns the
// integral into one of a periodic analytic function over [0, K], whose
// midpoint rule converges like exp(-pi^2 N / K) with
// K ~ log(4) + log(Cond) / 2: about 30 nodes for Cond = 1e6 and 45 for
// Cond = 1e10 at full double precision.
//
// RelErr is a bound on |r(x) sqrt(x) - 1| over the interval, measured on a
// grid of 64 points per node in log x and inflated by a factor 1.5 to cover
// the points between grid points (the error oscillates smoothly, about once
// per node). For x in the interval, r(T) then has every diagonal entry
// within a relative RelErr of that of T^{-1/2}: the error matrix is
// V diag(e_k lambda_k^{-1/2}) V^T with |e_k| <= RelErr, and its diagonal is
// bounded entrywise by RelErr times the diagonal of T^{-1/2}.
type InvSqrtRational struct {
	// Shifts and Weights define r; both are positive.
	Shifts, Weights []float64
	// Lo and Cond give the interval [Lo, Lo Cond].
	Lo, Cond float64
	// RelErr bounds the relative error of r on the interval.
	RelErr float64
}

// NewInvSqrtRational returns the approximation of x^{-1/2} on [lo, hi] with
// the fewest nodes, at most maxInvSqrtNodes (200), whose measured relative
// error is at most tol; where 200 nodes do not reach tol, the 200-node
// approximation, whose RelErr is then above tol. It panics unless
// [InvSqrtInterval] accepts [lo, hi] and 0 < tol < 1.
func NewInvSqrtRational(lo, hi, tol float64) InvSqrtRational {
	if !(InvSqrtInterval(lo, hi) && tol > 0 && tol < 1) {
		panic(fmt.Sprintf("linalg: bad inverse square root interval [%g, %g] or tolerance %g", lo, hi, tol))
	}
	cond := math.Max(hi/lo, 1+1e-9)
	kc := 1 / math.Sqrt(cond)
	bigK := ellipK(kc)
	// The estimate of the count is taken in floating point and clamped
	// before it becomes an int: for a tol far below the achievable one it
	// runs to thousands of nodes (each costing O(n) evaluations at 64 n
	// points), or to +Inf.
	est := math.Ceil(bigK * math.Log(2/tol) / (math.Pi * math.Pi))
	n := int(math.Min(math.Max(est, 2), maxInvSqrtNodes))
	for {
		q := invSqrtNodes(n, cond, kc, bigK)
		if q.RelErr <= tol || n >= maxInvSqrtNodes {
			return q.scaled(lo)
		}
		n = min(n+max(1, n/10), maxInvSqrtNodes)
	}
}

// maxInvSqrtNodes is the most nodes NewInvSqrtRational takes.
const maxInvSqrtNodes = 200

// invSqrtRange is the float64 range of the intervals the approximations
// accept: [lo, hi] within [1/invSqrtRange, invSqrtRange] and
// hi / lo <= invSqrtRange.
const invSqrtRange = 0x1p960

// InvSqrtInterval reports whether [lo, hi] is an interval that
// NewInvSqrtRational and NewInvSqrtRationalN accept:
// 2^-960 <= lo <= hi <= 2^960 and hi / lo <= 2^960 (NaN is refused).
// On [1, Cond] the nodes' shifts run from about 1 / n^2 to Cond n^2 for n
// nodes, so within this range the shifts, the weights and x + Shifts[j]
// for x in the interval are normal float64 numbers for any n up to 10^6,
// and r(x) is evaluated without underflow or overflow. Outside it they
// were not: an interval whose hi / lo overflows gave NaN nodes, shifts
// scaled to near the float64 maximum overflowed (r(hi) = 0), and a
// subnormal lo lost the accuracy that RelErr claimed.
func InvSqrtInterval(lo, hi float64) bool {
	return lo >= 1/invSqrtRange && hi >= lo && hi <= invSqrtRange && hi/lo <= invSqrtRange
}

// invSqrtNodes returns the n-node approximation for the interval
// [1, cond], kc = 1/sqrt(cond) and bigK = K(kc), with its measured RelErr
// (1.5 times the largest error at 64 n points).
func invSqrtNodes(n int, cond, kc, bigK float64) InvSqrtRational {
	q := InvSqrtRational{Shifts: make([]float64, n), Weights: make([]float64, n), Lo: 1, Cond: cond}
	h := bigK / float64(n)
	for j := 0; j < n; j++ {
		u := (float64(j) + 0.5) * h
		// With y = sc(u | k): the shift is y^2 and dt/du = dc(u) nc(u) =
		// sqrt((1 + y^2)(1 + k'^2 y^2)).
		y := invSC(u, kc)
		q.Shifts[j] = y * y
		q.Weights[j] = 2 * h / math.Pi * math.Sqrt((1+y*y)*(1+kc*kc*y*y))
	}
	q.RelErr = 1.5 * q.maxRelErr(64*n)
	return q
}

// maxRelErr returns max |r(x) sqrt(x) - 1| over points equally spaced in
// log x on [Lo, Lo Cond].
func (q InvSqrtRational) maxRelErr(points int) float64 {
	worst := 0.0
	logCond := math.Log(q.Cond)
	for i := 0; i <= points; i++ {
		x := q.Lo * math.Exp(logCond*float64(i)/float64(points))
		worst = math.Max(worst, math.Abs(q.Eval(x)*math.Sqrt(x)-1))
	}
	return worst
}

// scaled maps an approximation on [1, Cond], whose slices it overwrites,
// to [lo, lo Cond]: x^{-1/2} = lo^{-1/2} (x/lo)^{-1/2}, so shifts scale by
// lo and weights by sqrt(lo).
func (q InvSqrtRational) scaled(lo float64) InvSqrtRational {
	sq := math.Sqrt(lo)
	for j := range q.Shifts {
		q.Shifts[j] *= lo
		q.Weights[j] *= sq
	}
	q.Lo *= lo
	return q
}

// Covers reports whether the interval [lo, hi] lies inside the
// approximation's interval.
func (q InvSqrtRational) Covers(lo, hi float64) bool {
	return lo >= q.Lo && hi <= q.Lo*q.Cond
}

// Eval returns r(x).
func (q InvSqrtRational) Eval(x float64) float64 {
	s := 0.0
	for j, w := range q.Weights {
		s += w / (x + q.Shifts[j])
	}
	return s
}

// NewInvSqrtRationalN returns the n-node approximation of x^{-1/2} on
// [lo, hi] (the nodes of [NewInvSqrtRational] for a fixed count), with its
// measured RelErr. It panics unless [InvSqrtInterval] accepts [lo, hi] and
// n >= 1.
func NewInvSqrtRationalN(lo, hi float64, n int) InvSqrtRational {
	if !(InvSqrtInterval(lo, hi) && n >= 1) {
		panic(fmt.Sprintf("linalg: bad inverse square root interval [%g, %g] or node count %d", lo, hi, n))
	}
	cond := math.Max(hi/lo, 1+1e-9)
	kc := 1 / math.Sqrt(cond)
	return invSqrtNodes(n, cond, kc, ellipK(kc)).scaled(lo)
}
