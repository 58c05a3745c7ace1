package dataset

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// Each learner's stream depends only on (seed, learner): learner i's
// samples are the same in a data set of 3 and of 5 learners, and equal
// its stream's output in order.
func TestSyntheticSeededPerLearner(t *testing.T) {
	s := Synthetic{Alpha: 0.1, Beta: 0.1, Dim: 5}
	small, err := s.Dataset(3, 4, 2, 42)
	if err != nil {
		t.Fatal(err)
	}
	large, err := s.Dataset(5, 4, 2, 42)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		st := s.Stream(i, 42)
		a := make([]float64, 5)
		for r := 0; r < 4; r++ {
			for k := 0; k < 2; k++ {
				y := st.Next(a)
				for _, ds := range []*Dataset{small, large} {
					b, yb := ds.Sample(i, r, k)
					if !slices.Equal(a, b) || y != yb {
						t.Fatalf("learner %d, round %d, step %d: stream and data set differ", i, r, k)
					}
				}
				if y != 1 && y != -1 {
					t.Fatalf("label %v, want +-1", y)
				}
			}
		}
	}
	other, _ := s.Dataset(3, 4, 2, 43)
	if slices.Equal(other.Features, small.Features) {
		t.Error("seeds 42 and 43 give the same data")
	}
}

// The learner parameters have the stated distribution: across 4000
// learners, var(w_k) = alpha^2 + 1, cov(w_0, w_1) = cov(w_0, b) = alpha^2,
// var(v_k) = beta^2 + 1, cov(v_0, v_1) = beta^2 (alpha and beta are
// standard deviations). Each check allows 5 standard errors, so a correct
// generator fails one of the 5 with probability about 3e-6.
func TestSyntheticLearnerDistribution(t *testing.T) {
	const alpha, beta, L = 0.7, 0.5, 4000
	s := Synthetic{Alpha: alpha, Beta: beta, Dim: 2}
	w0, w1, b, v0, v1 := make([]float64, L), make([]float64, L), make([]float64, L), make([]float64, L), make([]float64, L)
	for i := range L {
		st := s.Stream(i, 1)
		w0[i], w1[i], b[i], v0[i], v1[i] = st.w[0], st.w[1], st.b, st.v[0], st.v[1]
	}
	a2, b2 := alpha*alpha, beta*beta
	for _, c := range []struct {
		name       string
		x, y       []float64
		want       float64
		varX, varY float64
	}{
		{"var w", w0, w0, a2 + 1, a2 + 1, a2 + 1},
		{"cov w0 w1", w0, w1, a2, a2 + 1, a2 + 1},
		{"cov w0 b", w0, b, a2, a2 + 1, a2 + 1},
		{"var v", v0, v0, b2 + 1, b2 + 1, b2 + 1},
		{"cov v0 v1", v0, v1, b2, b2 + 1, b2 + 1},
	} {
		got := cov(c.x, c.y)
		// Standard error of a sample covariance of jointly normal data:
		// sqrt((var_x var_y + cov^2) / n).
		se := math.Sqrt((c.varX*c.varY + c.want*c.want) / L)
		if math.Abs(got-c.want) > 5*se {
			t.Errorf("%s = %.4f, want %.4f +- %.4f", c.name, got, c.want, 5*se)
		}
	}
}

// Within a learner the features have variance j^{-1.2} around the learner's
// mean v. Each of the 60 checks allows 5 standard errors (false failure
// probability about 4e-5 in all).
func TestSyntheticFeatureVariance(t *testing.T) {
	const N = 20000
	s := Synthetic{Alpha: 0.1, Beta: 0.1}
	st := s.Stream(3, 9)
	a := make([]float64, 60)
	ss := make([]float64, 60)
	for range N {
		st.Next(a)
		for k := range a {
			c := a[k] - st.v[k]
			ss[k] += c * c
		}
	}
	for k := range ss {
		want := math.Pow(float64(k+1), -1.2)
		got := ss[k] / N // the mean is known: N degrees of freedom
		if se := want * math.Sqrt(2.0/N); math.Abs(got-want) > 5*se {
			t.Errorf("feature %d: variance %.5f, want %.5f", k+1, got, want)
		}
	}
}

func TestSyntheticErrors(t *testing.T) {
	for _, s := range []Synthetic{{Alpha: -1}, {Beta: math.NaN()}, {Alpha: math.Inf(1)}, {Dim: -2}} {
		if _, err := s.Dataset(1, 1, 1, 0); err == nil {
			t.Errorf("%+v: no error", s)
		}
	}
	if _, err := (Synthetic{}).Dataset(0, 1, 1, 0); err == nil {
		t.Error("0 learners: no error")
	}
}

func cov(x, y []float64) float64 {
	mx, my := 0.0, 0.0
	for i := range x {
		mx += x[i]
		my += y[i]
	}
	mx /= float64(len(x))
	my /= float64(len(y))
	s := 0.0
	for i := range x {
		s += (x[i] - mx) * (y[i] - my)
	}
	return s / float64(len(x)-1)
}

// TestSyntheticOverflowRefused: with beta = 1e200 every feature mean is
// B_i + N(0, 1), |B_i| = 1e200 |N(0,1)|, so a client's squared norm
// (about 60 x 1e400 N^2) overflows unless |N| < 1e-46 (probability about
// 1e-46): the data set is refused, naming synthetic(...) and beta, rather
// than handed to a model whose loss Hessians are +Inf. With alpha and beta
// 1e308 the weights and margins overflow too. alpha = 1e200 with beta = 0
// keeps features of size O(1) and finite margins (|w . a| about 1e202):
// accepted.
func TestSyntheticOverflowRefused(t *testing.T) {
	for _, c := range []struct {
		s  Synthetic
		ok bool
	}{
		{Synthetic{Alpha: 0, Beta: 1e200, Dim: 5}, false},
		{Synthetic{Alpha: 1e308, Beta: 1e308, Dim: 5}, false},
		{Synthetic{Alpha: 1e200, Beta: 0, Dim: 5}, true},
		{Synthetic{Alpha: 0.1, Beta: 0.1, Dim: 5}, true},
	} {
		_, err := c.s.Dataset(2, 3, 2, 1)
		switch {
		case c.ok && err != nil:
			t.Errorf("%v: %v, want accepted", c.s, err)
		case !c.ok && (err == nil || !strings.Contains(err.Error(), c.s.String()) || !strings.Contains(err.Error(), "want alpha and beta")):
			t.Errorf("%v: %v, want an error naming the data set and alpha, beta", c.s, err)
		}
	}
}
