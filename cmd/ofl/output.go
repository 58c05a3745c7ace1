package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/dpmf/dpmf/experiment"
	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/internal/cli"
	"github.com/dpmf/dpmf/plan"
)

// roundsHeader is the header of rounds.csv.
const roundsHeader = "round,loss_error_mean,loss_error_std,regret_mean,regret_std,accuracy_mean,static_regret_mean,static_regret_std\n"

// writeRounds writes the file path (DIR/rounds.csv) atomically: one row per
// evaluated round. Floats are written in the shortest form that reads back
// exactly; a metric that is not available is NaN. Once ctx is done the
// write stops and the file is left as it was. Between writing the
// temporary file and renaming it, cli.PauseForTest is called with the
// point "commit", for the signal tests; stderr receives its line.
func writeRounds(ctx context.Context, path string, s *experiment.Summary, stderr io.Writer) error {
	return cli.WriteOutputs(ctx, stderr, "ofl: ", cli.Output{File: cli.File{Flag: "-out", Path: path}, Perm: 0o644, Write: func(w io.Writer) error {
		if _, err := io.WriteString(w, roundsHeader); err != nil {
			return err
		}
		buf := make([]byte, 0, 256)
		for k, r := range s.Rounds {
			buf = strconv.AppendInt(buf[:0], int64(r), 10)
			for _, v := range []float64{s.LossErrorMean[k], s.LossErrorStd[k], s.RegretMean[k], s.RegretStd[k], s.AccuracyMean[k], s.StaticRegretMean[k], s.StaticRegretStd[k]} {
				buf = append(buf, ',')
				buf = strconv.AppendFloat(buf, v, 'g', -1, 64)
			}
			buf = append(buf, '\n')
			if _, err := w.Write(buf); err != nil {
				return err
			}
		}
		return nil
	}})
}

// checkFinite returns an error naming what diverged if a summarised
// metric or a repetition's final model is not finite (an optimiser whose
// step size is too large overflows). The dynamic regret is checked only
// when it is computed (dynamic).
func checkFinite(p *experiment.Problem, s *experiment.Summary, dynamic bool) error {
	if math.IsNaN(p.FStar) || math.IsInf(p.FStar, 0) {
		return fmt.Errorf("the minimum of the loss over all data is %v: the data or -l2 make the loss overflow", p.FStar)
	}
	for rep, tr := range s.Traces {
		for i, v := range tr.X {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("the optimiser diverged: repetition %d's final model has entry %d = %v; use a smaller -eta or -eta-g", rep, i, v)
			}
		}
	}
	type metric struct {
		name string
		v    []float64
	}
	series := []metric{
		{"mean loss error", s.LossErrorMean}, {"loss error spread", s.LossErrorStd},
		{"mean static regret", s.StaticRegretMean}, {"static regret spread", s.StaticRegretStd},
		{"mean accuracy", s.AccuracyMean},
	}
	if dynamic {
		series = append(series, metric{"mean regret", s.RegretMean}, metric{"regret spread", s.RegretStd})
	}
	for _, x := range series {
		for k, v := range x.v {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("the optimiser diverged: the %s is %v at round %d; use a smaller -eta or -eta-g", x.name, v, s.Rounds[k])
			}
		}
	}
	return nil
}

// report is the -json object.
type report struct {
	Algo        string   `json:"algo"`
	Strategy    string   `json:"strategy"`
	Data        string   `json:"data"`
	Eps         *float64 `json:"eps"`
	Delta       *float64 `json:"delta"`
	Calibration string   `json:"calibration,omitempty"`
	Method      string   `json:"method,omitempty"`
	// Relation is the neighbouring relation and Rule the plan record's
	// words for the assumptions the sensitivity rests on (client sample,
	// participation, clip, learners, algorithm and tau).
	Relation string  `json:"relation,omitempty"`
	Rule     string  `json:"rule,omitempty"`
	Gamma    float64 `json:"gamma,omitempty"`
	// Participation and Epochs: how often a client takes part; the
	// sensitivity is the release's, under that participation.
	Participation string  `json:"participation"`
	Epochs        int     `json:"epochs"`
	Sensitivity   float64 `json:"sensitivity"`
	NoiseStd      float64 `json:"noise_std"`
	// FactorizationLoss is sens^2 ||B||_F^2 of the noise's factorization,
	// sens its sensitivity under the participation.
	FactorizationLoss float64 `json:"factorization_loss,omitempty"`
	Learners          int     `json:"learners"`
	Tau               int     `json:"tau"`
	Rounds            int     `json:"rounds"`
	Dim               int     `json:"dim"`
	Reps              int     `json:"reps"`
	Seed              uint64  `json:"seed"`
	// SeedDrawn is true when no -seed was given and Seed was drawn from
	// crypto/rand: -seed Seed repeats the run.
	SeedDrawn  bool    `json:"seed_drawn"`
	Eta        float64 `json:"eta"`
	EtaG       float64 `json:"eta_g"`
	ServerStep float64 `json:"server_step"`
	Clip       float64 `json:"clip"`
	L2         float64 `json:"l2"`
	EvalEvery  int     `json:"eval_every"`
	FStar      float64 `json:"f_star"`
	// SecureAggregation is the plan's secure aggregation (-secure-aggregation)
	// and EffectiveClip the clip B_g' its calibration used.
	SecureAggregation *plan.SecureAggregation `json:"secure_aggregation,omitempty"`
	EffectiveClip     float64                 `json:"effective_clip,omitempty"`

	FinalLossErrorMean    float64  `json:"final_loss_error_mean"`
	FinalLossErrorStd     float64  `json:"final_loss_error_std"`
	FinalRegretMean       *float64 `json:"final_regret_mean"`
	FinalRegretStd        *float64 `json:"final_regret_std"`
	FinalStaticRegretMean float64  `json:"final_static_regret_mean"`
	FinalAccuracyMean     float64  `json:"final_accuracy_mean"`
	Seconds               float64  `json:"seconds"`
}

