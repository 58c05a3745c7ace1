package audit

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/mechanism"
	"gonum.org/v1/gonum/mat"
)

// Tolerance is the relative slack of the sensitivity check: a measured
// distance may exceed the declared sensitivity by this factor of rounding
// (1 + 1e-12), never more.
const Tolerance = 1e-12

// Check is the outcome of one check of an audit.
type Check struct {
	// Name names the check.
	Name string `json:"name"`
	// OK reports that it passed.
	OK bool `json:"ok"`
	// Detail says what was compared.
	Detail string `json:"detail"`
}

// AuditedPlan is what both audits' reports say of the plan they audited
// and its calibration.
type AuditedPlan struct {
	Algorithm     string  `json:"algorithm"`
	Strategy      string  `json:"strategy"`
	Participation string  `json:"participation"`
	Learners      int     `json:"learners"`
	Rounds        int     `json:"rounds"`
	Tau           int     `json:"tau"`
	Dim           int     `json:"dim"`
	Clip          float64 `json:"clip"`
	Eps           float64 `json:"eps"`
	Delta         float64 `json:"delta"`
	NoiseStd      float64 `json:"noise_std"`
}

// auditedPlan describes the plan of s with the shape and calibration the
// audit ran.
func auditedPlan(s *Setup, n, R, tau, d int, eps, delta, std float64) AuditedPlan {
	p := s.Plan
	return AuditedPlan{
		Algorithm: p.Algorithm.String(), Strategy: s.Factorization.Strategy, Participation: p.Participation.String(),
		Learners: n, Rounds: R, Tau: tau, Dim: d, Clip: p.Clip, Eps: eps, Delta: delta, NoiseStd: std,
	}
}

// ReplayReport is the outcome of [Replay]. Its JSON writes a non-finite
// number (a measured distance of +Inf where a broken pipeline overflows,
// the ratio to a declared sensitivity of 0) as the string "+Inf", "-Inf"
// or "NaN", as [MuEstimate]'s does: before, encoding/json refused the
// whole report, which then went unwritten.
type ReplayReport struct {
	// AuditedPlan describes the audited plan and the declared
	// calibration.
	AuditedPlan
	// Declared is the declared sensitivity of C G (the privacy record's).
	Declared float64 `json:"declared_sensitivity"`
	// DeclaredRule is the sensitivity rule of the declaration.
	DeclaredRule string `json:"declared_rule"`
	// Measured is ||C (G - G')||_F between the two runs.
	Measured float64 `json:"measured_distance"`
	// Ratio is Measured / Declared; the check is Ratio <= 1 + 1e-12.
	Ratio float64 `json:"ratio"`
	// Expected is the distance the adversarial data should produce,
	// computed in closed form from the aggregation weights:
	// 2 B_g s ||sum_{r in S} w_{r,i} C[:, r]||, s = tau for Algorithm 1 (1 for
	// the baselines), w the server's weight of learner i in round r.
	Expected float64 `json:"expected_distance"`
	// AuditedLearner and AuditedRounds are where the replaced sample is.
	AuditedLearner int   `json:"audited_learner"`
	AuditedRounds  []int `json:"audited_rounds"`
	// Dropped is the number of learner-rounds missed by dropouts, and
	// AuditedDropped those in the audited rounds.
	Dropped        int `json:"dropped"`
	AuditedDropped int `json:"audited_rounds_dropped"`
	// Network reports that D's federation also ran over gRPC
	// ([ReplayNetwork]; the check "networked release").
	Network bool `json:"network"`
	// Checks are every check, in order; OK is their conjunction.
	Checks []Check `json:"checks"`
	OK     bool    `json:"ok"`
	// Seconds is the audit's wall-clock time.
	Seconds float64 `json:"seconds"`
}

// Violations returns the checks that failed.
func (r *ReplayReport) Violations() []Check {
	var out []Check
	for _, c := range r.Checks {
		if !c.OK {
			out = append(out, c)
		}
	}
	return out
}

