package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"

	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/internal/atomicfile"
)

// roundsHeader is the header of rounds.csv.
const roundsHeader = "round,loss_error_mean,loss_error_std,regret_mean,regret_std,accuracy_mean,static_regret_mean,static_regret_std\n"

// writeRounds writes dir/rounds.csv atomically: one row per evaluated round.
// Floats are written in the shortest form that reads back exactly; a metric
// that is not available is NaN.
func writeRounds(dir string, s *fedopt.Summary) error {
	path := filepath.Join(dir, "rounds.csv")
	return atomicfile.Write(path, 0o644, func(w io.Writer) error {
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
	})
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
	Gamma       float64  `json:"gamma,omitempty"`
	Sensitivity float64  `json:"sensitivity"`
	NoiseStd    float64  `json:"noise_std"`
	// FactorizationLoss is gamma^2 ||B||_F^2 of the noise's factorization.
	FactorizationLoss float64 `json:"factorization_loss,omitempty"`
	Learners          int     `json:"learners"`
	Tau               int     `json:"tau"`
	Rounds            int     `json:"rounds"`
	Dim               int     `json:"dim"`
	Reps              int     `json:"reps"`
	Seed              uint64  `json:"seed"`
	Eta               float64 `json:"eta"`
	EtaG              float64 `json:"eta_g"`
	ServerStep        float64 `json:"server_step"`
	Clip              float64 `json:"clip"`
	L2                float64 `json:"l2"`
	EvalEvery         int     `json:"eval_every"`
	FStar             float64 `json:"f_star"`

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

func newReport(c config, p *fedopt.Problem, res *fedopt.Result, seconds float64) *report {
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
		Dim:                   p.Data.Dim,
		Reps:                  c.reps,
		Seed:                  c.seed,
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
		r.Strategy = res.Factorization.Strategy
		r.Eps, r.Delta = &pr.Eps, &pr.Delta
		r.Calibration = pr.Calibration.String()
		r.Method = pr.Method.String()
		r.Gamma = pr.Gamma
		r.Sensitivity = pr.Sensitivity
		r.NoiseStd = pr.NoiseStd
		r.FactorizationLoss = res.Factorization.Metrics.Loss
	}
	return r
}

func (r *report) writeJSON(w io.Writer) error {
	js, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", js)
	return err
}

// summary is the one-line report without -json.
func (r *report) summary() string {
	s := fmt.Sprintf("algo=%s strategy=%s", r.Algo, r.Strategy)
	if r.Eps != nil {
		s += fmt.Sprintf(" eps=%g delta=%g calibration=%s noise_std=%.6g", *r.Eps, *r.Delta, r.Calibration, r.NoiseStd)
	}
	s += fmt.Sprintf(" n=%d tau=%d R=%d reps=%d final_loss_error=%.6g+-%.2g", r.Learners, r.Tau, r.Rounds, r.Reps, r.FinalLossErrorMean, r.FinalLossErrorStd)
	if r.FinalRegretMean != nil {
		s += fmt.Sprintf(" final_regret=%.6g+-%.2g", *r.FinalRegretMean, *r.FinalRegretStd)
	}
	return s + fmt.Sprintf(" accuracy=%.4f seed=%d seconds=%.2f", r.FinalAccuracyMean, r.Seed, r.Seconds)
}
