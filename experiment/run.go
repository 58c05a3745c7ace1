package experiment

import (
	"context"
	"crypto/rand"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/floats"

	"github.com/dpmf/dpmf/accountant"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/mechanism"
	"github.com/dpmf/dpmf/model"
	"github.com/dpmf/dpmf/plan"
	"github.com/dpmf/dpmf/secagg"
)

// Trace is the record of one run. The metrics are evaluated at the rounds
// in Rounds: 0, E, 2E, ... and R (E = Config.EvalEvery). At round r the
// released model is x^r, the one the learners start round r from and the
// server's output after r rounds.
type Trace struct {
	// Rounds are the evaluated rounds, increasing, from 0 to R.
	Rounds []int
	// LossError[k] is F(x^r) - F(x*) for r = Rounds[k], F the average loss
	// over all samples.
	LossError []float64
	// Accuracy[k] is the fraction of all samples x^r classifies correctly
	// (NaN for models that are not a [model.Classifier]).
	Accuracy []float64
	// Regret[k] is the dynamic regret of the first r rounds (paper,
	// Section 2): the sum over s < r of tau (f^s(x^s) - (f^s)*), f^s the
	// average loss over round s's n tau samples. NaN without per-round
	// minima.
	Regret []float64
	// StaticRegret[k] is the sum over s < r of tau (f^s(x^s) - f^s(x*)).
	StaticRegret []float64
	// Privacy[k] is the accountant's record of the release x^r,
	// r = Rounds[k]: the same guarantee, for the whole release, every
	// round. Nil unless Config.Privacy is set.
	Privacy []accountant.Record
	// X is the final model x^R.
	X []float64
}

// Run runs the online federated optimiser on p's data stream: R rounds in
// which each of the n learners takes tau steps on its next tau clients, and
// the server updates the model and releases it.
//
// Algorithm 1 of Zhang, Zhu and Johansson (Correlated and NonPrivate): for
// every learner i, z^{r,0} = x^r and
//
//	z^{r,t+1} = z^{r,t} - eta clip(grad f_i^{r,t}(z^{r,t})),  t < tau,
//
// and the server sets x^{r+1} = x^r - eta~ (g^r + w^r) with eta~ = eta eta_g
// tau, g^r = (x^r - mean_i z_i^{r,tau}) / (eta tau) computed as the mean of
// the n tau clipped gradients (the same quantity without cancellation), and
// w^r round r's noise vector (zero for NonPrivate). With noise from a
// factorization A = B C, w^r is row r of C^{-1} Z, which is the paper's
// (b^{r+1} - b^r) xi.
//
// The Independent baseline (the paper's equation (paper-batch)) sets
// x^{r+1} = x^r - eta_ind (h^r + w^r), h^r = (1/n) sum_i sum_t
// clip(grad f_i^{r,t}(x^r)), with w^r independent Gaussian noise (a mechanism
// whose factorization is the identity). BaselineCorrelated takes the same
// step with w^r round r's vector of a correlated mechanism, row r of
// C^{-1} Z.
//
// noise must be nil for NonPrivate, and otherwise a fresh mechanism of
// p's rounds and model dimension. Run draws exactly R vectors from it.
func Run(ctx context.Context, p *Problem, cfg fedopt.Config, noise mechanism.Mechanism) (*Trace, error) {
	if err := checkProblem(p); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	data := p.Data
	shape := fedopt.Shape{Learners: data.Learners, Rounds: data.Rounds, Tau: data.Tau, Dim: p.Model.NumParams(data.Dim)}
	srv, err := fedopt.NewServer(cfg, shape, noise)
	if err != nil {
		return nil, err
	}
	learners := make([]*fedopt.Learner, shape.Learners)
	for i := range learners {
		if learners[i], err = fedopt.NewLearner(p.Model, data.Stream(i), cfg, shape.Tau, shape.Dim); err != nil {
			return nil, err
		}
	}
	// The server's own copy of the record it checked: the trace states it
	// whatever the caller does with cfg.Privacy (TestRunTraceKeepsCheckedRecord).
	ev := NewEvaluator(p, srv.Config())
	err = fedopt.Simulate(ctx, srv, learners, fedopt.SimOptions{
		Parallel:  cfg.ParallelLearners,
		Observe:   ev.Observe,
		OnRound:   cfg.OnRound,
		SecureSum: secureSum(cfg, shape),
	})
	if err != nil {
		return nil, err
	}
	return ev.Trace(), nil
}