// Replay runs the replay falsifier on the setup's plan. It runs the
// federation of the plan twice, in process, with the real fedopt.Learner
// and fedopt.Server roles and the real mechanism with the same key, on
// neighbouring data sets D and D' (one sample replaced at every round it
// takes part in), feeding both runs the released models of D. It records
// the server's pre-noise aggregate g^r of both runs, and checks:
//
//   - sensitivity: ||C (G - G')||_F <= declared sensitivity (1 + 1e-12);
//   - participants: the same learners take part in every round;
//   - aggregation weights: the server's weight of every learner in every
//     round (its denominator, probed with unit updates) is the same;
//   - noise schedule: both servers add bit-identical noise vectors, one per
//     round, in round order;
//   - noise released: each released model x^{r+1} carries the noise vector
//     drawn for round r, (x^r - x^{r+1}) / eta~ - g^r, to rounding;
//   - noise rows: the noise whitened through the factorization has no two
//     equal rows (a noise key reused across rounds) and the declared scale
//     (a chi-square test with false-alarm probability 1e-6);
//   - declared structure: a banded sensitivity rule is only declared for a
//     C whose Gram matrix is banded within the separation.
//
// The replaced sample is the one where the server's weights and the
// factorization make the change largest: the learner and the set of rounds
// allowed by the participation that maximise ||sum_{r in S} w_{r,i} C[:, r]||
// (under min-separation at large R, the largest of the candidates
// worstSample tries; see docs/audit.md).
// For single participation and exact rules a correct run gives a ratio of 1
// to rounding.
//
// Replay checks ctx every round, every 1024 local steps of a learner and
// between its dense products; once ctx is done it returns ctx.Err() and no
// report.
func Replay(ctx context.Context, s *Setup) (*ReplayReport, error) {
	return replayWith(ctx, s, nil, false)
}

// ReplayNetwork is [Replay] with one more check, "networked release": the
// federation of data set D also runs over gRPC, as a package fednet
// server on a loopback port of 127.0.0.1 (insecure credentials, a
// temporary state directory, the same noise mechanism and key) and n
// fednet.RunLearner goroutines with the audit's adversarial model, its
// followers anchored at the models read back from the server's state
// directory; the check passes when the networked run releases the
// in-process run's models x^0, ..., x^R bit for bit, so that every other
// check of the report holds for the networked code path too. The
// learners of fednet submit in every round, so the plan must have no
// dropouts (fednet's dropout policy is exercised in process by
// Plan.Dropout).
func ReplayNetwork(ctx context.Context, s *Setup) (*ReplayReport, error) {
	return replayWith(ctx, s, nil, true)
}

