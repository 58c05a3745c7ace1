package experiment

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/dpmf/dpmf/dataset"
	dpmodel "github.com/dpmf/dpmf/model"
)

// Default tolerances on the gradient norm of the reference minimisers: a
// model's own [model.Minimizer] gets them as they are; [model.LBFGS], for models
// without one, scales them by max(1, the gradient norm at the start) and
// may stop at the gradient's noise floor (see LBFGS).
const (
	// DefaultTol is the gradient norm to which [NewProblem] minimises the
	// average loss over all data (x*).
	DefaultTol = 1e-10
	// DefaultRoundTol is the gradient norm to which it minimises each
	// round's average loss ((f^r)*).
	DefaultRoundTol = 1e-9
)

// Problem is a data set and a model with the reference values the metrics
// need: the minimiser x* of the average loss F over all data, and for every
// round r the average loss f^r over the round's n tau samples at its own
// minimiser ((f^r)*, for the dynamic regret) and at x* (for the static
// regret). A Problem is read-only after [NewProblem] and may be shared by
// concurrent runs.
type Problem struct {
	// Data is the stream of samples.
	Data *dataset.Dataset
	// Model is the loss.
	Model dpmodel.Model
	// XStar is x*, the minimiser of F.
	XStar []float64
	// FStar is F(x*).
	FStar float64
	// RoundStar[r] is (f^r)* = min_x f^r(x); nil if not computed.
	RoundStar []float64
	// RoundAtXStar[r] is f^r(x*).
	RoundAtXStar []float64
}

// ProblemOptions configure [NewProblem]. The zero value is usable.
type ProblemOptions struct {
	// Tol is the gradient norm for x*; 0 means DefaultTol.
	Tol float64
	// RoundTol is the gradient norm for each round's minimiser; 0 means
	// DefaultRoundTol.
	RoundTol float64
	// NoDynamic skips the per-round minimisers: the dynamic regret is then
	// NaN. Use it for models whose per-round minimum is not attained.
	NoDynamic bool
	// Workers bounds the goroutines that compute the per-round minimisers;
	// 0 means GOMAXPROCS. The results do not depend on it.
	Workers int
}

// NewProblem validates the data, computes x* with [model.Minimize] and, unless
// opt.NoDynamic, every round's minimum. Each round's minimiser is started
// from x* (not from the previous round's), so the values do not depend on
// the number of workers.
func NewProblem(ctx context.Context, data *dataset.Dataset, model dpmodel.Model, opt ProblemOptions) (*Problem, error) {
	if err := data.Validate(); err != nil {
		return nil, err
	}
	if model == nil {
		return nil, &ParamError{Param: "model", Want: "a Model such as Logistic"}
	}
	dim := model.NumParams(data.Dim)
	if dim < 1 {
		return nil, fmt.Errorf("experiment: model has %d parameters for dimension %d", dim, data.Dim)
	}
	opt.Tol, opt.RoundTol = cmp.Or(opt.Tol, DefaultTol), cmp.Or(opt.RoundTol, DefaultRoundTol)
	if !(opt.Tol > 0) || !(opt.RoundTol > 0) {
		return nil, fmt.Errorf("experiment: tolerances %v and %v, want > 0", opt.Tol, opt.RoundTol)
	}
	p := &Problem{Data: data, Model: model, XStar: make([]float64, dim)}
	if err := dpmodel.Minimize(ctx, model, p.XStar, make([]float64, dim), data.All(), opt.Tol); err != nil {
		return nil, fmt.Errorf("experiment: minimising the loss over all of %s: %w", data.Name, err)
	}
	p.FStar = dpmodel.AverageLoss(model, p.XStar, data.All())
	R := data.Rounds
	p.RoundAtXStar = make([]float64, R)
	for r := range R {
		p.RoundAtXStar[r] = dpmodel.AverageLoss(model, p.XStar, data.Round(r))
	}
	if opt.NoDynamic {
		return p, nil
	}
	p.RoundStar = make([]float64, R)
	err := forEach(ctx, R, opt.Workers, func(ctx context.Context, r int) error {
		x, s := make([]float64, dim), data.Round(r)
		if err := dpmodel.Minimize(ctx, model, x, p.XStar, s, opt.RoundTol); err != nil {
			return fmt.Errorf("experiment: minimising round %d's loss: %w%s", r, err, noDynamicHint(err))
		}
		p.RoundStar[r] = dpmodel.AverageLoss(model, x, s)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// noDynamicHint is the advice added to an L-BFGS failure on a round's loss:
// the per-round minima are needed only for the dynamic regret.
func noDynamicHint(err error) string {
	var le *dpmodel.LBFGSError
	if !errors.As(err, &le) {
		return ""
	}
	return "; or set ProblemOptions.NoDynamic to skip the per-round minima (the dynamic regret is then NaN)"
}

// dynamicAvailable reports whether the per-round minima were computed.
func (p *Problem) dynamicAvailable() bool { return p.RoundStar != nil }
