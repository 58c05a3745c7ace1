package fedopt

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/floats"

	"github.com/dpmf/dpmf/factorize"
	dpmodel "github.com/dpmf/dpmf/model"
)

// Stream is one learner's stream of clients: Sample(r, t) is the client
// (features and label) of its local step t in round r. Every call with the
// same (r, t) must return the same sample, so that a round can be
// recomputed (a networked learner does after a reconnection).
//
// A stream dealt for a number of learners, rounds and clients per round
// says so, with its learner's index, by a method Shape() (learner,
// learners, rounds, tau int) (dataset.Stream does): a learner of a larger
// tau, a run of more rounds and, in [Simulate], a learner whose slot is
// not the stream's index are then refused, since they would read other
// learners' or rounds' clients, or none.
//
// A stream that serves each client in several rounds says so with a
// method Epochs() (k, period int): k rounds, period rounds apart
// (dataset.Stream does, for data replayed by dataset.Dataset.Epochs).
// [NewLearner] and [Simulate] then refuse a privacy record whose
// participation does not allow it (single participation with k > 1,
// epochs of another period, a min-separation longer than the period or of
// fewer rounds than the client's): the sensitivity it was calibrated with
// assumes fewer participations. A stream without an Epochs method is taken
// to serve each client in one round, and one without Shape to be dealt for
// the run it is used in: these are the caller's declarations, not checked
// against the samples, and the privacy record's guarantee rests on them
// (docs/fedopt.md).
type Stream interface {
	// Sample returns the features a and label y of the client served at
	// local step t of round r.
	Sample(r, t int) (a []float64, y float64)
}

// epochStream is a [Stream] that reports its epochs.
type epochStream interface {
	Epochs() (k, period int)
}

// shapedStream is a [Stream] that reports its learner and the learners,
// rounds and clients per round it was dealt for.
type shapedStream interface {
	Shape() (learner, learners, rounds, tau int)
}

// CheckShape returns an error if data reports a shape that a learner in
// slot `slot` (-1: not known) of a run of the given rounds (0: not known)
// with tau local steps per round would read past: its clients of step t >=
// its tau are other learners' or rounds', a learner index outside its
// learners reads another round's clients, another slot's index another
// learner's clients, and its rounds beyond its own do not exist. A stream
// without a Shape method passes. [NewLearner] and [Simulate] check their
// data with it, and so does the networked learner (package fednet).
func CheckShape(data Stream, slot, rounds, tau int) error {
	ss, ok := data.(shapedStream)
	if !ok {
		return nil
	}
	switch i, n, dr, dt := ss.Shape(); {
	case i < 0 || i >= n:
		return fmt.Errorf("fedopt: the data is learner %d's of a data set of %d learners, want 0..%d", i, n, n-1)
	case slot >= 0 && i != slot:
		return fmt.Errorf("fedopt: learner %d's data is learner %d's: another learner's clients (two learners would use the same ones)", slot, i)
	case tau > dt:
		return fmt.Errorf("fedopt: the data deals %d clients per learner and round, the learner takes tau = %d local steps: its steps %d..%d would use other learners' or rounds' clients", dt, tau, dt, tau-1)
	case rounds > dr:
		return fmt.Errorf("fedopt: the data deals %d rounds, the run has %d", dr, rounds)
	}
	return nil
}

// checkEpochs returns an error if data serves a client in more rounds of
// a run of the given rounds than the participation of the record pr
// allows ([CheckEpochs]). A stream that reports no epochs serves each
// client once.
func checkEpochs(pr *Privacy, rounds int, data Stream) error {
	es, ok := data.(epochStream)
	if pr == nil || !ok {
		return nil
	}
	k, period := es.Epochs()
	return CheckEpochs(pr.ParticipationPattern, rounds, k, period)
}

// CheckEpochs returns an error if data that serves each client in k
// rounds, period rounds apart (a [Stream]'s Epochs), takes part in more
// rounds of a run of the given rounds than participation part allows:
// single participation allows one round; epochs:K exactly the data's own
// epochs (period rounds / K); minsep:B[,K] a period of at least B (and at
// most K of the client's rounds within the run). k <= 1, or a period of at
// least the rounds, is one round. [NewLearner], [Simulate] and the
// networked learner (package fednet) check their data with it; the error
// names the data's epochs and the participation.
func CheckEpochs(part factorize.Participation, rounds, k, period int) error {
	if k <= 1 || period >= rounds {
		return nil
	}
	if period < 1 {
		return fmt.Errorf("fedopt: data of %d epochs with period %d, want a period >= 1", k, period)
	}
	// A client's rounds in the run, at most: ceil(rounds / period), as
	// (rounds - 1) / period + 1, whose sum cannot wrap past MaxInt.
	m := min(k, (rounds-1)/period+1)
	switch part.Kind {
	case factorize.KindEpochs:
		// Rounds i, i + b, ..., b = R / K: the data's own epochs exactly.
		if part.K >= 1 && rounds%part.K == 0 && rounds/part.K == period {
			return nil
		}
	case factorize.KindMinSep:
		if period >= part.B && (part.K == 0 || m <= part.K) {
			return nil
		}
	}
	return fmt.Errorf("fedopt: the data serves each client in %d of the %d rounds, %d apart (%d epochs, dataset.Dataset.Epochs), but the privacy record's participation is %v, whose sensitivity assumes fewer: calibrate the plan for participation epochs:%d", m, rounds, period, k, part, k)
}