func replayWith(ctx context.Context, s *Setup, h *hooks, network bool) (*ReplayReport, error) {
	start := time.Now()
	p := s.Plan
	if network && p.Dropout != 0 {
		return nil, fmt.Errorf("audit: a networked replay runs without dropouts (dropout %v)", p.Dropout)
	}
	f := s.Factorization
	decl := s.Privacy
	if h != nil && h.declare != nil {
		var err error
		if decl, err = h.declare(s); err != nil {
			return nil, err
		}
	}
	cfg := p.Config(decl)
	shape := p.Shape()
	n, R, tau, d := p.Learners, p.Rounds, p.Tau, p.Dim
	agg := serverAggregate(cfg, shape)
	if h != nil && h.aggregate != nil {
		agg = h.aggregate(agg, s)
	}
	cm := f.C
	mRows, _ := cm.Dims()

	// Data-independent decisions taken before the run.
	present := make([][]bool, R)
	dropped := 0
	for r := range present {
		present[r] = make([]bool, n)
		for i := range present[r] {
			present[r][i] = p.present(r, i)
			if !present[r][i] {
				dropped++
			}
		}
	}
	weights := func(r int) ([]float64, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		w := make([]float64, n)
		probe := make([]float64, d)
		probe[0] = float64(tau) * p.Clip
		zero := make([]float64, d)
		for i := range w {
			if !present[r][i] {
				continue
			}
			ups := make([][]float64, n)
			for j := range ups {
				if present[r][j] {
					ups[j] = zero
				}
			}
			ups[i] = probe
			g, err := agg(r, ups)
			if err != nil {
				return nil, fmt.Errorf("audit: probing round %d: %w", r, err)
			}
			w[i] = g[0] / probe[0]
		}
		return w, nil
	}
	wts := make([][]float64, R)
	for r := range wts {
		var err error
		if wts[r], err = weights(r); err != nil {
			return nil, err
		}
	}
	learner, rounds, best, err := worstSample(ctx, cm, p.Participation, wts, present)
	if err != nil {
		return nil, err
	}
	perStep := 1.0
	if p.Algorithm.LocalSteps() {
		perStep = float64(tau)
	}
	expected := 2 * p.Clip * perStep * best

	// The neighbouring data sets.
	rng := rand.New(rand.NewPCG(p.Seed, 0x243f6a8885a308d3))
	bg := make([][]float64, 32)
	for j := range bg {
		v := make([]float64, d)
		for k := range v {
			v[k] = rng.NormFloat64()
		}
		scale := p.Clip * rng.Float64() / math.Sqrt(dot(v, v))
		a := sample(kindBackground, 0, 0, 0)
		for _, x := range v {
			a = append(a, x*scale)
		}
		bg[j] = a
	}
	inS := make([]bool, R)
	for _, r := range rounds {
		inS[r] = true
	}
	anchors := make([]float64, R)
	worlds := [2]*replayData{
		{plan: p, learner: learner, in: inS, sign: 1, anchors: anchors, bg: bg, steps: h.stepCounter()},
		{plan: p, learner: learner, in: inS, sign: -1, anchors: anchors, bg: bg, steps: h.stepCounter()},
	}
	model := adversary{mag: 2 * p.Clip}
	var learners [2][]*fedopt.Learner
	var recs [2]*recorder
	key := streamKey(purposeReplayNoise, p.Seed) // see seeds.go
	for w := range worlds {
		m, err := newMechanism(s, h, decl.NoiseStd, key)
		if err != nil {
			return nil, err
		}
		recs[w] = &recorder{Mechanism: m}
		learners[w] = make([]*fedopt.Learner, n)
		for i := range learners[w] {
			if learners[w][i], err = fedopt.NewLearner(model, replayStream{worlds[w], i}, cfg, tau, d); err != nil {
				return nil, err
			}
		}
	}

	G := [2]*mat.Dense{mat.NewDense(R, d, nil), mat.NewDense(R, d, nil)}
	sameParticipants := true
	firstDiff := ""     // the first round whose weights differ
	releasedNoise := "" // the first entry whose released noise is not the drawn one
	step := cfg.ServerStep(tau)
	x := make([]float64, d)
	released := [][]float64{x} // D's x^0, ..., x^R
	for r := 0; r < R; r++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		anchors[r] = x[0]
		var next []float64
		for w := range worlds {
			ups := make([][]float64, n)
			for i, l := range learners[w] {
				if !p.present(r, i) {
					continue
				}
				ups[i] = make([]float64, d)
				if err := l.UpdateContext(ctx, ups[i], r, x); err != nil {
					return nil, err
				}
			}
			for i := range ups {
				if (ups[i] != nil) != present[r][i] {
					sameParticipants = false
				}
			}
			g, err := agg(r, ups)
			if err != nil {
				return nil, err
			}
			copy(G[w].RawRowView(r), g)
			if w == 1 {
				ww, err := weights(r)
				if err != nil {
					return nil, err
				}
				if !slices.Equal(ww, wts[r]) && firstDiff == "" {
					firstDiff = fmt.Sprintf("round %d: %v and %v", r, wts[r], ww)
				}
			}
			var mech mechanism.Mechanism = recs[w]
			if h != nil && h.releaseScale != 0 {
				mech = scaled{mech, h.releaseScale}
			}
			srv, err := fedopt.NewServerAt(cfg, shape, mech, r, x)
			if err != nil {
				return nil, err
			}
			if err := srv.Release(ups); err != nil {
				return nil, err
			}
			// The noise in the release, (x^r - x^{r+1}) / eta~ - g^r,
			// is the vector the mechanism drew, to rounding: a bound
			// of 1e-9 of the magnitudes involved, where rounding gives
			// a few 1e-16, plus four subnormal units of the model over
			// eta~ (a model on the subnormal grid is rounded absolutely).
			if rows := recs[w].rows; len(rows) == r+1 {
				nz, g, y := rows[r], G[w].RawRowView(r), srv.Model()
				for k := range y {
					dev := math.Abs((x[k]-y[k])/step - g[k] - nz[k])
					scale := (math.Abs(x[k])+math.Abs(y[k]))/step + math.Abs(g[k]) + math.Abs(nz[k])
					if !(dev <= 1e-9*scale+4*0x1p-1074/step) && releasedNoise == "" {
						releasedNoise = fmt.Sprintf("round %d of D%s, entry %d: released %.17g, drawn %.17g", r, []string{"", "'"}[w], k, (x[k]-y[k])/step-g[k], nz[k])
					}
				}
			}
			if w == 0 {
				next = slices.Clone(srv.Model())
			}
		}
		x = next
		released = append(released, x)
		if s.Progress != nil {
			s.Progress(r+1, R)
		}
	}

	// The checks below are dense products, O(R^2 d) to O(R^3): ctx is
	// checked between them.
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// The distance through the factorization.
	diff := mat.NewDense(mRows, d, nil)
	for r := 0; r < R; r++ {
		a, b := G[0].RawRowView(r), G[1].RawRowView(r)
		if slices.Equal(a, b) {
			continue
		}
		for row := 0; row < mRows; row++ {
			c := cm.At(row, r)
			if c == 0 {
				continue
			}
			dst := diff.RawRowView(row)
			for k := range dst {
				dst[k] += c * (a[k] - b[k])
			}
		}
	}
	measured := mat.Norm(diff, 2)
	rep := &ReplayReport{
		AuditedPlan: auditedPlan(s, n, R, tau, d, decl.Eps, decl.Delta, decl.NoiseStd),
		Declared:    decl.Sensitivity, DeclaredRule: string(decl.UnitSensitivity.Rule),
		Measured: measured, Ratio: measured / decl.Sensitivity, Expected: expected,
		AuditedLearner: learner, AuditedRounds: rounds, Dropped: dropped, AuditedDropped: missed(present, rounds),
	}
	add := func(name string, ok bool, format string, args ...any) {
		rep.Checks = append(rep.Checks, Check{Name: name, OK: ok, Detail: fmt.Sprintf(format, args...)})
	}
	add("sensitivity", rep.Ratio <= 1+Tolerance,
		"||C (G - G')||_F = %.12g, declared %.12g (%s), ratio %.15f", measured, decl.Sensitivity, decl.UnitSensitivity.Rule, rep.Ratio)
	add("participants", sameParticipants, "the same learners in every round of both runs (%d learner-rounds dropped)", dropped)
	sameWeights := firstDiff == ""
	if sameWeights {
		firstDiff = "every round"
	}
	add("aggregation weights", sameWeights, "server weights per learner identical in both runs: %s", firstDiff)
	sched := len(recs[0].rows) == R && slices.EqualFunc(recs[0].rows, recs[1].rows, slices.Equal)
	add("noise schedule", sched, "%d and %d noise vectors drawn, bit-identical in both runs: %v", len(recs[0].rows), len(recs[1].rows), sched)
	if releasedNoise == "" {
		add("noise released", true, "each released model carries the noise vector drawn for its round, in both runs")
	} else {
		add("noise released", false, "a released model carries other noise than was drawn: %s", releasedNoise)
	}
	if len(recs[0].rows) == R {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		wh, err := newWhitener(f, false)
		if err != nil {
			return nil, err
		}
		z := wh.whiten(mat.NewDense(R, d, slices.Concat(recs[0].rows...)))
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if dup, i, j := duplicateRows(z); dup {
			add("noise rows independent", false, "whitened noise rows pairwise distinct: false (first coincidence: rounds %d and %d)", i, j)
		} else {
			add("noise rows independent", true, "whitened noise rows pairwise distinct: true")
		}
		stat, ok := chiSquare(z, decl.NoiseStd)
		add("noise scale", ok, "whitened noise at the declared std %.6g: Wilson-Hilferty z = %.3f (|z| <= %.2f, false alarm 1e-6)", decl.NoiseStd, stat, zChi)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if rule := decl.UnitSensitivity.Rule; rule == factorize.RuleMinSepBanded {
		b := p.Participation.B
		ok := bandedGram(cm, b)
		add("declared structure", ok, "rule %q needs C^T C banded within b = %d: %v", rule, b, ok)
	}
	if network {
		if h != nil && h.tamper != nil {
			h.tamper(released)
		}
		world := &replayData{plan: p, learner: learner, in: inS, sign: 1, bg: bg}
		ok, detail, err := replayNetwork(ctx, &netRun{
			cfg: cfg, shape: shape, model: model,
			noise: func(key [32]byte) (mechanism.Mechanism, error) { return newMechanism(s, h, decl.NoiseStd, key) },
			key:   key,
		}, world, released)
		if err != nil {
			return nil, err
		}
		add("networked release", ok, "%s", detail)
		rep.Network = true
	}
	if err := ctx.Err(); err != nil {
		return nil, err // a report finished after a cancellation is not given
	}
	rep.OK = !slices.ContainsFunc(rep.Checks, func(c Check) bool { return !c.OK })
	rep.Seconds = time.Since(start).Seconds()
	return rep, nil
}