// finite returns &v, or nil (JSON null) for NaN.
func finite(v float64) *float64 {
	if math.IsNaN(v) {
		return nil
	}
	return &v
}

func newReport(c config, p *experiment.Problem, res *experiment.Result, seconds float64) *report {
	cfg := c.optimiser()
	s := res.Summary
	last := len(s.Rounds) - 1
	r := &report{
		Algo:                  c.algo.String(),
		Strategy:              "none",
		Data:                  p.Data.Name,
		Learners:              c.learners,
		Tau:                   c.tau,
		Rounds:                c.rounds,
		Epochs:                c.epochs,
		Participation:         participation(c.epochs).String(),
		Dim:                   p.Data.Dim,
		Reps:                  c.reps,
		Seed:                  c.seed,
		SeedDrawn:             !c.seedSet,
		Eta:                   c.eta,
		EtaG:                  c.etaG,
		ServerStep:            cfg.ServerStep(c.tau),
		Clip:                  c.clip,
		L2:                    c.l2,
		EvalEvery:             c.evalEvery,
		FStar:                 p.FStar,
		FinalLossErrorMean:    s.LossErrorMean[last],
		FinalLossErrorStd:     s.LossErrorStd[last],
		FinalRegretMean:       finite(s.RegretMean[last]),
		FinalRegretStd:        finite(s.RegretStd[last]),
		FinalStaticRegretMean: s.StaticRegretMean[last],
		FinalAccuracyMean:     s.AccuracyMean[last],
		Seconds:               seconds,
	}
	if pr := res.Privacy; pr != nil {
		// The report names the strategy (its spec is the plan's, in
		// run.json and mfsolve -json).
		r.Strategy = res.Plan.Strategy
		if s, err := factorize.ParseStrategy(res.Plan.Strategy); err == nil {
			r.Strategy = s.Name()
		}
		r.Eps, r.Delta = &pr.Eps, &pr.Delta
		r.Calibration = pr.Calibration.String()
		r.Method = pr.Method.String()
		r.Relation, r.Rule = res.Plan.Target.Relation, res.Plan.Privacy.Rule
		r.Gamma = pr.Gamma
		r.Sensitivity = pr.Sensitivity
		r.NoiseStd = pr.NoiseStd
		r.FactorizationLoss = res.Plan.Privacy.Loss
		r.EffectiveClip = pr.EffectiveClip
	}
	if c.secure {
		r.SecureAggregation = c.runPlan(p.Data.Dim).SecureAggregation
	}
	return r
}

// summary is the one-line report without -json.
func (r *report) summary() string {
	s := fmt.Sprintf("algo=%s strategy=%s", r.Algo, r.Strategy)
	if r.Eps != nil {
		s += fmt.Sprintf(" eps=%g delta=%g calibration=%s noise_std=%.6g", *r.Eps, *r.Delta, r.Calibration, r.NoiseStd)
	}
	s += fmt.Sprintf(" n=%d tau=%d R=%d reps=%d final_loss_error=%.6g+-%.2g", r.Learners, r.Tau, r.Rounds, r.Reps, r.FinalLossErrorMean, r.FinalLossErrorStd)
	if r.FinalRegretMean != nil && r.FinalRegretStd != nil {
		s += fmt.Sprintf(" final_regret=%.6g+-%.2g", *r.FinalRegretMean, *r.FinalRegretStd)
	}
	seed := strconv.FormatUint(r.Seed, 10)
	if r.SeedDrawn {
		// Drawn at random: say how to repeat the run.
		seed += " (rerun with -seed " + seed + ")"
	}
	return s + fmt.Sprintf(" accuracy=%.4f seed=%s seconds=%.2f", r.FinalAccuracyMean, seed, r.Seconds)
}
