package accountant

import (
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
)

// Published values of the exact noise multiplier (notes.md section 4;
// Balle & Wang 2018's analytic Gaussian), given to 8 decimals.
var publishedSigma = []struct{ eps, delta, sigma float64 }{
	{1, 1e-5, 3.73063163},
	{5, 1e-3, 0.68984233},
	{0.5, 1e-6, 8.05761848},
	{2, 1e-5, 1.99381245},
}

func TestSigmaPublished(t *testing.T) {
	for _, c := range publishedSigma {
		got, err := Sigma(c.eps, c.delta, Exact)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-c.sigma) > 5e-9 {
			t.Errorf("Sigma(%v, %v) = %.10f, want %.8f", c.eps, c.delta, got, c.sigma)
		}
	}
}

func TestEpsilonPublishedComposition(t *testing.T) {
	// 100 compositions of sigma = 1 at delta = 1e-5 (notes.md section 4).
	const want = 91.8172896246637
	got, err := Epsilon(1, 1e-5, 100, Exact)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(got-want) > 1e-11*want {
		t.Errorf("Epsilon(1, 1e-5, 100) = %.15g, want %.15g", got, want)
	}
}

// bigSafe reports whether delta(eps; mu) <= delta in big-float arithmetic.
func bigSafe(eps, mu, delta float64) bool {
	return refDelta(eps, mu).Cmp(new(big.Float).SetFloat64(delta)) <= 0
}

// Certificates against the independent big-arithmetic curve: the returned
// sigma (or eps) is safe, and one 1e-11 relative below it is not, so the
// result is on the safe side and within 1e-11 of the exact root.
var certCases = []struct{ eps, delta float64 }{
	{1, 1e-5}, {5, 1e-3}, {0.5, 1e-6}, {2, 1e-5},
	{1, 1e-300}, {100, 1e-5}, {100, 1e-300}, {0.01, 1e-10},
	{1e-4, 0.5}, {1e-6, 1e-5}, {30, 1e-100}, {0.1, 0.9},
	// Within a few ulps to 1e-6 of 1 (TestExactNearOne).
	{1, nearOne}, {1, 1 - 1e-12}, {1, 1 - 1e-6}, {0.01, nearOne},
	{100, nearOne}, {1e-6, 1 - 1e-15}, {5, 0.9}, {1000, 1 - 1e-10},
}

// nearOne is the largest float64 below 1, 0.9999999999999999.
var nearOne = math.Nextafter(1, 0)

func TestSigmaCertified(t *testing.T) {
	for _, c := range certCases {
		s, err := Sigma(c.eps, c.delta, Exact)
		if err != nil {
			t.Fatal(err)
		}
		if !bigSafe(c.eps, 1/s, c.delta) {
			t.Errorf("Sigma(%v, %v) = %.17g is not safe", c.eps, c.delta, s)
		}
		if below := s * (1 - 1e-11); bigSafe(c.eps, 1/below, c.delta) {
			t.Errorf("Sigma(%v, %v) = %.17g: %.17g is also safe, so the result is not within 1e-11 of the root", c.eps, c.delta, s, below)
		}
	}
}

func TestEpsilonCertified(t *testing.T) {
	for _, c := range []struct {
		sigma, delta float64
		k            int
	}{
		{1, 1e-5, 1}, {1, 1e-5, 100}, {3.7, 1e-5, 1}, {0.1, 1e-300, 1},
		{0.5, 1e-3, 7}, {40, 1e-10, 1}, {8, 1e-6, 1000}, {1000, 1e-4, 1},
		{0.06, nearOne, 1}, {0.05, 1 - 1e-12, 1}, {0.1, 1 - 1e-6, 1}, // TestExactNearOne
	} {
		e, err := Epsilon(c.sigma, c.delta, c.k, Exact)
		if err != nil {
			t.Fatal(err)
		}
		mu := math.Sqrt(float64(c.k)) / c.sigma
		if e == 0 {
			t.Errorf("Epsilon(%v, %v, %d) = 0 unexpectedly", c.sigma, c.delta, c.k)
			continue
		}
		if !bigSafe(e, mu, c.delta) {
			t.Errorf("Epsilon(%v, %v, %d) = %.17g is not safe", c.sigma, c.delta, c.k, e)
		}
		if below := e * (1 - 1e-11); bigSafe(below, mu, c.delta) {
			t.Errorf("Epsilon(%v, %v, %d) = %.17g: %.17g is also safe", c.sigma, c.delta, c.k, e, below)
		}
	}
}

