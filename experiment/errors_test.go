package experiment

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/dpmf/dpmf/dataset"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/model"
	"github.com/dpmf/dpmf/plan"
)

// requireParam checks that err is a *ParamError about param.
func requireParam(t *testing.T, err error, param string) {
	t.Helper()
	var pe *ParamError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T), want a *ParamError about %q", err, err, param)
	}
	if pe.Param != param {
		t.Fatalf("error %q is about %q, want %q", err, pe.Param, param)
	}
}

// Missing (nil or zero-value) arguments are *ParamErrors, never panics, as
// the package doc promises.
func TestMissingArgumentsAreParamErrors(t *testing.T) {
	ctx := context.Background()
	cfg := fedopt.Config{Algorithm: fedopt.NonPrivate, Eta: 0.1, EtaG: 1}
	for _, p := range []*Problem{nil, {}} {
		_, err := Run(ctx, p, cfg, nil)
		requireParam(t, err, "problem")
		_, err = Repeat(ctx, p, cfg, nil, RepeatOptions{Reps: 1})
		requireParam(t, err, "problem")
		_, err = (&Experiment{Problem: p, Config: cfg}).Run(ctx)
		requireParam(t, err, "problem")
	}
	var e *Experiment
	_, err := e.Run(ctx)
	requireParam(t, err, "experiment")
	_, err = NewProblem(ctx, nil, model.Logistic{}, ProblemOptions{})
	requireParam(t, err, "data")
	d, err := dataset.Synthetic{}.Dataset(2, 2, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewProblem(ctx, d, nil, ProblemOptions{})
	requireParam(t, err, "model")
	var ds *dataset.Dataset
	requireParam(t, ds.Validate(), "data")
	_, err = dataset.ReadCSV(nil, "x")
	requireParam(t, err, "reader")
	var tb *dataset.Table
	_, err = tb.Deal(1, 1, 1, dataset.Split{}, 1)
	requireParam(t, err, "table")
	err = model.Minimize(ctx, nil, make([]float64, 1), make([]float64, 1), d.All(), 1e-6)
	requireParam(t, err, "model")
	err = model.LBFGS(ctx, make([]float64, 1), make([]float64, 1), nil, nil, 1e-6)
	requireParam(t, err, "f and grad")
	lm, ls, rm, rs := (&Summary{}).Final()
	for _, v := range []float64{lm, ls, rm, rs} {
		if !math.IsNaN(v) {
			t.Errorf("Final of the zero Summary = %v, want NaN", v)
		}
	}
	// Config fields are named as ParamError.Param, so that commands map
	// them to flags.
	for param, c := range map[string]fedopt.Config{
		"eta":        {Algorithm: fedopt.NonPrivate, Eta: -1, EtaG: 1},
		"eta_g":      {Algorithm: fedopt.NonPrivate, Eta: 1, EtaG: math.NaN()},
		"eta_ind":    {Algorithm: fedopt.Independent, Eta: 1, EtaG: 1, EtaInd: -2, Clip: 1},
		"clip":       {Algorithm: fedopt.Correlated, Eta: 1, EtaG: 1},
		"eval-every": {Algorithm: fedopt.NonPrivate, Eta: 1, EtaG: 1, EvalEvery: -1},
		"algorithm":  {Algorithm: fedopt.Algorithm(9), Eta: 1, EtaG: 1},
		"x0[1]":      {Algorithm: fedopt.NonPrivate, Eta: 1, EtaG: 1, X0: []float64{0, math.Inf(1)}},
	} {
		requireParam(t, c.Validate(), param)
	}
}

// The parsers name what they parse.
func TestParseErrorsAreParamErrors(t *testing.T) {
	_, err := fedopt.ParseAlgorithm("sgd")
	requireParam(t, err, "algorithm")
	_, err = plan.ParseCalibration("rdp")
	requireParam(t, err, "calibration")
	_, err = dataset.ParseSplit("feature:-1")
	requireParam(t, err, "split")
	_, err = dataset.ParseSplit("random")
	requireParam(t, err, "split")
}
