package accountant

import (
	"cmp"
	"math"
)

// This file holds Renyi DP (Mironov 2017) of the Gaussian mechanism and its
// conversions to (eps, delta)-DP over a fixed grid of orders.

// Conversion selects a bound from Renyi DP to (eps, delta)-DP. For an
// (alpha, r)-RDP mechanism and L = log(1/delta):
//
//	Balle2020:   eps = r + log(1 - 1/alpha) - (log delta + log alpha)/(alpha - 1)
//	Mironov2017: eps = r + L/(alpha - 1)
//
// Balle2020 is never larger.
type Conversion int

// The conversions.
const (
	// Balle2020 is Balle, Barthe, Gaboardi, Hsu & Sato 2020, "Hypothesis
	// testing interpretations and Renyi differential privacy".
	Balle2020 Conversion = iota
	// Mironov2017 is Mironov 2017, "Renyi differential privacy", Proposition 3.
	Mironov2017
)

var conversionNames = [...]string{Balle2020: "balle2020", Mironov2017: "mironov2017"}

// String returns "balle2020" or "mironov2017".
func (c Conversion) String() string {
	if c >= 0 && int(c) < len(conversionNames) {
		return conversionNames[c]
	}
	return "Conversion(" + itoa(int(c)) + ")"
}

// The order grid is alpha_j = 1 + 10^(j/16) for j = rdpGridLo..rdpGridHi.
const (
	rdpGridLo = -48
	rdpGridHi = 144
)

// rdpGridX holds alpha_j - 1 = 10^(j/16), exact to an ulp, so that the
// conversions never form alpha - 1 by subtraction.
var rdpGridX = func() []float64 {
	x := make([]float64, 0, rdpGridHi-rdpGridLo+1)
	for j := rdpGridLo; j <= rdpGridHi; j++ {
		x = append(x, math.Pow(10, float64(j)/16))
	}
	return x
}()

// RDPOrders returns a copy of the Renyi orders used by the methods [RDP] and
// [RDPMironov]: the 193 orders
//
//	alpha_j = 1 + 10^(j/16),  j = -48, -47, ..., 144,
//
// from 1.001 to 1 + 10^9, evenly spaced in log(alpha - 1) with ratio
// 10^(1/16) ~ 1.155 between neighbours. The optimal order for the Gaussian
// is near 1 + sqrt(log(1/delta)/rho), so the grid is within one step of the
// optimum from rho ~ 1e-17 (sigma ~ 2e8 at delta = 1e-5) to rho ~ 1e7, and
// an eps from it is within a fraction of a percent of the continuous
// optimum ([CKS]) in that range. Outside it the bound stays valid, only
// looser; Sigma reports an error when no order can reach the target.
func RDPOrders() []float64 {
	a := make([]float64, len(rdpGridX))
	for j, x := range rdpGridX {
		a[j] = 1 + x
	}
	return a
}

// GaussianRDP returns the Renyi divergence of order alpha of the Gaussian
// mechanism with L2 sensitivity and noise standard deviation std:
// alpha sensitivity^2/(2 std^2) (Mironov 2017), rounded up.
//
// Special cases are:
//
//	GaussianRDP(alpha, s, v) = +Inf when the value overflows
//	GaussianRDP(alpha, s, v) is an error for alpha <= 1, alpha = +Inf or NaN
//	GaussianRDP(alpha, s, v) is an error if s or v is <= 0, +Inf or NaN
func GaussianRDP(alpha, sensitivity, std float64) (float64, error) {
	if err := checkOrder(alpha); err != nil {
		return 0, err
	}
	rho, err := GaussianRho(sensitivity, std)
	if err != nil {
		return 0, err
	}
	return up(alpha * rho), nil
}

// RDPEpsilon converts an RDP curve, given at the orders alpha[j] by
// rdp[j], to (eps, delta)-DP with the conversion c: it returns the least
// eps over the orders (rounded up, and 0 if negative, which means
// (0, delta)-DP) and the order that attains it.
//
// Special cases are:
//
//	RDPEpsilon(alpha, rdp, delta, c) = (+Inf, alpha[j]) if every eps overflows
//	RDPEpsilon is an error if len(alpha) != len(rdp) or len(alpha) == 0
//	RDPEpsilon is an error if any alpha[j] <= 1, alpha[j] = +Inf or NaN
//	RDPEpsilon is an error if any rdp[j] < 0, rdp[j] = +Inf or NaN
//	RDPEpsilon is an error unless 0 < delta < 1, or for an unknown c
func RDPEpsilon(alpha, rdp []float64, delta float64, c Conversion) (eps, order float64, err error) {
	if len(alpha) != len(rdp) || len(alpha) == 0 {
		return 0, 0, &ParamError{Param: "len(rdp)", Value: float64(len(rdp)), Want: "len(alpha) = " + itoa(len(alpha)) + " and >= 1"}
	}
	if err := checkDelta(delta); err != nil {
		return 0, 0, err
	}
	if c != Balle2020 && c != Mironov2017 {
		return 0, 0, &ParamError{Param: "conversion", Value: float64(c), Want: "Balle2020 or Mironov2017"}
	}
	L := -logf(delta)
	eps = math.Inf(1)
	for j, a := range alpha {
		if err := cmp.Or(checkOrder(a), checkNonNegative("rdp["+itoa(j)+"]", rdp[j])); err != nil {
			return 0, 0, err
		}
		if e := rdp[j] + conversion(c, a-1, L); e < eps || j == 0 {
			eps, order = e, a
		}
	}
	return up(math.Max(0, eps)), order, nil
}

func checkOrder(alpha float64) error {
	if !(alpha > 1) || math.IsInf(alpha, 1) {
		return &ParamError{Param: "alpha", Value: alpha, Want: "finite and > 1"}
	}
	return nil
}

// conversion returns the rho-free part of conversion c at order 1 + x.
func conversion(c Conversion, x, L float64) float64 {
	if c == Mironov2017 {
		return L / x
	}
	return rdpConversion(x, L)
}

// rdpGridEpsilon returns max(0, min_j (1 + x_j) rho + conversion(x_j)) over
// the grid: the eps of rho-zCDP (RDP alpha rho at every order) by c.
func rdpGridEpsilon(rho, L float64, c Conversion) float64 {
	if math.IsInf(rho, 1) {
		return rho
	}
	eps := math.Inf(1)
	for _, x := range rdpGridX {
		eps = math.Min(eps, (1+x)*rho+conversion(c, x, L))
	}
	return math.Max(0, eps)
}

// rdpGridRho returns the largest rho whose grid eps is at most eps: an
// order alpha reaches eps iff alpha rho + conversion <= eps, so the answer is
// max_j (eps - conversion(x_j))/(1 + x_j), exactly; 0 if no order reaches it.
func rdpGridRho(eps, L float64, c Conversion) float64 {
	rho := 0.0
	for _, x := range rdpGridX {
		rho = math.Max(rho, (eps-conversion(c, x, L))/(1+x))
	}
	return rho
}
