package fedopt

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/dpmf/dpmf/factorize"
	"gonum.org/v1/gonum/mat"
)

type denseNoise struct {
	cinv  *mat.Dense
	z     [][]float64
	r, d  int
	std   float64
	rng   *rand.Rand
}

func newDenseNoise(f *factorize.Factorization, d int, std float64, seed uint64) *denseNoise {
	R, _ := f.C.Dims()
	var ci mat.Dense
	if err := ci.Inverse(f.C); err != nil {
		panic(err)
	}
	return &denseNoise{cinv: &ci, d: d, std: std, rng: rand.New(rand.NewPCG(seed, 7)), z: make([][]float64, 0, R)}
}
func (m *denseNoise) Next(dst []float64) error {
	z := make([]float64, m.d)
	for k := range z {
		z[k] = m.std * m.rng.NormFloat64()
	}
	m.z = append(m.z, z)
	clear(dst)
	for j := 0; j <= m.r; j++ {
		c := m.cinv.At(m.r, j)
		for k := range dst {
			dst[k] += c * m.z[j][k]
		}
	}
	m.r++
	return nil
}
func (m *denseNoise) Round() int        { return m.r }
func (m *denseNoise) Rounds() int       { r, _ := m.cinv.Dims(); return r }
func (m *denseNoise) Dim() int          { return m.d }
func (m *denseNoise) Std() float64      { return m.std }
func (m *denseNoise) StateBytes() int64 { return 0 }

func deltaOf(eps, sigma float64) float64 {
	mu := 1 / sigma
	return 0.5*math.Erfc((eps/mu-mu/2)/math.Sqrt2) - math.Exp(eps)*0.5*math.Erfc((eps/mu+mu/2)/math.Sqrt2)
}
func sigmaExact(eps, delta float64) float64 {
	lo, hi := 1e-3, 1e3
	for i := 0; i < 200; i++ {
		m := math.Sqrt(lo * hi)
		if deltaOf(eps, m) > delta {
			lo = m
		} else {
			hi = m
		}
	}
	return hi
}

func TestZZExplore(t *testing.T) {
	if os.Getenv("ZZ") == "" {
		t.Skip()
	}
	fmt.Println(sigmaExact(5, 1e-3), sigmaExact(1, 1e-5))
	ctx := context.Background()
	ds, _ := Synthetic{Alpha: 0.1, Beta: 0.1}.Dataset(10, 800, 10, 1)
	p, err := NewProblem(ctx, ds, Logistic{L2: 1e-4}, ProblemOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, _ := factorize.Prefix(800)
	f, _ := factorize.SqrtNormalized(w)
	gamma := f.Metrics.Sensitivity
	fmt.Println("gamma", gamma, "frobB", f.Metrics.FrobBSq)
	id := factorize.Identity(w)
	n := 10.0
	_, _ = id, n
	for _, ev := range []int{800, 10, 1} {
		t0 := time.Now()
		Run(ctx, p, Config{Algorithm: Correlated, Eta: 0.003, EtaG: 1, Clip: 5, EvalEvery: ev}, newDenseNoise(f, 60, 0.7, 1))
		fmt.Println("eval every", ev, time.Since(t0))
	}
	t0 := time.Now()
	nz := newDenseNoise(f, 60, 0.7, 1)
	buf := make([]float64, 60)
	for range 800 {
		nz.Next(buf)
	}
	fmt.Println("noise only", time.Since(t0))
}