// replayData is one of the two neighbouring data sets: every learner's
// samples are background vectors, except the audited learner's in the
// audited rounds, where the first sample pushes along e_0 with the
// world's sign and the others follow its trajectory.
type replayData struct {
	plan    Plan
	learner int
	in      []bool
	sign    float64
	anchors []float64
	bg      [][]float64
	// release, if not nil, returns the model released for round r (a
	// networked run), whose first coordinate anchors the followers in
	// place of anchors[r].
	release func(r int) []float64
	// steps, if not nil, counts the samples handed out (hooks.steps).
	steps *atomic.Int64
}

type replayStream struct {
	d *replayData
	i int
}

// Sample implements fedopt.Stream.
func (s replayStream) Sample(r, t int) ([]float64, float64) {
	d := s.d
	if d.steps != nil {
		d.steps.Add(1)
	}
	if s.i == d.learner && d.in[r] {
		if t == 0 {
			return sample(kindPush, 0, d.sign, 0), 0
		}
		if d.release != nil {
			return sample(kindFollow, 0, 0, d.release(r)[0]), 0
		}
		return sample(kindFollow, 0, 0, d.anchors[r]), 0
	}
	h := streamValue(purposeReplayBackground, d.plan.Seed, uint64((r*d.plan.Learners+s.i)*d.plan.Tau+t))
	return d.bg[h%uint64(len(d.bg))], 0
}

