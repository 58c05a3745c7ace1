package linalg

import "math"

// carlsonRF returns Carlson's symmetric elliptic integral of the first kind
//
//	R_F(x, y, z) = (1/2) int_0^inf dt / sqrt((t+x)(t+y)(t+z))
//
// for x, y, z >= 0 with at most one of them zero, by the duplication theorem
// and a fifth-order Taylor expansion (B. C. Carlson, "Numerical computation of
// real or complex elliptic integrals", Numer. Algorithms 10, 1995, eq. 2.36
// and Algorithm 1). Every operation is on nonnegative numbers, so the result
// has a small relative error.
func carlsonRF(x, y, z float64) float64 {
	a0 := (x + y + z) / 3
	// Stop when 4^-n Q < |A_n|, Q = (3 r)^{-1/6} max|A0 - x_i| with r = 1e-16:
	// the truncation error is then below r.
	q := math.Pow(3e-16, -1.0/6) * math.Max(math.Abs(a0-x), math.Max(math.Abs(a0-y), math.Abs(a0-z)))
	a := a0
	for i := 0; i < 100 && q >= math.Abs(a); i++ {
		sx, sy, sz := math.Sqrt(x), math.Sqrt(y), math.Sqrt(z)
		lam := sx*sy + sx*sz + sy*sz
		x, y, z = (x+lam)/4, (y+lam)/4, (z+lam)/4
		a = (a + lam) / 4
		q /= 4
	}
	dx, dy := (a-x)/a, (a-y)/a
	dz := -(dx + dy)
	e2 := dx*dy - dz*dz
	e3 := dx * dy * dz
	return (1 - e2/10 + e3/14 + e2*e2/24 - 3*e2*e3/44) / math.Sqrt(a)
}

// ellipK returns the complete elliptic integral of the first kind K(k) for
// the complementary modulus kc = sqrt(1 - k^2), by the arithmetic-geometric
// mean: K = pi / (2 AGM(1, kc)) (Abramowitz and Stegun 17.6). Passing the
// complementary modulus keeps K accurate when k is close to 1.
func ellipK(kc float64) float64 {
	a, b := 1.0, kc
	for i := 0; i < 64 && math.Abs(a-b) > 1e-16*a; i++ {
		a, b = (a+b)/2, math.Sqrt(a*b)
	}
	return math.Pi / (2 * a)
}

// scArg returns the u for which sc(u | k) = y, with kc = sqrt(1 - k^2):
//
//	u(y) = int_0^y dx / sqrt((1 + x^2)(1 + kc^2 x^2)) = y R_F(1, 1 + kc^2 y^2, 1 + y^2).
func scArg(y, kc float64) float64 {
	return y * carlsonRF(1, 1+kc*kc*y*y, 1+y*y)
}

// invSC returns y = sc(u | k) for 0 < u < K(k), with kc = sqrt(1 - k^2). It
// inverts [scArg] by bisection in log y safeguarding Newton steps, so y keeps
// full relative accuracy for every u, including u near K where y ~ 1/kc is
// large and near 0 where y ~ u is small. (Computing sn and cn first and
// dividing loses relative accuracy in cn near u = K when k is close to 1.)
func invSC(u, kc float64) float64 {
	// Bracket in s = log y: u(y) <= y, so y >= u; and u(y) >= asinh-like
	// growth guarantees a root below a generous upper end.
	lo, hi := math.Log(u), math.Log(u)
	for scArg(math.Exp(hi), kc) < u {
		hi += 2
	}
	s := (lo + hi) / 2
	for i := 0; i < 200; i++ {
		y := math.Exp(s)
		f := scArg(y, kc) - u
		if f > 0 {
			hi = s
		} else {
			lo = s
		}
		// Newton in s: du/ds = y / sqrt((1+y^2)(1+kc^2 y^2)).
		d := y / math.Sqrt((1+y*y)*(1+kc*kc*y*y))
		next := s - f/d
		if !(next > lo && next < hi) {
			next = (lo + hi) / 2
		}
		if math.Abs(next-s) <= 1e-16*math.Max(1, math.Abs(s)) || hi-lo <= 1e-15*math.Max(1, math.Abs(s)) {
			return math.Exp(next)
		}
		s = next
	}
	return math.Exp(s)
}
