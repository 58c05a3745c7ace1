package main

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/internal/cli"
	"github.com/dpmf/dpmf/plan"
	"github.com/dpmf/dpmf/secagg"
)

// runPlan returns the plan of the run c describes, on data with the given
// number of features: the one place ofl turns its flags into a run, for
// the simulation (execute), the server (runServer) and, through planArgs,
// ofl evaluate.
func (c *config) runPlan(features int) *plan.Plan {
	p := &plan.Plan{
		Format: plan.Format, Workload: plan.WorkloadPrefix,
		Rounds: c.rounds, Participation: participation(c.epochs).String(),
		Algorithm: c.algo.String(), Learners: c.learners, Tau: c.tau,
		Clip: c.clip, Eta: c.eta, EtaG: c.etaG, EtaInd: c.etaInd,
		Model: &plan.Model{Name: "logistic", Features: features, L2: c.l2},
	}
	switch c.algo {
	case fedopt.Correlated, fedopt.BaselineCorrelated:
		// plan.SpecOf of the strategy -strategy names (parseArgs checked it).
		p.Strategy = c.strategy
		if st, err := factorize.ParseStrategy(c.strategy); err == nil {
			p.Strategy = plan.SpecOf(st)
		}
	case fedopt.Independent:
		p.Strategy = factorize.StrategyIdentity
	}
	if c.algo.Private() {
		p.Target = &plan.Target{Eps: c.eps, Delta: c.delta, Calibration: c.calibration, Relation: "replace-one"}
	}
	if c.seedSet {
		p.SeedSHA256 = plan.SeedDigest(c.seed)
	}
	if q := c.quantizer; q != nil {
		// As plan.NewSecureAggregation makes it (parseArgs checked n, tau,
		// clip and T; the plan's validation checks it again).
		t := cmp.Or(c.threshold, plan.DefaultThreshold(c.learners))
		p.SecureAggregation = &plan.SecureAggregation{Threshold: t, Colluders: c.colluders, RingBits: secagg.RingBits, ScaleBits: q.ScaleBits, Dim: features, QuantizationTerm: q.Term(features)}
	}
	return p
}

// sameStrategy reports whether the strategy specs a and b name the same
// factorization: equal as written, or parsed to the same
// factorize.CacheKey (every setting with its default filled in, and
// without those that do not change a certified result), so that
// "optimal:tol=1e-10", the default written out, is the recorded
// "optimal".
func sameStrategy(a, b string) bool {
	sa, errA := factorize.ParseStrategy(a)
	sb, errB := factorize.ParseStrategy(b)
	return a == b || errA == nil && errB == nil && factorize.CacheKey(sa) == factorize.CacheKey(sb)
}

// buildNoise computes the plan's factorization and privacy record (the
// server's noise; the simulation computes the same in
// experiment.Experiment.Run from the same plan).
func buildNoise(ctx context.Context, p *plan.Plan) (*factorize.Factorization, *fedopt.Privacy, error) {
	f, err := p.Build(ctx)
	if err != nil {
		return nil, nil, err
	}
	priv, err := fedopt.PrivacyOf(p)
	if err != nil {
		return nil, nil, err
	}
	return f, priv, nil
}