// patterns returns the sets of rounds one sample may take part in under p
// that the falsifier tries: every round (single); every residue class
// (fixed epochs); every run of at most k rounds exactly b apart
// (min-separation, the worst patterns for Toeplitz C by Kalinin and
// Lampert 2024).
func patterns(p factorize.Participation, R int) [][]int {
	// Pattern c holds the rounds c, c + step, ..., at most k of them.
	starts, step, k := R, 1, 1
	switch p.Kind {
	case factorize.KindEpochs:
		starts, step, k = R/p.K, R/p.K, R
	case factorize.KindMinSep:
		// ceil(R / B) written so that a B near math.MaxInt cannot
		// overflow (R + B - 1 did, leaving every pattern empty).
		step, k = p.B, cmp.Or(p.K, (R-1)/p.B+1)
	}
	out := make([][]int, starts)
	for c := range out {
		for r := c; r < R && len(out[c]) < k; r += step {
			out[c] = append(out[c], r)
			if step > R-r {
				break // r + step would pass R, or overflow
			}
		}
	}
	return out
}

// maxSearchWork bounds the work of worstSample's exhaustive search under
// min-separation: the number of its patterns times the learners, the
// rounds of a pattern and C's rows, about that many multiply-adds (a few
// hundredths of a second). The audit's small plans (R = 16, b = 4: 249
// patterns) are searched exhaustively; Fig. 4's (R = 800) are not.
const maxSearchWork = 1 << 26

// worstSample returns the learner and rounds that maximise
// ||sum_{r in S} w[r][i] C[:, r]|| over the participation's patterns, and
// that maximum. Among values equal to a relative 1e-12 it prefers the
// pattern whose rounds miss the most learners, so that a dropout policy is
// exercised where the weights do not tell the rounds apart. It checks ctx
// at every pattern.
//
// Under single participation and fixed epochs [patterns] lists every
// pattern the participation allows, and the maximum is exact. Under
// min-separation (any rounds pairwise at least b apart, at most k of
// them) the patterns the claim covers are too many to list at large R,
// and which one is worst depends on C and the weights; worstSample tries
//
//   - every pattern, where their number keeps the work within
//     maxSearchWork (exact, whatever C and w);
//   - the runs exactly b apart of [patterns], the worst patterns for a
//     Toeplitz C with non-negative non-increasing coefficients and equal
//     weights (Kalinin & Lampert 2024, Thm 2);
//   - for each learner i, the pattern that maximises
//     sum_{r in S} w[r][i]^2 ||C[:, r]||^2 (a dynamic program over the
//     rounds): where C's columns b or more apart are orthogonal (C^T C
//     banded within b, as the banded rule requires) that sum is the
//     squared norm itself, so this pattern is the worst for any weights.
//     Runs exactly b apart are not: where a learner's weights differ by
//     round (a server that rescales by the learners present), a pattern
//     with a wider gap can take the rounds where they are larger.
//
// For other C at large R (whose sensitivity the min-separation bound, not
// an exact rule, declares) the maximum found is a lower bound on the worst
// pattern's.
func worstSample(ctx context.Context, c *mat.Dense, p factorize.Participation, w [][]float64, present [][]bool) (int, []int, float64, error) {
	return worstSampleWithin(ctx, c, p, w, present, maxSearchWork)
}

