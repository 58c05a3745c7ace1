package accountant

import (
	"errors"
	"math"
	"math/big"
	"strings"
	"testing"
)

// validPositive reports whether x is finite and > 0.
func validPositive(x float64) bool { return x > 0 && !math.IsInf(x, 1) }

// FuzzConversions gives the accountant's closed-form entry points
// arbitrary numbers (GaussianRho, GaussianRDP, ReleaseSensitivity, Mu,
// ComposeGaussian, and the zCDP conversions both ways). Whatever the
// numbers, none may panic; each refuses exactly the inputs its special
// cases name, with a one-line *ParamError; and each result rounds toward
// less privacy: rho, the RDP value, the release sensitivity and mu are at
// least their exact value in rational arithmetic (and within a relative
// 1e-11 above it where normal; a release sensitivity whose exact value is
// outside the normal range is refused, as documented), the eps of a rho at
// least that rho, and a rho for a target eps gives back at most that eps
// to the slack of its rounding up (Bun-Steinke and CKS alike, CKS's rho
// at least Bun-Steinke's). The seeds run in every plain go test.
func FuzzConversions(f *testing.F) {
	for _, s := range []struct {
		a, b, c, d float64
		n          int64
		addRemove  bool
	}{
		{1, 1, 1e-5, 2, 10, false},
		{3.5, 0.25, 1e-10, 1.5, 1, true},
		{5e-300, 1e-5, 0.5, 1e-300, 3, false},
		{1e300, 5e-324, 1e-300, 1e300, 3, true},
		{0, -1, 0, 1, 0, false},
		{math.NaN(), math.Inf(1), 1, math.Inf(-1), -5, false},
		{1e-20, 1e-20, 0.999999, 1.0000001, 9007199254740993, true},
	} {
		f.Add(s.a, s.b, s.c, s.d, s.n, s.addRemove)
	}
	f.Fuzz(func(t *testing.T, a, b, c, d float64, n int64, addRemove bool) {
		oneLine := func(what string, err error) {
			var pe *ParamError
			if !errors.As(err, &pe) || strings.ContainsAny(err.Error(), "\n\r") {
				t.Fatalf("%s: %T %q, want a one-line *ParamError", what, err, err)
			}
		}
		// atLeast checks that got rounds exact up, by at most a relative
		// 1e-11 (the accountant's slack of 1e-12 and a few roundings up)
		// where exact is in the normal range.
		atLeast := func(what string, got float64, exact *big.Rat) {
			if math.IsInf(got, 1) {
				if exact.Cmp(exactRat(math.MaxFloat64)) <= 0 {
					t.Fatalf("%s = +Inf, exact %s fits a float64", what, exact.FloatString(20))
				}
				return
			}
			if exactRat(got).Cmp(exact) < 0 {
				t.Fatalf("%s = %v, below its exact value %s", what, got, ratText(exact))
			}
			hi := new(big.Rat).Mul(exact, big.NewRat(100000000001, 100000000000))
			if exact.Cmp(exactRat(0x1p-1022)) >= 0 && exactRat(got).Cmp(hi) > 0 {
				t.Fatalf("%s = %v, more than a relative 1e-11 above its exact value %s", what, got, ratText(exact))
			}
		}
		sq := func(r *big.Rat) *big.Rat { return new(big.Rat).Mul(r, r) }

		// GaussianRho(a, b) = a^2 / (2 b^2); GaussianRDP(d, a, b) = d rho.
		rho, err := GaussianRho(a, b)
		if valid := validPositive(a) && validPositive(b); (err == nil) != valid {
			t.Fatalf("GaussianRho(%v, %v) = %v, %v", a, b, rho, err)
		} else if err != nil {
			oneLine("GaussianRho", err)
		} else {
			exact := new(big.Rat).Quo(sq(exactRat(a)), new(big.Rat).Mul(big.NewRat(2, 1), sq(exactRat(b))))
			atLeast("GaussianRho", rho, exact)
			rdp, err := GaussianRDP(d, a, b)
			if valid := d > 1 && !math.IsInf(d, 1); (err == nil) != valid {
				t.Fatalf("GaussianRDP(%v, %v, %v) = %v, %v", d, a, b, rdp, err)
			} else if err != nil {
				oneLine("GaussianRDP", err)
			} else {
				atLeast("GaussianRDP", rdp, new(big.Rat).Mul(exactRat(d), exact))
			}
		}

		// ReleaseSensitivity(a, n, rel, b) = factor a b / n.
		rel, factor := ReplaceOne, int64(2)
		if addRemove {
			rel, factor = AddRemove, 1
		}
		// The learners are an int: on a 32-bit platform an n beyond it
		// is the int it converts to (the caller's conversion, not the
		// accountant's).
		n = int64(int(n))
		s, err := ReleaseSensitivity(a, int(n), rel, b)
		if valid := validPositive(a) && validPositive(b) && n >= 1; !valid {
			if err == nil {
				t.Fatalf("ReleaseSensitivity(%v, %d, %v, %v) = %v", a, n, rel, b, s)
			}
			oneLine("ReleaseSensitivity", err)
		} else {
			exact := new(big.Rat).Quo(new(big.Rat).Mul(big.NewRat(factor, 1), new(big.Rat).Mul(exactRat(a), exactRat(b))), big.NewRat(n, 1))
			ex, _ := exact.Float64()
			switch {
			case err != nil:
				oneLine("ReleaseSensitivity", err)
				// Refused only outside the normal range (or rounding
				// up past its ends), or where factor clip overflows.
				if ex >= 0x1p-1022 && ex < math.MaxFloat64/2 && !math.IsInf(float64(factor)*a, 1) {
					t.Fatalf("ReleaseSensitivity(%v, %d, %v, %v) refused, exact %v: %v", a, n, rel, b, ex, err)
				}
			case math.IsInf(s, 0) || s < 0x1p-1022:
				t.Fatalf("ReleaseSensitivity(%v, %d, %v, %v) = %v, outside the normal range", a, n, rel, b, s)
			case exact.Cmp(exactRat(0x1p-1022)) < 0:
				t.Fatalf("ReleaseSensitivity(%v, %d, %v, %v) = %v, but its exact value %s is below the normal range: want the documented *ParamError", a, n, rel, b, s, ratText(exact))
			default:
				atLeast("ReleaseSensitivity", s, exact)
			}
		}

		// Mu(a, k) = sqrt(k)/a: mu^2 >= k/a^2. ComposeGaussian of (b, d)
		// and (c, a): mu^2 >= (b/c)^2 + (d/a)^2.
		k := int(n % 1000000)
		mu, err := Mu(a, k)
		if valid := validPositive(a) && k >= 1; (err == nil) != valid {
			t.Fatalf("Mu(%v, %d) = %v, %v", a, k, mu, err)
		} else if err != nil {
			oneLine("Mu", err)
		} else if !math.IsInf(mu, 1) {
			if sq(exactRat(mu)).Cmp(new(big.Rat).Quo(big.NewRat(int64(k), 1), sq(exactRat(a)))) < 0 {
				t.Fatalf("Mu(%v, %d) = %v, below sqrt(k)/sigma", a, k, mu)
			}
		}
		mu, err = ComposeGaussian([]float64{b, d}, []float64{c, a})
		if valid := validPositive(a) && validPositive(b) && validPositive(c) && validPositive(d); (err == nil) != valid {
			t.Fatalf("ComposeGaussian(%v, %v; %v, %v) = %v, %v", b, d, c, a, mu, err)
		} else if err != nil {
			oneLine("ComposeGaussian", err)
		} else if !math.IsInf(mu, 1) {
			want := new(big.Rat).Add(sq(new(big.Rat).Quo(exactRat(b), exactRat(c))), sq(new(big.Rat).Quo(exactRat(d), exactRat(a))))
			if sq(exactRat(mu)).Cmp(want) < 0 {
				t.Fatalf("ComposeGaussian(%v, %v; %v, %v) = %v, below the exact composition", b, d, c, a, mu)
			}
		}

		// The zCDP conversions, with c as delta: eps(rho) >= rho, and
		// rho(eps) gives back at most eps.
		deltaOK := c > 0 && c < 1
		for _, m := range []struct {
			name   string
			eps    func(rho, delta float64) (float64, error)
			rhoFor func(eps, delta float64) (float64, error)
		}{{"ZCDP", ZCDPEpsilon, ZCDPRho}, {"CKS", CKSEpsilon, CKSRho}} {
			e, err := m.eps(a, c)
			if valid := a >= 0 && !math.IsInf(a, 1) && deltaOK; (err == nil) != valid {
				t.Fatalf("%sEpsilon(%v, %v) = %v, %v", m.name, a, c, e, err)
			} else if err != nil {
				oneLine(m.name+"Epsilon", err)
			} else if !(e >= 0) || m.name == "ZCDP" && e < a {
				t.Fatalf("%sEpsilon(%v, %v) = %v", m.name, a, c, e)
			}
			r, err := m.rhoFor(d, c)
			if valid := validPositive(d) && deltaOK; (err == nil) != valid {
				t.Fatalf("%sRho(%v, %v) = %v, %v", m.name, d, c, r, err)
			} else if err != nil {
				oneLine(m.name+"Rho", err)
				continue
			}
			if !(r >= 0) || math.IsInf(r, 1) {
				t.Fatalf("%sRho(%v, %v) = %v", m.name, d, c, r)
			}
			// The eps of that rho is rounded up by the slack again.
			if back, err := m.eps(r, c); err != nil || back > d*(1+2*slack) {
				t.Fatalf("%sRho(%v, %v) = %v, whose eps is %v > %v (%v)", m.name, d, c, r, back, d, err)
			}
		}
		if deltaOK && validPositive(d) {
			zr, _ := ZCDPRho(d, c)
			cr, _ := CKSRho(d, c)
			if cr < zr*(1-1e-12) {
				t.Fatalf("CKSRho(%v, %v) = %v below ZCDPRho %v", d, c, cr, zr)
			}
		}
	})
}