// planArgs returns the run flags of ofl that give back plan p (runPlan of
// their config is p, less its record), by name: the inverse of runPlan.
// Values are written so that they read back exactly.
func planArgs(p *plan.Plan) (map[string]string, error) {
	if p.Model == nil || p.Model.Name != "logistic" {
		return nil, fmt.Errorf("the run's plan has no logistic model: not a run of ofl server")
	}
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	args := map[string]string{
		"algo": p.Algorithm, "learners": strconv.Itoa(p.Learners), "tau": strconv.Itoa(p.Tau),
		"rounds": strconv.Itoa(p.Rounds), "epochs": strconv.Itoa(p.Epochs()),
		"eta": g(p.Eta), "eta-g": g(p.EtaG), "clip": g(p.Clip), "l2": g(p.Model.L2),
		"dim": strconv.Itoa(p.Model.Features),
	}
	algo, err := fedopt.ParseAlgorithm(p.Algorithm)
	if err != nil {
		return nil, err
	}
	if !algo.LocalSteps() {
		args["eta-ind"] = g(p.EtaInd)
	}
	if algo == fedopt.Correlated || algo == fedopt.BaselineCorrelated {
		args["strategy"] = p.Strategy
	}
	if t := p.Target; t != nil {
		args["eps"], args["delta"], args["calibration"] = g(t.Eps), g(t.Delta), t.Calibration.String()
	}
	// A plan without secure aggregation records its absence: -secure-aggregation
	// given to evaluate such a run contradicts it.
	args["secure-aggregation"] = "false"
	if sa := p.SecureAggregation; sa != nil {
		args["secure-aggregation"], args["threshold"], args["colluders"] = "true", strconv.Itoa(sa.Threshold), strconv.Itoa(sa.Colluders)
	}
	return args, nil
}

// evaluateArgs returns the command line of ofl (-reps 1) that evaluates
// the run of plan pl, recorded in file where: the run flags from the plan,
// the others (data, seed, output) as given (flag name to value). A given
// run flag, or a -seed, that contradicts the plan is a usage error naming
// both values.
func evaluateArgs(given map[string]string, pl *plan.Plan, where string) ([]string, error) {
	recorded, err := planArgs(pl)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", where, err)
	}
	args := []string{"-reps=1"}
	for _, k := range slices.Sorted(maps.Keys(given)) {
		v, shown := given[k], given[k]
		if k == "threshold" && v == "0" && pl.SecureAggregation != nil {
			// -threshold 0 is the default, floor(2n/3)+1 (the flag's
			// doc): the plan records the threshold it resolved to.
			v = strconv.Itoa(plan.DefaultThreshold(pl.Learners))
			shown = "0 (the default, " + v + ")"
		}
		if want, ok := recorded[k]; ok {
			if k == "eta-ind" {
				// -eta-ind 0 means eta eta_g (the flag's doc,
				// fedopt.Config.ServerStep): the server steps are
				// compared, so 0 agrees with a plan recording eta eta_g
				// and eta eta_g with one recording 0.
				step := func(x float64) float64 { return cmp.Or(x, pl.Eta*pl.EtaG) }
				x, err := strconv.ParseFloat(v, 64)
				if err == nil && step(x) == step(pl.EtaInd) {
					continue
				}
				if err == nil && x == 0 {
					shown += " (eta eta_g = " + strconv.FormatFloat(step(0), 'g', -1, 64) + ")"
				}
				if pl.EtaInd == 0 {
					want += " (eta eta_g = " + strconv.FormatFloat(step(0), 'g', -1, 64) + ")"
				}
				return nil, cli.Usagef("-%s %s contradicts the run's plan in %s: %s %s", k, shown, where, k, want)
			}
			if v != want && !(k == "strategy" && sameStrategy(v, want)) {
				return nil, cli.Usagef("-%s %s contradicts the run's plan in %s: %s %s", k, shown, where, k, want)
			}
			continue
		}
		if seed, err := strconv.ParseUint(v, 10, 64); k == "seed" && err == nil && pl.SeedSHA256 != "" && plan.SeedDigest(seed) != pl.SeedSHA256 {
			return nil, cli.Usagef("-seed %s contradicts the run's plan in %s: its seed has SHA-256 %s", v, where, pl.SeedSHA256)
		}
		args = append(args, "-"+k+"="+v)
	}
	spec, err := parseData(given["data"], 1) // "" (not given) is an error
	csv := err == nil && spec.file != ""
	for _, k := range slices.Sorted(maps.Keys(recorded)) {
		if k == "dim" && csv {
			continue // a CSV file sets d (checked against the plan's features)
		}
		args = append(args, "-"+k+"="+recorded[k])
	}
	return args, nil
}