// worstSampleWithin is worstSample with the exhaustive search's work
// bounded by work (0: no exhaustive search).
func worstSampleWithin(ctx context.Context, c *mat.Dense, p factorize.Participation, w [][]float64, present [][]bool, work int) (int, []int, float64, error) {
	m, R := c.Dims()
	n := len(w[0])
	v := make([]float64, m)
	bestI, bestS, best, bestDrops := 0, []int{0}, -1.0, -1
	try := func(i int, s []int) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		drops := missed(present, s)
		clear(v)
		for _, r := range s {
			if w[r][i] == 0 {
				continue
			}
			for a := 0; a < m; a++ {
				v[a] += w[r][i] * c.At(a, r)
			}
		}
		nv := math.Sqrt(dot(v, v))
		if nv > best*(1+1e-12) || (nv >= best*(1-1e-12) && drops > bestDrops) {
			bestI, bestS, best, bestDrops = i, s, nv, drops
		}
		return nil
	}
	all := patterns(p, R)
	if p.Kind == factorize.KindMinSep {
		k := p.Participations(R)
		if every, ok := separatedSets(R, p.B, k, work/max(1, n*k*m)); ok {
			all = every
		} else {
			col := make([]float64, R) // ||C[:, r]||^2
			for r := range col {
				for a := 0; a < m; a++ {
					col[r] += c.At(a, r) * c.At(a, r)
				}
			}
			d := make([]float64, R)
			for i := 0; i < n; i++ {
				for r := range d {
					d[r] = w[r][i] * w[r][i] * col[r]
				}
				if err := try(i, bestSeparatedSet(d, p.B, k)); err != nil {
					return 0, nil, 0, err
				}
			}
		}
	}
	for _, s := range all {
		for i := 0; i < n; i++ {
			if err := try(i, s); err != nil {
				return 0, nil, 0, err
			}
		}
	}
	return bestI, bestS, best, nil
}

// separatedSets returns every non-empty set of at most k of the rounds
// 0..R-1 pairwise at least b apart, in lexicographic order, or false if
// there are more than limit.
func separatedSets(R, b, k, limit int) ([][]int, bool) {
	var out [][]int
	var rec func(first int, cur []int) bool
	rec = func(first int, cur []int) bool {
		for r := first; r < R; r++ {
			if len(out) >= limit {
				return false
			}
			s := append(cur, r)
			out = append(out, slices.Clone(s))
			if len(s) < k && b <= R-1-r { // r + b < R, without overflow
				if !rec(r+b, s) {
					return false
				}
			}
		}
		return true
	}
	if !rec(0, make([]int, 0, k)) {
		return nil, false
	}
	return out, true
}

// bestSeparatedSet returns a set of at most k indices of d >= 0, pairwise
// at least b apart, with the largest sum of d (a non-empty one: index 0
// if every d is 0). With A_c[t] the best sum over indices <= t with at
// most c of them, A_c[t] = max(A_c[t-1], d[t] + A_{c-1}[t-b]); the table
// of choices is walked back from A_k[R-1]. O(R k) time and bytes; O(R)
// where k does not bind (at least ceil(R / b)): A_c = A_{c-1} then, so one
// table A[t] = max(A[t-1], d[t] + A[t-b]) serves every count.
func bestSeparatedSet(d []float64, b, k int) []int {
	R := len(d)
	unbound := k >= (R-1)/b+1
	if unbound {
		k = 1
	}
	prev := make([]float64, R) // A_{c-1}
	cur := make([]float64, R)  // A_c
	took := make([][]bool, k+1)
	for c := 1; c <= k; c++ {
		took[c] = make([]bool, R)
		src := prev
		if unbound {
			src = cur // A[t-b] of the same table
		}
		run := 0.0
		for t := 0; t < R; t++ {
			base := 0.0
			if t >= b {
				base = src[t-b]
			}
			if v := base + d[t]; v > run {
				run = v
				took[c][t] = true
			}
			cur[t] = run
		}
		prev, cur = cur, prev
	}
	var s []int
	for c, t := k, R-1; c > 0 && t >= 0; {
		if took[c][t] {
			s = append(s, t)
			t -= b
			if !unbound {
				c--
			}
		} else {
			t--
		}
	}
	if len(s) == 0 {
		return []int{0}
	}
	slices.Reverse(s)
	return s
}

