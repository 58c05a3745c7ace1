package fedopt

import (
	"context"
	"fmt"
	"sync"
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
}

// Simulate connects a server and its learners in one process (learner i is
// learners[i]): from the server's current round to R, every learner
// computes its update from the released model and the server aggregates
// them and releases the next model. It is one way of connecting the roles;
// package fednet's networked server and learners are another, and give
// the same models bit for bit.
func Simulate(ctx context.Context, srv *Server, learners []*Learner, opt SimOptions) error {
	if srv == nil {
		return &ParamError{Param: "server", Want: "a Server from NewServer"}
	}
	for i, l := range learners {
		if l == nil {
			return &ParamError{Param: fmt.Sprintf("learners[%d]", i), Want: "a Learner from NewLearner"}
		}
	}
	shape := srv.Shape()
	if len(learners) != shape.Learners {
		return fmt.Errorf("fedopt: %d learners for a server of %d", len(learners), shape.Learners)
	}
	updates := make([][]float64, len(learners))
	for i, l := range learners {
		if l.Dim() != shape.Dim {
			return fmt.Errorf("fedopt: learner %d has dimension %d, the server %d", i, l.Dim(), shape.Dim)
		}
		updates[i] = make([]float64, shape.Dim)
	}
	var wg sync.WaitGroup
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
		if opt.Parallel {
			for i, l := range learners {
				wg.Go(func() { _ = l.Update(updates[i], r, x) }) // lengths checked above
			}
			wg.Wait()
		} else {
			for i, l := range learners {
				_ = l.Update(updates[i], r, x)
			}
		}
		if err := srv.Release(updates); err != nil {
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