// grid of targets spanning the promised range.
var (
	gridEps   = []float64{1e-3, 0.01, 0.1, 0.5, 1, 2, 5, 10, 30, 100}
	gridDelta = []float64{1e-300, 1e-100, 1e-20, 1e-10, 1e-5, 1e-3, 0.1, 0.5, 0.99}
)

// rdpGridTooCoarse reports whether err is the RDP methods' documented
// refusal of an eps below their grid's reach.
func rdpGridTooCoarse(m Method, err error) bool {
	var me *MethodError
	return (m == RDP || m == RDPMironov) && errors.As(err, &me)
}

func TestRoundTrip(t *testing.T) {
	for _, m := range Methods() {
		for _, eps := range gridEps {
			for _, delta := range gridDelta {
				s, err := Sigma(eps, delta, m)
				if m == DworkRoth && eps >= 1 {
					if err == nil {
						t.Errorf("Sigma(%v, %v, DworkRoth) = %v, want an error", eps, delta, s)
					}
					continue
				}
				if rdpGridTooCoarse(m, err) {
					continue
				}
				if err != nil {
					t.Fatalf("Sigma(%v, %v, %v): %v", eps, delta, m, err)
				}
				e, err := Epsilon(s, delta, 1, m)
				if err != nil {
					t.Fatalf("Epsilon(Sigma(%v, %v, %v)): %v", eps, delta, m, err)
				}
				// eps -> sigma -> eps does not come back above the target, up to
				// the two outward roundings (2e-12). How far below it may come
				// depends on the slope of eps(sigma), which is steep where
				// delta is near 1; tightness is checked in the sigma domain,
				// where the slope divides instead of multiplies:
				// eps -> sigma -> eps -> sigma comes back within 1e-9.
				if e > eps*(1+3e-12) || !(e > 0) {
					t.Errorf("%v: eps %v -> sigma %v -> eps %.17g (delta %v)", m, eps, s, e, delta)
				}
				if s2, err := Sigma(e, delta, m); err != nil || math.Abs(s2-s) > 1e-9*s {
					t.Errorf("%v: sigma %v -> eps %v -> sigma %.17g (delta %v)", m, s, e, s2, delta)
				}
			}
		}
	}
}

func TestEveryMethodIsSafe(t *testing.T) {
	// Every method's sigma satisfies the exact curve, so it is at least
	// Exact's, and the bounds keep their known order:
	// Exact <= CKS <= RDP <= RDPMironov and CKS <= ZCDP.
	// On the grid and on 200 seeded random targets, log-uniform in
	// eps in [1e-3, 100] and delta in [1e-300, 0.99].
	type target struct{ eps, delta float64 }
	var targets []target
	for _, eps := range gridEps {
		for _, delta := range gridDelta {
			targets = append(targets, target{eps, delta})
		}
	}
	rng := rand.New(rand.NewPCG(2014, 2018))
	for range 200 {
		targets = append(targets, target{math.Pow(10, -3+5*rng.Float64()), math.Pow(10, -300+299.996*rng.Float64())})
	}
	for _, tg := range targets {
		eps, delta := tg.eps, tg.delta
		sig := map[Method]float64{}
		for _, m := range Methods() {
			s, err := Sigma(eps, delta, m)
			if err != nil {
				if !(m == DworkRoth && eps >= 1) && !rdpGridTooCoarse(m, err) {
					t.Errorf("Sigma(%v, %v, %v): %v", eps, delta, m, err)
				}
				continue
			}
			sig[m] = s
			if !exactSafe(eps, 1/s, delta) {
				d, _ := Delta(eps, 1/s)
				t.Errorf("%v at (%v, %v): sigma %v gives delta %v", m, eps, delta, s, d)
			}
		}
		for _, p := range [][2]Method{{Exact, CKS}, {CKS, RDP}, {RDP, RDPMironov}, {CKS, ZCDP}, {Exact, Paper}, {Exact, DworkRoth}} {
			lo, okLo := sig[p[0]]
			hi, okHi := sig[p[1]]
			if okLo && okHi && lo > hi*(1+1e-12) {
				t.Errorf("(%v, %v): %v sigma %v > %v sigma %v", eps, delta, p[0], lo, p[1], hi)
			}
		}
	}
}

