package secagg

import "io"

// DropPlan says which learner stops before which phase: learner id is absent
// from that phase and every later one. A learner not in the plan never
// drops.
type DropPlan map[int]Phase

// Event is one message the aggregator received in Run: Message is an
// Advertise, Shares, []uint64 (a masked input, From's y), Signature or Unmask.
type Event struct {
	Phase   Phase
	From    int
	Message any
}

// Run runs the protocol in process: learner u's input is inputs[u], learners
// drop by drop, every key comes from rand, and hook (if not nil) sees every
// message the aggregator receives. It returns the sum over the survivors U3
// of their inputs and U3.
func Run(ctx Context, inputs [][]uint64, drop DropPlan, rand io.Reader, hook func(Event)) ([]uint64, []int, error) {
	return nil, nil, errNotImplemented
}
