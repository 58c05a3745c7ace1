package dataset

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
)

// Synthetic describes the binary variant of the synthetic(alpha, beta) data
// of Li et al. 2020 (FedProx), used in the paper's experiments with
// (alpha, beta) = (0.1, 0.1) and d = 60. For learner i:
//
//	u_i ~ N(0, alpha^2),  B_i ~ N(0, beta^2),
//	w_i ~ N(u_i, 1)^d,    b_i ~ N(u_i, 1),       (the learner's labelling rule)
//	v_i ~ N(B_i, 1)^d,                           (the learner's feature mean)
//	a ~ N(v_i, diag(j^{-1.2})), j = 1..d,        (one client's features)
//	y = sign(w_i . a + b_i)  (+1 when zero).
//
// alpha and beta are standard deviations, as in the original code. The
// original draws a 10 x d weight matrix and labels by argmax of a softmax,
// where the common shift u_i cancels and alpha has no effect; the binary
// variant with one weight vector keeps alpha meaningful and matches the
// paper's labels in {-1, +1}. alpha controls how much the learners'
// labelling rules differ in their mean, beta how much their feature
// distributions differ.
type Synthetic struct {
	Alpha, Beta float64
	// Dim is d; 0 means 60.
	Dim int
}

// String returns "synthetic(alpha,beta)".
func (s Synthetic) String() string {
	return fmt.Sprintf("synthetic(%g,%g)", s.Alpha, s.Beta)
}

func (s Synthetic) dim() int {
	return cmp.Or(s.Dim, 60)
}

func (s Synthetic) validate() error {
	if !(s.Alpha >= 0) || math.IsInf(s.Alpha, 0) || !(s.Beta >= 0) || math.IsInf(s.Beta, 0) {
		return fmt.Errorf("dataset: synthetic(alpha = %v, beta = %v), want finite alpha, beta >= 0", s.Alpha, s.Beta)
	}
	if s.Dim < 0 {
		return fmt.Errorf("dataset: synthetic dimension %d, want >= 1 (or 0 for 60)", s.Dim)
	}
	return nil
}

// SyntheticStream is one learner's stream of clients.
type SyntheticStream struct {
	rng  *rand.Rand
	w    []float64
	b    float64
	v    []float64
	sdev []float64
	// overflow is set once a client's margin w . a + b was NaN or its
	// features' squared norm ||a||^2 not finite (alpha or beta near the
	// float64 range).
	overflow bool
}

// Stream returns learner i's stream of clients, seeded by (seed, i): the
// learner's parameters are drawn first, then one client per call to
// [SyntheticStream.Next]. Streams of different learners are independent and
// each is reproducible on its own. It panics if s is invalid (see
// [Synthetic.Dataset] for the checked entry point).
func (s Synthetic) Stream(i int, seed uint64) *SyntheticStream {
	if err := s.validate(); err != nil {
		panic(err.Error())
	}
	d := s.dim()
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15^uint64(i)))
	u := s.Alpha * rng.NormFloat64()
	bb := s.Beta * rng.NormFloat64()
	st := &SyntheticStream{rng: rng, w: make([]float64, d), v: make([]float64, d), sdev: make([]float64, d)}
	for k := range st.w {
		st.w[k] = u + rng.NormFloat64()
	}
	st.b = u + rng.NormFloat64()
	for k := range st.v {
		st.v[k] = bb + rng.NormFloat64()
		st.sdev[k] = math.Pow(float64(k+1), -0.6) // variance j^{-1.2}
	}
	return st
}

// Next writes the next client's features into a (of length d) and returns
// its label.
func (st *SyntheticStream) Next(a []float64) float64 {
	z := st.b
	for k := range a {
		a[k] = st.v[k] + st.sdev[k]*st.rng.NormFloat64()
		z += st.w[k] * a[k]
	}
	ss := 0.0
	for _, x := range a {
		ss += x * x
	}
	if math.IsNaN(z) || math.IsInf(ss, 0) || math.IsNaN(ss) {
		// A margin of Inf - Inf has no sign; features whose squared
		// norm overflows make every loss's Hessian a a^T overflow.
		st.overflow = true
	}
	if z >= 0 {
		return 1
	}
	return -1
}

// Dataset draws a data set of n learners, R rounds and tau steps: learner i
// serves the first R tau clients of its stream [Synthetic.Stream](i, seed),
// in order. It is an error for a client's squared feature norm to
// overflow float64, or its label margin to be NaN (beta above about
// 1e153, alpha or beta near 1e308).
func (s Synthetic) Dataset(learners, rounds, tau int, seed uint64) (*Dataset, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	ds, err := NewDataset(s.String(), learners, rounds, tau, s.dim())
	if err != nil {
		return nil, err
	}
	for i := 0; i < learners; i++ {
		st := s.Stream(i, seed)
		for r := 0; r < rounds; r++ {
			for t := 0; t < tau; t++ {
				a, _ := ds.Sample(i, r, t)
				ds.Labels[ds.Index(i, r, t)] = st.Next(a)
			}
		}
		if st.overflow {
			// Features or a margin beyond float64: the labels (sign of a
			// NaN margin) and the features mean nothing.
			return nil, fmt.Errorf("dataset: %v: learner %d drew features whose squared norm, or a label margin w . a + b, is not a finite float64; want alpha and beta small enough for the data to fit (beta scales the features, alpha the margins)", s, i)
		}
	}
	return ds, nil
}