// Learner is one learner's role in the online federated optimiser: it holds
// its stream of clients and, in round r, starts from the released model x^r,
// takes tau local steps on its clients r tau, ..., r tau + tau - 1 with
// clipped gradients, and returns its update: the sum of the tau clipped
// gradients. It never sees the noise or the other learners' data. A Learner
// is not safe for concurrent use; distinct learners are independent.
type Learner struct {
	model     dpmodel.Model
	data      Stream
	algo      Algorithm
	eta, clip float64
	tau       int
	z, g      []float64
}

// NewLearner returns a learner with model m and client stream data for the
// algorithm, local step and clipping bound of cfg, tau local steps per
// round and models of dimension dim. With cfg.Privacy, a stream that
// serves its clients in more rounds than the record's participation allows
// is refused (see [Stream]).
func NewLearner(m dpmodel.Model, data Stream, cfg Config, tau, dim int) (*Learner, error) {
	switch err := cfg.Validate(); {
	case err != nil:
		return nil, err
	case m == nil || data == nil:
		return nil, fmt.Errorf("fedopt: a learner needs a model and a stream of clients")
	case tau < 1 || dim < 1:
		return nil, fmt.Errorf("fedopt: learner with tau = %d and dimension %d, want both >= 1", tau, dim)
	}
	if cfg.Privacy != nil {
		if err := checkEpochs(cfg.Privacy, cfg.Privacy.Rounds, data); err != nil {
			return nil, err
		}
	}
	if err := CheckShape(data, -1, 0, tau); err != nil {
		return nil, err
	}
	return &Learner{
		model: m, data: data, algo: cfg.Algorithm, eta: cfg.Eta, clip: cfg.Clip, tau: tau,
		z: make([]float64, dim), g: make([]float64, dim),
	}, nil
}

// Dim returns the dimension of the models and updates.
func (l *Learner) Dim() int { return len(l.z) }

// Update runs round r from the released model x and writes the learner's
// update into u: sum_t clip(grad f^{r,t}(z^{r,t})) over its tau local steps
// z^{r,t+1} = z^{r,t} - eta clip(grad f^{r,t}(z^{r,t})), z^{r,0} = x (for
// the baselines, every gradient is taken at x and there are no local steps).
// With clipping bound B_g the update has norm at most tau B_g (up to a
// rounding within the margin of [UpdateBound]). A gradient with a NaN
// entry counts as zero and one with infinite entries as B_g along their
// signs ([Clip]); Update does not report them, so that whether an update
// is sent never depends on the learner's data (without clipping such an
// update is sent as it is, and the server refuses it). The result
// depends only on r and x.
func (l *Learner) Update(u []float64, r int, x []float64) error {
	return l.UpdateContext(context.Background(), u, r, x)
}

// checkEvery is the stride, in local steps, at which
// [Learner.UpdateContext] checks its context.
const checkEvery = 1024

// UpdateContext is [Learner.Update] that checks ctx every 1024 local
// steps (a round of tau = 2e9 steps takes minutes) and returns ctx.Err()
// if it is done; u is then incomplete and must not be sent. The update it
// completes is Update's, bit for bit.
func (l *Learner) UpdateContext(ctx context.Context, u []float64, r int, x []float64) error {
	if len(u) != len(l.z) || len(x) != len(l.z) {
		return fmt.Errorf("fedopt: learner update of length %d from a model of length %d, want %d", len(u), len(x), len(l.z))
	}
	copy(l.z, x)
	clear(u)
	at := l.z
	if !l.algo.LocalSteps() {
		at = x // gradients at x^r, no local steps
	}
	for t := 0; t < l.tau; t++ {
		if t%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		a, y := l.data.Sample(r, t)
		l.model.Grad(l.g, at, a, y)
		if l.clip > 0 {
			Clip(l.g, l.clip)
		}
		floats.Add(u, l.g)
		if l.algo.LocalSteps() {
			for k, v := range l.g {
				l.z[k] -= l.eta * v
			}
		}
	}
	// The tau clipped gradients sum to norm at most tau B_g in exact
	// arithmetic, but their float64 sum can exceed it by up to a relative
	// (tau-1) 2^-53 (1.03e-9 measured at tau = 4e7), past the server's
	// margin: scale
	// such a sum back to tau B_g (it only removes rounding), so that the
	// server never refuses an honest update. Below the margin nothing
	// changes, bit for bit. Where tau B_g overflows, the sum is scaled to
	// MaxFloat64, the server's bound then (Clip with +Inf would leave an
	// overflowed sum infinite).
	if l.clip > 0 && updateNorm(u) > UpdateBound(l.clip, l.tau) {
		Clip(u, min(float64(l.tau)*l.clip, math.MaxFloat64))
	}
	return nil
}

// UpdateBound returns the largest norm an update of a learner with clipping
// bound clip and tau local steps may have that a server accepts (the
// update's norm taken in exact arithmetic, [Server.CheckUpdate]): tau clip
// plus a relative 1e-9 for the rounding of the sum (the exact bound tau clip
// is what the sensitivity analysis uses; a [Learner] scales a sum that
// rounds past the margin back to tau clip, and [Server.Release] and
// [QuantizeUpdate] scale an accepted update above tau clip, in exact
// arithmetic, to exact norm at most tau clip). +Inf without clipping. Where
// that product overflows, the bound is math.MaxFloat64, the largest norm
// a float64 can state: every update whose norm is finite is then within
// tau clip, and one whose norm overflows is not (the bound used to be +Inf
// there, which accepted both).
func UpdateBound(clip float64, tau int) float64 {
	if clip == 0 {
		return math.Inf(1)
	}
	return min(float64(tau)*clip*(1+1e-9), math.MaxFloat64)
}
