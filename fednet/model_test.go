package fednet

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/credentials/insecure"

	"github.com/dpmf/dpmf/dataset"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/mechanism"
	dpmodel "github.com/dpmf/dpmf/model"
	flv1 "github.com/dpmf/dpmf/proto/dpmf/fl/v1"
)

// affineSquares is a model fednet does not know: the squared error of an
// affine predictor, f(x; a, y) = (<w, a> + b - y)^2 / 2 with x = (w, b),
// so it has d + 1 parameters for d features (unlike the logistic loss).
type affineSquares struct{}

func (affineSquares) NumParams(d int) int { return d + 1 }

func (affineSquares) residual(x, a []float64, y float64) float64 {
	s := x[len(a)] - y
	for j, v := range a {
		s += x[j] * v
	}
	return s
}

func (m affineSquares) Loss(x, a []float64, y float64) float64 {
	e := m.residual(x, a, y)
	return e * e / 2
}

func (m affineSquares) Grad(dst, x, a []float64, y float64) {
	e := m.residual(x, a, y)
	for j, v := range a {
		dst[j] = e * v
	}
	dst[len(a)] = e
}

// A learner given a model by the caller (LearnerOptions.Model) runs it over
// gRPC: a server naming the model "affine-squares" with d + 1 parameters
// and its learners release the same models as fedopt.Simulate with the
// same model, data and noise, bit for bit.
func TestCallerModelMatchesSimulation(t *testing.T) {
	r := newRun(t, 4, 8, 3, 3)
	var model dpmodel.Model = affineSquares{}
	dim := model.NumParams(r.d)
	shape := fedopt.Shape{Learners: r.n, Rounds: r.R, Tau: r.tau, Dim: dim}
	noise := func(start int, key [32]byte) (mechanism.Mechanism, error) {
		return mechanism.New(r.f, dim, r.std, mechanism.WithKey(key), mechanism.WithStartRound(start))
	}

	// The simulation.
	m, err := noise(0, *r.key())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := fedopt.NewServer(r.cfg, shape, m)
	if err != nil {
		t.Fatal(err)
	}
	ls := make([]*fedopt.Learner, r.n)
	for i := range ls {
		if ls[i], err = fedopt.NewLearner(model, r.data.Stream(i), r.cfg, r.tau, dim); err != nil {
			t.Fatal(err)
		}
	}
	var want [][]float64
	if err := fedopt.Simulate(context.Background(), srv, ls, fedopt.SimOptions{Observe: func(_ int, x []float64) error {
		want = append(want, slices.Clone(x))
		return nil
	}}); err != nil {
		t.Fatal(err)
	}
	if len(want) != r.R+1 {
		t.Fatalf("the simulation observed %d models, want %d", len(want), r.R+1)
	}

	// The networked run.
	dir := t.TempDir()
	opt := r.options(dir, nil)
	opt.Shape, opt.Noise = shape, noise
	opt.Model = Model{Name: "affine-squares", Features: r.d}
	s := serve(t, opt, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	errs := make([]error, r.n)
	var wg sync.WaitGroup
	for i := range r.n {
		wg.Go(func() {
			_, errs[i] = RunLearner(ctx, LearnerOptions{
				Addr: s.addr, ID: i, Creds: insecure.NewCredentials(), Model: model,
				Data: func(rc *flv1.RunConfig) (fedopt.Stream, error) { return r.data.Stream(i), nil },
			})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("learner %d: %v", i, err)
		}
	}
	if err := <-s.errc; err != nil {
		t.Fatal(err)
	}
	requireSameModels(t, readRounds(t, dir, r.R), want)
}

// The learner's choice of model: without LearnerOptions.Model it knows only
// the logistic loss; a caller-given model must have the server's parameter
// count; a server needs a model name.
func TestLearnerModelChecks(t *testing.T) {
	rc := &flv1.RunConfig{Algorithm: "correlated", Eta: 0.05, Clip: 1, Model: "affine-squares",
		Learners: 2, Rounds: 3, Tau: 1, Features: 3, Params: 4}
	data := func(*flv1.RunConfig) (fedopt.Stream, error) { return nil, nil }
	stream := func(*flv1.RunConfig) (fedopt.Stream, error) {
		ds, err := dataset.Synthetic{Dim: 3}.Dataset(2, 3, 1, 1)
		return ds.Stream(0), err
	}
	for _, c := range []struct {
		name  string
		rc    *flv1.RunConfig
		opt   LearnerOptions
		error string
	}{
		{"unknown name, no model", rc, LearnerOptions{Data: data}, `model is "affine-squares"`},
		{"caller model of another size", rc, LearnerOptions{Data: data, Model: dpmodel.Logistic{}}, "4 parameters for 3 features, want 3"},
		{"caller model of the server's size", rc, LearnerOptions{Data: stream, Model: affineSquares{}}, ""},
	} {
		l, _, err := newLearner(c.rc, c.opt)
		switch {
		case c.error == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.error == "" && l.Dim() != 4:
			t.Errorf("%s: learner of dimension %d, want 4", c.name, l.Dim())
		case c.error != "" && (err == nil || !strings.Contains(err.Error(), c.error)):
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.error)
		}
	}
	r := newRun(t, 2, 3, 1, 3)
	opt := r.options(t.TempDir(), nil)
	opt.Model.Name = ""
	if _, err := NewServer(opt); err == nil || !strings.Contains(err.Error(), "no name") {
		t.Errorf("server with an unnamed model: %v, want an error", err)
	}
}
