package experiment

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dpmf/dpmf/dataset"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/mechanism"
	"github.com/dpmf/dpmf/model"
)

// fixedNoise is a mechanism double that returns given vectors.
type fixedNoise struct {
	rows [][]float64
	r    int
}

var _ mechanism.Mechanism = (*fixedNoise)(nil)

func (m *fixedNoise) Next(dst []float64) error {
	if m.r == len(m.rows) {
		return mechanism.ErrExhausted
	}
	copy(dst, m.rows[m.r])
	m.r++
	return nil
}
func (m *fixedNoise) Round() int        { return m.r }
func (m *fixedNoise) Rounds() int       { return len(m.rows) }
func (m *fixedNoise) Dim() int          { return len(m.rows[0]) }
func (m *fixedNoise) Std() float64      { return math.NaN() }
func (m *fixedNoise) StateBytes() int64 { return 0 }

// gaussNoise is a mechanism double with independent N(0, std^2) entries
// (the identity factorization).
func gaussNoise(rounds, dim int, std float64, seed uint64) *fixedNoise {
	rng := rand.New(rand.NewPCG(seed, 1))
	rows := make([][]float64, rounds)
	for r := range rows {
		rows[r] = make([]float64, dim)
		for k := range rows[r] {
			rows[r][k] = std * rng.NormFloat64()
		}
	}
	return &fixedNoise{rows: rows}
}

// zeroNoise returns a mechanism double whose vectors are all zero.
func zeroNoise(rounds, dim int) *fixedNoise { return gaussNoise(rounds, dim, 0, 0) }

// newTestDataset builds a data set from explicit samples given per
// (learner, round, step) in that nesting order.
func newTestDataset(t *testing.T, n, R, tau int, feats [][]float64, labels []float64) *dataset.Dataset {
	t.Helper()
	ds, err := dataset.NewDataset("test", n, R, tau, len(feats[0]))
	if err != nil {
		t.Fatal(err)
	}
	k := 0
	for i := 0; i < n; i++ {
		for r := 0; r < R; r++ {
			for s := 0; s < tau; s++ {
				a, _ := ds.Sample(i, r, s)
				copy(a, feats[k])
				ds.Labels[ds.Index(i, r, s)] = labels[k]
				k++
			}
		}
	}
	return ds
}

// logisticGrad is the gradient of log(1 + exp(-y x.a)) + l2/2 ||x||^2
// written independently of the package: -y a / (1 + exp(y x.a)) + l2 x.
func logisticGrad(x, a []float64, y, l2 float64) []float64 {
	m := 0.0
	for k := range x {
		m += x[k] * a[k]
	}
	c := -y / (1 + math.Exp(y*m))
	g := make([]float64, len(x))
	for k := range g {
		g[k] = c*a[k] + l2*x[k]
	}
	return g
}

// clipTo is an independent clipping: g * min(1, b / ||g||).
func clipTo(g []float64, b float64) []float64 {
	n := math.Sqrt(dot(g, g))
	out := make([]float64, len(g))
	s := math.Min(1, b/n)
	for k := range g {
		out[k] = g[k] * s
	}
	return out
}

func dot(a, b []float64) float64 {
	s := 0.0
	for k := range a {
		s += a[k] * b[k]
	}
	return s
}

func dist(a, b []float64) float64 {
	s := 0.0
	for k := range a {
		s += (a[k] - b[k]) * (a[k] - b[k])
	}
	return math.Sqrt(s)
}

func mustProblem(t *testing.T, ds *dataset.Dataset, m model.Model) *Problem {
	t.Helper()
	p, err := NewProblem(t.Context(), ds, m, ProblemOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mustRun(t *testing.T, p *Problem, cfg fedopt.Config, noise mechanism.Mechanism) *Trace {
	t.Helper()
	tr, err := Run(t.Context(), p, cfg, noise)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}
