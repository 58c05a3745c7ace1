package fedopt

import (
	"context"
	"fmt"

	"github.com/dpmf/dpmf/internal/par"
)

// SimOptions configure [Simulate].
type SimOptions struct {
	// Parallel computes the learners of each round in goroutines. The
	// results are identical bit for bit either way.
	Parallel bool
	// Observe, if not nil, is called with every released model x^r, from
	// the server's round at the start to R. x is the server's slice: copy
	// it to keep it.
	Observe func(r int, x []float64) error
	// OnRound, if not nil, is called after every round with the number of
	// rounds completed.
	OnRound func(done int)
	// SecureSum, if not nil, sums the learners' quantized updates of a
	// run with Config.Quantizer in the server's place: Simulate quantizes
	// every update ([QuantizeUpdate]), passes them, and releases the ring
	// sum it returns with [Server.ReleaseRingSum]. It is where a secure
	// aggregation protocol runs in process (experiment.Run runs
	// secagg.Run); a sum that is the ring sum of the present learners'
	// quantized updates releases the models Release would, bit for bit.
	SecureSum func(r int, quantized [][]uint64) (sum []uint64, present int, err error)
}

// Simulate connects a server and its learners in one process (learner i is
// learners[i]): from the server's current round to R, every learner
// computes its update from the released model and the server aggregates
// them and releases the next model. It is one way of connecting the roles;
// package fednet's networked server and learners are another, and give
// the same models bit for bit. It checks ctx every round and, within a
// learner's update, every 1024 local steps ([Learner.UpdateContext]), and
// returns ctx.Err() once it is done, with the server at the last round it
// released. Before the first round it refuses a learner whose stream
// serves its clients in more rounds than the server's privacy record's
// participation allows (see [Stream]), one Learner in two slots, and a
// learner whose clip, tau or local steps are not the server's (the
// baselines' sensitivity rests on each learner clipping every gradient
// to the server's B_g, which the server's norm check cannot see). Each
// learner's clients must be its own: learners that share a stream put its
// clients into a round twice, which Simulate cannot see.
func Simulate(ctx context.Context, srv *Server, learners []*Learner, opt SimOptions) error {
	if srv == nil {
		return &ParamError{Param: "server", Want: "a Server from NewServer"}
	}
	shape := srv.Shape()
	if len(learners) != shape.Learners {
		return fmt.Errorf("fedopt: %d learners for a server of %d", len(learners), shape.Learners)
	}
	q := srv.Config().Quantizer
	if opt.SecureSum != nil && q == nil {
		return &ParamError{Param: "SimOptions.SecureSum", Want: "a server with Config.Quantizer (secure aggregation)"}
	}
	updates, quantized := make([][]float64, len(learners)), make([][]uint64, len(learners))
	slot := make(map[*Learner]int, len(learners))
	for i, l := range learners {
		if l == nil {
			return &ParamError{Param: fmt.Sprintf("learners[%d]", i), Want: "a Learner from NewLearner"}
		}
		if j, ok := slot[l]; ok {
			// Its clients' samples would enter each round twice: the
			// direction's sensitivity doubles.
			return &ParamError{Param: fmt.Sprintf("learners[%d]", i), Value: fmt.Sprintf("learners[%d] again", j),
				Want: "a Learner of its own (one learner in two slots puts its clients into each round twice)"}
		}
		slot[l] = i
		if l.Dim() != shape.Dim {
			return fmt.Errorf("fedopt: learner %d has dimension %d, the server %d", i, l.Dim(), shape.Dim)
		}
		// The server's norm check bounds an update by tau B_g; what one
		// sample may do within it (the baselines' 2 B_g / n) rests on the
		// learner clipping each gradient to the server's B_g and taking
		// local steps exactly when the server's algorithm does.
		if cfg := srv.Config(); l.clip != cfg.Clip || l.algo.LocalSteps() != cfg.Algorithm.LocalSteps() || l.tau != shape.Tau {
			return &ParamError{Param: fmt.Sprintf("learners[%d]", i), Value: fmt.Sprintf("a learner of %v with clip %v and tau %d", l.algo, l.clip, l.tau),
				Want: fmt.Sprintf("one of the server's run: clip %v, tau %d, %s local steps", cfg.Clip, shape.Tau, map[bool]string{true: "with", false: "without"}[cfg.Algorithm.LocalSteps()])}
		}
		// The learners may have been made without the record: the
		// server's is the one the release is calibrated by.
		if err := checkEpochs(srv.Config().Privacy, shape.Rounds, l.data); err != nil {
			return fmt.Errorf("learner %d: %w", i, err)
		}
		if err := CheckShape(l.data, i, shape.Rounds, l.tau); err != nil {
			return fmt.Errorf("learner %d: %w", i, err)
		}
		updates[i] = make([]float64, shape.Dim)
		if opt.SecureSum != nil {
			quantized[i] = make([]uint64, shape.Dim)
		}
	}
	workers := 1 // goroutines computing the updates
	if opt.Parallel {
		workers = len(learners)
	}
	for !srv.Done() {
		if err := ctx.Err(); err != nil {
			return err
		}
		r, x := srv.Round(), srv.Model()
		if opt.Observe != nil {
			if err := opt.Observe(r, x); err != nil {
				return err
			}
		}
		// The lengths are checked above: the only error is ctx's, which
		// stops a goroutine.
		par.Pool(len(learners), workers, func(_, i int) bool {
			return learners[i].UpdateContext(ctx, updates[i], r, x) == nil
		})
		if err := ctx.Err(); err != nil {
			return err // some updates are incomplete
		}
		if opt.SecureSum != nil {
			cfg := srv.Config()
			for i, u := range updates {
				if err := QuantizeUpdate(*q, quantized[i], u, cfg.Clip, shape.Tau); err != nil {
					return fmt.Errorf("learner %d, round %d: %w", i, r, err)
				}
			}
			sum, present, err := opt.SecureSum(r, quantized)
			if err != nil {
				return fmt.Errorf("fedopt: round %d: secure sum: %w", r, err)
			}
			if err := srv.ReleaseRingSum(sum, present); err != nil {
				return err
			}
		} else if err := srv.Release(updates); err != nil {
			return err
		}
		if opt.OnRound != nil {
			opt.OnRound(r + 1)
		}
	}
	if opt.Observe != nil {
		return opt.Observe(srv.Round(), srv.Model())
	}
	return nil
}