// missed returns the number of learner-rounds of the given rounds that
// the dropout schedule present leaves out.
func missed(present [][]bool, rounds []int) int {
	n := 0
	for _, r := range rounds {
		for _, ok := range present[r] {
			if !ok {
				n++
			}
		}
	}
	return n
}

// duplicateRows reports whether two rows of z are collinear to a relative
// 1e-12 in angle and, in dimension d <= 2 where independent rows are
// collinear often enough, also of equal norm to a relative 1e-12: what a
// noise key reused across rounds leaves behind (its whitened rows agree to
// rounding, a few 1e-15). For independent Gaussian rows of dimension
// d >= 3 a pair is that collinear with probability about 1e-12 (d = 3) or
// less; in d = 1 a pair has equal norms to 1e-12 with probability about
// 2 / pi 1e-12 (2e-7 for the 3.2e5 pairs of 800 rounds; a relative 1e-6
// flagged about one correct run in six there).
//
// The rows are compared scaled by a power of two that brings the largest
// entry near 1, so that their products neither underflow (a noise std of
// 1e-300 made every row look collinear) nor overflow.
func duplicateRows(z *mat.Dense) (bool, int, int) {
	r, d := z.Dims()
	big := 0.0
	for i := 0; i < r; i++ {
		for _, v := range z.RawRowView(i) {
			big = math.Max(big, math.Abs(v))
		}
	}
	if big > 0 && !math.IsInf(big, 0) {
		_, e := math.Frexp(big)
		var scaled mat.Dense
		scaled.Apply(func(_, _ int, v float64) float64 { return math.Ldexp(v, -e) }, z)
		z = &scaled
	}
	norms := make([]float64, r)
	for i := range norms {
		row := z.RawRowView(i)
		norms[i] = math.Sqrt(dot(row, row))
	}
	for i := 0; i < r; i++ {
		a := z.RawRowView(i)
		for j := i + 1; j < r; j++ {
			b := z.RawRowView(j)
			c := dot(a, b)
			collinear := math.Abs(math.Abs(c)-norms[i]*norms[j]) <= 1e-12*norms[i]*norms[j]
			if collinear && (d >= 3 || math.Abs(norms[i]-norms[j]) <= 1e-12*norms[i]) {
				return true, i, j
			}
		}
	}
	return false, -1, -1
}

// zChi is the two-sided normal quantile for a false-alarm probability of
// 1e-6.
const zChi = 4.8916

// chiSquare tests that the entries of z are N(0, std^2): S = sum z^2 / std^2
// is chi-square with N = size(z) degrees of freedom; the Wilson-Hilferty
// transform of S/N is standard normal to a good approximation.
func chiSquare(z *mat.Dense, std float64) (float64, bool) {
	r, d := z.Dims()
	N := float64(r * d)
	s := 0.0
	for i := 0; i < r; i++ {
		for _, v := range z.RawRowView(i) {
			s += (v / std) * (v / std)
		}
	}
	v := 2 / (9 * N)
	stat := (math.Cbrt(s/N) - (1 - v)) / math.Sqrt(v)
	return stat, math.Abs(stat) <= zChi
}

// bandedGram reports whether C^T C is zero at distance >= b from the
// diagonal (to a relative 1e-12 of the largest entry).
func bandedGram(c *mat.Dense, b int) bool {
	var x mat.Dense
	x.Mul(c.T(), c)
	n, _ := x.Dims()
	scale := 0.0
	for i := 0; i < n; i++ {
		scale = math.Max(scale, math.Abs(x.At(i, i)))
	}
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if (i-j >= b || j-i >= b) && math.Abs(x.At(i, j)) > 1e-12*scale {
				return false
			}
		}
	}
	return true
}