// secureSum returns, for a run with secure aggregation (cfg.Quantizer)
// of 2..secagg.MaxLearners learners, the in-process run of the protocol
// (secagg.Run, fresh keys from crypto/rand in every round, nobody drops,
// threshold plan.DefaultThreshold) that sums the quantized updates: the
// roles exercise the protocol, and its sum is exact, so the models are
// those of the server's own ring sum. nil otherwise.
func secureSum(cfg fedopt.Config, shape fedopt.Shape) func(int, [][]uint64) ([]uint64, int, error) {
	n := shape.Learners
	if cfg.Quantizer == nil || n < 2 || n > secagg.MaxLearners {
		return nil
	}
	return func(r int, q [][]uint64) ([]uint64, int, error) {
		c := secagg.Context{Round: r, N: n, T: plan.DefaultThreshold(n), Dim: shape.Dim}
		sum, u3, err := secagg.Run(c, q, nil, rand.Reader, nil)
		return sum, len(u3), err
	}
}

// Evaluator is an observer of released models that computes the metrics of
// a [Trace]: it needs the whole data set (a [Problem]), which neither the
// server nor any learner has, so it plays the role of an analyst with
// access to all data. Observe must be called with x^0, x^1, ..., x^R in
// order (or from any start round on, for a partial trace).
type Evaluator struct {
	p        *Problem
	every    int
	privacy  *fedopt.Privacy
	tr       Trace
	reg      float64
	sreg     float64
	iterates [][]float64
	next     int
}

// NewEvaluator returns an evaluator of p's metrics at the rounds 0, E, 2E,
// ..., R (E = cfg.EvalEvery) that records cfg.Privacy, as it is when
// NewEvaluator is called (it keeps a copy), at those rounds.
func NewEvaluator(p *Problem, cfg fedopt.Config) *Evaluator {
	e := &Evaluator{p: p, every: max(cfg.EvalEvery, 1)}
	if cfg.Privacy != nil {
		pr := *cfg.Privacy
		e.privacy = &pr
	}
	return e
}

// Observe takes the released model x^r. Rounds must come in order, within
// [0, R], and x must have the model's dimension; otherwise it returns an
// error.
func (e *Evaluator) Observe(r int, x []float64) error {
	R := e.p.Data.Rounds
	switch d := e.p.Model.NumParams(e.p.Data.Dim); {
	case r < 0 || r > R:
		return fmt.Errorf("experiment: evaluator observed round %d, want a round in [0, %d]", r, R)
	case len(x) != d:
		return fmt.Errorf("experiment: evaluator observed a model of dimension %d in round %d, want %d", len(x), r, d)
	case r != e.next && e.next != 0:
		return fmt.Errorf("experiment: evaluator observed round %d, want %d", r, e.next)
	}
	e.next = r + 1
	if r%e.every == 0 || r == R {
		e.tr.Rounds = append(e.tr.Rounds, r)
		e.iterates = append(e.iterates, slices.Clone(x))
		if e.p.dynamicAvailable() {
			e.tr.Regret = append(e.tr.Regret, e.reg)
		} else {
			e.tr.Regret = append(e.tr.Regret, nan)
		}
		e.tr.StaticRegret = append(e.tr.StaticRegret, e.sreg)
		if e.privacy != nil {
			e.tr.Privacy = append(e.tr.Privacy, e.privacy.RecordAt(r))
		}
	}
	if r < R {
		fr := model.AverageLoss(e.p.Model, x, e.p.Data.Round(r))
		if e.p.dynamicAvailable() {
			e.reg += float64(e.p.Data.Tau) * (fr - e.p.RoundStar[r])
		}
		e.sreg += float64(e.p.Data.Tau) * (fr - e.p.RoundAtXStar[r])
	} else {
		e.tr.X = slices.Clone(x)
	}
	return nil
}

// Trace evaluates the loss error and accuracy at the recorded rounds and
// returns the trace.
func (e *Evaluator) Trace() *Trace {
	tr := e.tr
	tr.LossError, tr.Accuracy = e.p.Evaluate(e.iterates)
	return &tr
}

// Evaluate returns, for every parameter vector xs[k], the loss error
// F(xs[k]) - F(x*) and the accuracy over all samples (NaN for models that
// are not a [model.Classifier]).
func (p *Problem) Evaluate(xs [][]float64) (lossErr, acc []float64) {
	lossErr = make([]float64, len(xs))
	acc = make([]float64, len(xs))
	all := p.Data.All()
	if be, ok := p.Model.(model.BatchEvaluator); ok {
		be.EvaluateBatch(lossErr, acc, xs, all)
	} else {
		for k, x := range xs {
			lossErr[k] = model.AverageLoss(p.Model, x, all)
			acc[k], _ = model.Accuracy(p.Model, x, all)
		}
	}
	floats.AddConst(-p.FStar, lossErr) // x - F* is x + (-F*), bit for bit
	return lossErr, acc
}

// nan is the value of metrics that are not available.
var nan = math.NaN()
