package experiment

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/dpmf/dpmf/dataset"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/model"
	"github.com/dpmf/dpmf/secagg"
)

// A run with secure aggregation's quantizer sums the updates through the
// protocol run in process (secagg.Run, masks and all): its models equal,
// bit for bit, those of the server's own ring sum of the same quantized
// updates (fedopt.Simulate without the hook), and each round's sum went
// through the protocol.
func TestRunSecureAggregationInProcess(t *testing.T) {
	const n, R, tau, d = 3, 4, 2, 5
	ds, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: d}.Dataset(n, R, tau, 9)
	if err != nil {
		t.Fatal(err)
	}
	p := mustProblem(t, ds, model.Logistic{})
	q, err := secagg.NewQuantizer(n, tau, 1)
	if err != nil {
		t.Fatal(err)
	}
	cfg := fedopt.Config{Algorithm: fedopt.NonPrivate, Eta: 0.1, EtaG: 1, Clip: 1, Quantizer: &q}
	shape := fedopt.Shape{Learners: n, Rounds: R, Tau: tau, Dim: d}
	calls := 0
	sum := secureSum(cfg, shape)
	if sum == nil {
		t.Fatal("no in-process protocol for a secure run of 3 learners")
	}
	counted := func(r int, qs [][]uint64) ([]uint64, int, error) {
		calls++
		return sum(r, qs)
	}
	srv, err := fedopt.NewServer(cfg, shape, nil)
	if err != nil {
		t.Fatal(err)
	}
	ls := make([]*fedopt.Learner, n)
	for i := range ls {
		if ls[i], err = fedopt.NewLearner(model.Logistic{}, ds.Stream(i), cfg, tau, d); err != nil {
			t.Fatal(err)
		}
	}
	if err := fedopt.Simulate(context.Background(), srv, ls, fedopt.SimOptions{SecureSum: counted}); err != nil {
		t.Fatal(err)
	}
	if calls != R {
		t.Fatalf("the protocol ran %d times, want once per round (%d)", calls, R)
	}
	tr := mustRun(t, p, cfg, nil) // experiment.Run: the protocol again
	plain := fedopt.Config{Algorithm: fedopt.NonPrivate, Eta: 0.1, EtaG: 1, Clip: 1, Quantizer: &q}
	srv2, err := fedopt.NewServer(plain, shape, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range ls {
		if ls[i], err = fedopt.NewLearner(model.Logistic{}, ds.Stream(i), plain, tau, d); err != nil {
			t.Fatal(err)
		}
	}
	if err := fedopt.Simulate(context.Background(), srv2, ls, fedopt.SimOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, x := range [][]float64{srv.Model(), tr.X} {
		if !slices.EqualFunc(x, srv2.Model(), func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }) {
			t.Fatalf("x^R = %v through the protocol, %v from the server's ring sum", x, srv2.Model())
		}
	}
}