func TestMonotone(t *testing.T) {
	for _, m := range Methods() {
		// Sigma strictly decreases in eps and in delta (steps of 2% and more
		// change the root far more than the 1e-12 rounding).
		for _, delta := range []float64{1e-300, 1e-10, 1e-5, 0.3} {
			prev := math.Inf(1)
			for eps := 1e-3; eps <= 100; eps *= 1.02 {
				if m == DworkRoth && eps >= 1 {
					break
				}
				s, err := Sigma(eps, delta, m)
				if rdpGridTooCoarse(m, err) {
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				if !(s < prev) {
					t.Fatalf("%v: Sigma(%v, %v) = %v not below %v at the smaller eps", m, eps, delta, s, prev)
				}
				prev = s
			}
		}
		prev := math.Inf(1)
		for delta := 1e-300; delta < 1; delta *= 2 {
			s, err := Sigma(0.5, delta, m)
			if err != nil {
				t.Fatal(err)
			}
			if !(s < prev) {
				t.Fatalf("%v: Sigma(0.5, %v) = %v not below %v at the smaller delta", m, delta, s, prev)
			}
			prev = s
		}
		// Epsilon decreases in sigma and increases in k.
		prev = math.Inf(1)
		for sigma := 0.05; sigma < 1e4; sigma *= 1.05 {
			e, err := Epsilon(sigma, 1e-6, 1, m)
			if m == DworkRoth && err != nil {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			if !(e < prev) {
				t.Fatalf("%v: Epsilon(%v) = %v not below %v", m, sigma, e, prev)
			}
			prev = e
		}
		prev = 0
		for k := 1; k <= 1<<20; k *= 2 {
			e, err := Epsilon(1000, 1e-6, k, m)
			if m == DworkRoth && err != nil {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if !(e > prev) {
				t.Fatalf("%v: Epsilon(1000, 1e-6, %d) = %v not above %v", m, k, e, prev)
			}
			prev = e
		}
	}
	// Delta decreases in eps and increases in mu, down to 1e-300.
	for _, mu := range []float64{0.02, 0.3, 1, 5} {
		prev := 1.0
		for eps := 1e-3; eps <= 100; eps *= 1.02 {
			d, err := Delta(eps, mu)
			if err != nil {
				t.Fatal(err)
			}
			if d < 1e-300 {
				break
			}
			if !(d < prev) {
				t.Fatalf("Delta(%v, %v) = %v not below %v", eps, mu, d, prev)
			}
			prev = d
		}
	}
	prev := 0.0
	for mu := 0.01; mu < 100; mu *= 1.02 {
		d, _ := Delta(2, mu)
		if d < 1e-300 {
			continue
		}
		if !(d > prev) && d < 1 {
			t.Fatalf("Delta(2, %v) = %v not above %v", mu, d, prev)
		}
		prev = d
	}
}

func TestDworkRoth(t *testing.T) {
	// Closed form at eps < 1: sqrt(2 ln(1.25e6))/0.5, with ln(1.25e6) =
	// 14.038654109278484 (ln 1.25 + 6 ln 10).
	got, err := Sigma(0.5, 1e-6, DworkRoth)
	if err != nil {
		t.Fatal(err)
	}
	if want := math.Sqrt(2*14.038654109278484) / 0.5; math.Abs(got-want) > 1e-11*want || got < want {
		t.Errorf("Sigma(0.5, 1e-6, DworkRoth) = %.17g, want %.17g rounded up", got, want)
	}
	// Refused at eps >= 1 with a reason, by Sigma and by Epsilon.
	for _, eps := range []float64{1, 5} {
		_, err := Sigma(eps, 1e-5, DworkRoth)
		var me *MethodError
		if !errors.As(err, &me) || me.Method != DworkRoth {
			t.Fatalf("Sigma(%v, 1e-5, DworkRoth): err = %v, want a *MethodError", eps, err)
		}
	}
	if _, err := Epsilon(1, 1e-5, 1, DworkRoth); err == nil {
		t.Error("Epsilon(1, 1e-5, 1, DworkRoth) (eps 4.8) is not refused")
	}
	// Why: at eps = 20, delta = 1e-5 the formula's sigma is far from
	// (eps, delta)-DP by the independent big-arithmetic curve.
	s := math.Sqrt(2*(math.Log(1.25)+5*math.Ln10)) / 20
	if d, _ := refDelta(20, 1/s).Float64(); d < 100*1e-5 {
		t.Errorf("Dwork-Roth at eps = 20 gives delta %v; the refusal's example expects > 1e-3", d)
	}
}

func TestPaperFormulas(t *testing.T) {
	// The paper's V^2 = 4 gamma^2 B_g^2 (2 log(1/delta) + eps)/eps^2 with
	// sensitivity 2 gamma B_g: per unit sensitivity, at (5, 1e-3),
	// sigma^2 = (2 * 6.907755278982137 + 5)/25.
	got, _ := Sigma(5, 1e-3, Paper)
	if want := math.Sqrt((2*6.907755278982137 + 5) / 25); math.Abs(got-want) > 1e-11*want || got < want {
		t.Errorf("Sigma(5, 1e-3, Paper) = %.17g, want %.17g", got, want)
	}
	// The baseline's V^2 = 2 B_g^2 / rho, rho = (sqrt(eps + L) - sqrt(L))^2,
	// is method ZCDP at sensitivity 2 B_g: V = B_g sqrt(2/rho).
	const bg = 0.7
	L := 3 * math.Ln10
	rho := math.Pow(math.Sqrt(1+L)-math.Sqrt(L), 2)
	v, _ := NoiseStd(1, 1e-3, 2*bg, ZCDP)
	if want := bg * math.Sqrt(2/rho); math.Abs(v-want) > 1e-11*want {
		t.Errorf("baseline V = %.17g, want %.17g", v, want)
	}
}

func TestZCDPConversions(t *testing.T) {
	// Bun-Steinke by hand: rho = 0.5, delta = 1e-5: 0.5 + 2 sqrt(0.5 * 5 ln 10).
	e, _ := ZCDPEpsilon(0.5, 1e-5)
	if want := 0.5 + 2*math.Sqrt(0.5*5*math.Ln10); math.Abs(e-want) > 1e-11*want || e < want {
		t.Errorf("ZCDPEpsilon(0.5, 1e-5) = %.17g, want %.17g", e, want)
	}
	for _, rho := range []float64{1e-12, 1e-6, 0.01, 0.5, 3, 50, 1e4} {
		for _, delta := range []float64{1e-300, 1e-5, 0.5} {
			bs, _ := ZCDPEpsilon(rho, delta)
			cks, _ := CKSEpsilon(rho, delta)
			// CKS against a brute-force minimum over 20,001 orders
			// alpha = 1 + 10^(i/1000) up to 1 + 1e14: the bisection finds the
			// true infimum, so it is at most the brute-force value (up to the
			// brute force's own rounding) and close to it.
			brute := math.Inf(1)
			for i := -6000; i <= 14000; i++ {
				x := math.Pow(10, float64(i)/1000)
				a := 1 + x
				brute = math.Min(brute, a*rho+math.Log((a-1)/a)-(math.Log(delta)+math.Log(a))/(a-1))
			}
			brute = math.Max(brute, 0)
			if cks > brute*(1+1e-9)+1e-300 || cks < brute-1e-5*brute {
				t.Errorf("CKSEpsilon(%v, %v) = %.17g, brute force %.17g", rho, delta, cks, brute)
			}
			if cks > bs {
				t.Errorf("CKSEpsilon(%v, %v) = %v > Bun-Steinke %v", rho, delta, cks, bs)
			}
			// Inverses.
			if r, err := ZCDPRho(bs, delta); err != nil || math.Abs(r-rho) > 1e-9*rho || r > rho*(1+3e-12) {
				t.Errorf("ZCDPRho(ZCDPEpsilon(%v)) = %v, %v", rho, r, err)
			}
			if cks > 0 {
				if r, err := CKSRho(cks, delta); err != nil || math.Abs(r-rho) > 1e-9*rho {
					t.Errorf("CKSRho(CKSEpsilon(%v, %v) = %v) = %.17g, %v", rho, delta, cks, r, err)
				}
			}
		}
	}
	// A conversion never returns a negative eps: at delta = 0.5 and a tiny
	// rho the CKS infimum is negative, which means (0, delta)-DP.
	if e, _ := CKSEpsilon(1e-6, 0.5); e != 0 {
		t.Errorf("CKSEpsilon(1e-6, 0.5) = %v, want 0", e)
	}
}

func TestRDP(t *testing.T) {
	orders := RDPOrders()
	if len(orders) != 193 || math.Abs(orders[0]-1.001) > 1e-15 || math.Abs(orders[192]-(1+1e9)) > 1e-6 {
		t.Fatalf("RDPOrders: %d orders from %v to %v", len(orders), orders[0], orders[len(orders)-1])
	}
	// Single orders by hand: alpha = 2, rdp = 1, delta = 1e-5.
	// Balle et al.: 1 + log(1/2) - (log 1e-5 + log 2) = 1 + 5 ln 10 - 2 ln 2.
	// Mironov: 1 + 5 ln 10.
	for _, c := range []struct {
		conv Conversion
		want float64
	}{
		{Balle2020, 1 + 5*math.Ln10 - 2*math.Ln2},
		{Mironov2017, 1 + 5*math.Ln10},
	} {
		e, a, err := RDPEpsilon([]float64{2}, []float64{1}, 1e-5, c.conv)
		if err != nil || a != 2 || math.Abs(e-c.want) > 1e-11*c.want || e < c.want {
			t.Errorf("RDPEpsilon(%v) = %.17g at %v, %v; want %.17g", c.conv, e, a, err, c.want)
		}
	}
	// The public conversion on the Gaussian's RDP curve over the grid agrees
	// with method RDP, which evaluates it in alpha - 1 directly.
	const sigma, delta = 2.5, 1e-7
	rdp := make([]float64, len(orders))
	for j, a := range orders {
		rdp[j], _ = GaussianRDP(a, 1, sigma)
	}
	for _, c := range []struct {
		conv Conversion
		m    Method
	}{{Balle2020, RDP}, {Mironov2017, RDPMironov}} {
		e1, _, err := RDPEpsilon(orders, rdp, delta, c.conv)
		if err != nil {
			t.Fatal(err)
		}
		e2, _ := Epsilon(sigma, delta, 1, c.m)
		if math.Abs(e1-e2) > 1e-12*e2 {
			t.Errorf("%v: RDPEpsilon %.17g, Epsilon %.17g", c.m, e1, e2)
		}
	}
	// The grid loses little against the continuous optimum (CKS): below
	// 0.5% over the range the grid is built for.
	for _, eps := range []float64{0.01, 1, 10} {
		for _, delta := range []float64{1e-100, 1e-5} {
			s1, _ := Sigma(eps, delta, CKS)
			s2, _ := Sigma(eps, delta, RDP)
			if s2 > 1.005*s1 {
				t.Errorf("(%v, %v): RDP sigma %v vs CKS %v", eps, delta, s2, s1)
			}
		}
	}
	// Below the grid's reach RDP refuses with a *MethodError.
	// (The largest order, 1 + 1e9, reaches eps = (log(1/delta) - log 1e9)/1e9
	// = 6.7e-7 at delta = 1e-300.)
	if _, err := Sigma(1e-7, 1e-300, RDP); !rdpGridTooCoarse(RDP, err) {
		t.Errorf("Sigma(1e-7, 1e-300, RDP): err = %v, want a *MethodError", err)
	}
	if _, err := Sigma(1e-6, 1e-300, RDP); err != nil {
		t.Errorf("Sigma(1e-6, 1e-300, RDP): %v", err)
	}
}

func TestComposeGaussian(t *testing.T) {
	// mu_j = 1/1, 2/2, 3/(3/2): mu = sqrt(1 + 1 + 4) = sqrt 6.
	m, err := ComposeGaussian([]float64{1, 2, 3}, []float64{1, 2, 1.5})
	if err != nil || math.Abs(m-math.Sqrt(6)) > 1e-14 || m < math.Sqrt(6) {
		t.Errorf("ComposeGaussian = %.17g, %v; want sqrt 6 rounded up", m, err)
	}
	// Overflow-free: 1e200 mechanisms of mu = 1e200 each.
	m, _ = ComposeGaussian([]float64{1e200, 1e200}, []float64{1, 1})
	if want := math.Sqrt2 * 1e200; math.Abs(m-want) > 1e-14*want {
		t.Errorf("ComposeGaussian(1e200, 1e200) = %v, want %v", m, want)
	}
	// One line naming the input and what was expected (the empty case said
	// "want len(sensitivities) = 0 and >= 1").
	for _, c := range []struct {
		s, v []float64
		want string
	}{
		{[]float64{1}, []float64{1, 2}, "len(stds) = 2, want len(sensitivities) = 1"},
		{nil, nil, "len(stds) = 0, want >= 1 (one standard deviation per mechanism)"},
		{[]float64{1, 2}, nil, "len(stds) = 0, want >= 1"},
	} {
		if _, err := ComposeGaussian(c.s, c.v); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ComposeGaussian(%v, %v): %v, want %q", c.s, c.v, err, c.want)
		}
	}
	// k identical compositions: Mu(sigma, k) = sqrt(k)/sigma.
	if m, _ := Mu(2, 16); math.Abs(m-2) > 1e-15 || m < 2 {
		t.Errorf("Mu(2, 16) = %v, want 2", m)
	}
}

func TestSpecialCases(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	paramErr := func(name string, err error) bool {
		var pe *ParamError
		return errors.As(err, &pe) && pe.Param == name
	}
	errCases := []struct {
		name, param string
		err         error
	}{}
	add := func(name, param string, _ float64, err error) {
		errCases = append(errCases, struct {
			name, param string
			err         error
		}{name, param, err})
	}
	for _, m := range Methods() {
		for _, eps := range []float64{0, -1, inf, nan} {
			v, err := Sigma(eps, 1e-5, m)
			add("Sigma eps="+ftoa(eps)+" "+m.String(), "eps", v, err)
		}
		for _, delta := range []float64{0, 1, 1.5, -1, nan} {
			v, err := Sigma(1, delta, m)
			add("Sigma delta="+ftoa(delta)+" "+m.String(), "delta", v, err)
			v, err = Epsilon(1, delta, 1, m)
			add("Epsilon delta="+ftoa(delta)+" "+m.String(), "delta", v, err)
		}
		for _, sigma := range []float64{0, -1, inf, nan} {
			v, err := Epsilon(sigma, 1e-5, 1, m)
			add("Epsilon sigma="+ftoa(sigma)+" "+m.String(), "sigma", v, err)
		}
		v, err := Epsilon(1, 1e-5, 0, m)
		add("Epsilon k=0", "compositions", v, err)
		for _, s := range []float64{0, -1, inf, nan} {
			v, err := NoiseStd(1, 1e-5, s, m)
			add("NoiseStd sensitivity="+ftoa(s), "sensitivity", v, err)
		}
	}
	v, err := Delta(inf, 1)
	add("Delta eps=+Inf", "eps", v, err)
	v, err = Delta(1, 0)
	add("Delta mu=0", "mu", v, err)
	v, err = ZCDPEpsilon(-1, 1e-5)
	add("ZCDPEpsilon rho=-1", "rho", v, err)
	v, err = CKSEpsilon(inf, 1e-5)
	add("CKSEpsilon rho=+Inf", "rho", v, err)
	v, err = Sigma(1, 1e-5, Method(99))
	add("Sigma method 99", "method", v, err)
	for _, c := range errCases {
		if !paramErr(c.param, c.err) {
			t.Errorf("%s: err = %v, want a *ParamError for %s", c.name, c.err, c.param)
		}
	}

	// Documented values.
	if d, err := Delta(1, inf); d != 1 || err != nil {
		t.Errorf("Delta(1, +Inf) = %v, %v; want 1", d, err)
	}
	if d, _ := Delta(100, 1e-3); d != math.SmallestNonzeroFloat64 {
		t.Errorf("Delta(100, 1e-3) = %v, want 5e-324 (an upper bound where delta underflows)", d)
	}
	for _, k := range fitInts(1 << 40) { // 64-bit only
		if m, _ := Mu(1e-305, k); !math.IsInf(m, 1) {
			t.Errorf("Mu(1e-305, %d) = %v, want +Inf", k, m)
		}
	}
	for _, m := range Methods() {
		if m == DworkRoth {
			continue
		}
		if e, err := Epsilon(1e-160, 1e-5, 1, m); !math.IsInf(e, 1) || err != nil {
			t.Errorf("Epsilon(1e-160, 1e-5, 1, %v) = %v, %v; want +Inf", m, e, err)
		}
		// A huge sigma gives a tiny eps, except that Mironov's conversion on
		// the grid cannot go below log(1/delta)/1e9 (largest order 1 + 1e9).
		floor := 1e-290
		if m == RDPMironov {
			floor = 5 * math.Ln10 / 1e9 * (1 + 1e-9)
		}
		if e, err := Epsilon(1e300, 1e-5, 1, m); !(e >= 0) || e > floor || err != nil {
			t.Errorf("Epsilon(1e300, 1e-5, 1, %v) = %v, %v; want a non-negative eps below %v", m, e, err, floor)
		}
		if e, err := ZCDPEpsilon(0, 1e-5); e != 0 || err != nil {
			t.Errorf("ZCDPEpsilon(0) = %v, %v", e, err)
		}
	}
	var me *MethodError
	if _, err := Sigma(1e-310, 1e-5, Paper); !errors.As(err, &me) {
		t.Errorf("Sigma(1e-310, 1e-5, Paper): err = %v, want an overflow *MethodError", err)
	}
	if s, err := Sigma(1e-310, 1e-5, Exact); err != nil || math.Abs(s-39894.228) > 1e-3 {
		t.Errorf("Sigma(1e-310, 1e-5, Exact) = %v, %v; want the eps -> 0 limit 39894.228", s, err)
	}
	var pe *ParamError
	if _, err := NoiseStd(1e-300, 1e-5, 1e10, Paper); err == nil || errors.As(err, &pe) {
		t.Errorf("NoiseStd overflow: err = %v, want an overflow error", err)
	}
	// An error message names the parameter and its range on one line.
	_, err = Sigma(1, 1.5, Exact)
	if got, want := err.Error(), "dpmf: delta = 1.5, want 0 < delta < 1"; got != want {
		t.Errorf("error %q, want %q", got, want)
	}
}

func TestNoiseStdRoundsUp(t *testing.T) {
	// NoiseStd is Sigma times the sensitivity, rounded up: checked with
	// big-float products over many sensitivities.
	s, _ := Sigma(1, 1e-5, Exact)
	for i := 1; i < 200; i++ {
		sens := 0.37 * float64(i)
		v, err := NoiseStd(1, 1e-5, sens, Exact)
		if err != nil {
			t.Fatal(err)
		}
		exact := new(big.Float).SetPrec(200).Mul(big.NewFloat(s), big.NewFloat(sens))
		if exact.Cmp(big.NewFloat(v)) > 0 {
			t.Fatalf("NoiseStd(sens = %v) = %v below sigma*sens", sens, v)
		}
		if next := math.Nextafter(v, 0); exact.Cmp(big.NewFloat(next)) <= 0 {
			t.Fatalf("NoiseStd(sens = %v) = %v is not the least float64 >= sigma*sens", sens, v)
		}
	}
}

// TestExactNearOne: Sigma and Epsilon (method Exact) for delta within a
// few ulps to 1e-6 of 1 are certified against the big-float curve with
// the other cases (certCases, TestEpsilonCertified: safe, and one 1e-11
// below not). The log-domain safety test alone could not resolve these:
// its error bound of 1e-13 in log delta exceeds log(1/delta) = 1.1e-16 at
// the largest float64 below 1, where Sigma(1, ...) came out 0.0671
// instead of 0.05987 (12% more noise than needed). Here, the published
// value there: mpmath 1.3 at 60 digits gives 0.059870169234091369.
func TestExactNearOne(t *testing.T) {
	if s, _ := Sigma(1, nearOne, Exact); math.Abs(s-0.059870169234091369) > 1e-12 {
		t.Errorf("Sigma(1, %v) = %.17g, want 0.059870169234091369 (mpmath)", nearOne, s)
	}
}
