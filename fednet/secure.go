package fednet

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/dpmf/dpmf/plan"
	flv1 "github.com/dpmf/dpmf/proto/dpmf/fl/v1"
	"github.com/dpmf/dpmf/secagg"
)

// SecureAggregation configures a server whose rounds run the
// secure-aggregation protocol of package secagg (Bonawitz et al., CCS
// 2017): the server learns only the sum of the surviving learners'
// quantized updates. See docs/distributed.md, "Secure aggregation".
type SecureAggregation struct {
	// Threshold is T, the least number of learners every phase must keep:
	// n/2 < T <= n (0: plan.DefaultThreshold, floor(2n/3) + 1). It
	// takes the place of ServerOptions.MinLearners.
	Threshold int
	// Colluders is c, the most learners the run assumes may collude with
	// the server: 0 <= c < T and 2T > n + c (plan.CheckColluders; 0, the
	// default, assumes none). The server learns no more than the rounds'
	// sums only against that many. The run's record (run.json) keeps it,
	// so a restart cannot change it, and Join announces it: a learner
	// refuses a run whose T and c break the rule.
	Colluders int
}

// secureFromPlan parses opt.Plan (nil if there is none) and takes its
// secure aggregation: it sets opt.SecureAggregation and
// opt.Config.Quantizer when they are nil, and refuses a plan that
// disagrees with them.
func secureFromPlan(opt *ServerOptions) (*plan.Plan, error) {
	if opt.Plan == nil {
		return nil, nil
	}
	p, err := plan.Parse(opt.Plan)
	if err != nil {
		return nil, fmt.Errorf("fednet: the run's plan: %w", err)
	}
	psa := p.SecureAggregation
	switch {
	case psa == nil && opt.SecureAggregation != nil:
		return nil, errors.New("fednet: secure aggregation for a run whose plan has none (its calibration lacks the quantization term)")
	case psa == nil:
		return p, nil
	case opt.SecureAggregation != nil && opt.SecureAggregation.Threshold != psa.Threshold && opt.SecureAggregation.Threshold != 0:
		return nil, fmt.Errorf("fednet: secure-aggregation threshold %d, the run's plan has %d", opt.SecureAggregation.Threshold, psa.Threshold)
	case opt.SecureAggregation != nil && opt.SecureAggregation.Colluders != psa.Colluders && opt.SecureAggregation.Colluders != 0:
		return nil, fmt.Errorf("fednet: secure-aggregation colluders %d, the run's plan has %d", opt.SecureAggregation.Colluders, psa.Colluders)
	}
	opt.SecureAggregation = &SecureAggregation{Threshold: psa.Threshold, Colluders: psa.Colluders}
	q := psa.Quantizer()
	switch {
	case opt.Config.Quantizer == nil:
		opt.Config.Quantizer = &q
	case *opt.Config.Quantizer != q:
		return nil, fmt.Errorf("fednet: quantizer of %d scale bits, the run's plan has %d", opt.Config.Quantizer.ScaleBits, q.ScaleBits)
	}
	return p, nil
}

// checkSecure checks the secure-aggregation options and sets the default
// threshold; MinLearners becomes the threshold.
func checkSecure(opt *ServerOptions) error {
	sa := opt.SecureAggregation
	if sa == nil {
		return nil
	}
	c := *sa
	n := opt.Shape.Learners
	if n < 2 || n > secagg.MaxLearners {
		return fmt.Errorf("fednet: secure aggregation with %d learners, want 2..%d", n, secagg.MaxLearners)
	}
	c.Threshold = cmp.Or(c.Threshold, plan.DefaultThreshold(n))
	if 2*c.Threshold <= n || c.Threshold > n {
		return fmt.Errorf("fednet: secure-aggregation threshold %d for %d learners, want n/2 < T <= n", c.Threshold, n)
	}
	if err := plan.CheckColluders(n, c.Threshold, c.Colluders); err != nil {
		return fmt.Errorf("fednet: secure-aggregation %w", err)
	}
	if opt.Shape.Dim > secagg.MaxDim {
		return fmt.Errorf("fednet: secure aggregation of dimension %d, want at most %d", opt.Shape.Dim, secagg.MaxDim)
	}
	if opt.Config.Quantizer == nil {
		return errors.New("fednet: secure aggregation needs the quantizer of the run's plan (Config.Quantizer)")
	}
	if opt.MinLearners != 0 && opt.MinLearners != n && opt.MinLearners != c.Threshold {
		return fmt.Errorf("fednet: minimum learners %d with secure aggregation of threshold %d: the threshold is the minimum (leave MinLearners 0)", opt.MinLearners, c.Threshold)
	}
	opt.MinLearners = c.Threshold
	opt.SecureAggregation = &c
	return nil
}

// secRound is the open round's run of the protocol: its attempt, the open
// phase, who may answer it and who did, and what each phase's close gave.
type secRound struct {
	ctx      secagg.Context
	agg      *secagg.Aggregator
	phase    secagg.Phase
	expected []bool // may answer the open phase: all, U1, U2, U3, U4
	answered []bool
	hashes   [][sha256.Size]byte // per learner: its message of the open phase
	tally                        // the answers: want expected, quorum T
	// msgs is what the open phase serves every learner: U1's
	// advertisements (phase 1) or U4's signatures (phase 4).
	msgs    [][]byte
	changed chan struct{} // closed when the open phase closes
	failed  error         // the attempt failed (fewer than T)
	// refused holds, for each learner that said it answered phase 4 of
	// this round in another attempt (SecAggRequest.unmasked_attempt),
	// that attempt: it takes part in phases 0-3 and never in phase 4
	// (noteUnmasked). A server opens one attempt per process, so these
	// are the refusals this server learnt; a restart learns them again.
	refused map[int]uint32
}

// ErrRoundStuck is returned by [Server.Run] when the open secure round can
// no longer complete: more than n - T learners answered its unmask phase
// in another attempt than the open one, and a learner answers phase 4 of a
// round in one attempt only, so no attempt can collect T answers. The run
// cannot release the round; the rounds it released stand. A restart over
// the same state directory stops again once the learners tell it (the
// server releases nothing meanwhile): start a new run in a fresh state
// directory.
var ErrRoundStuck = errors.New("fednet: the secure round can no longer complete")

// secEvent is what the server received from a learner in a secure round,
// as the test-only recording hook (serverHooks.record) sees it: the phase
// and the message's bytes (for phase 2, y_u as uint64s).
type secEvent struct {
	Round   int
	Attempt uint32
	Phase   secagg.Phase
	From    int
	Bytes   []byte
	Masked  []uint64
}

// serverHooks are test-only observation points of a Server.
type serverHooks struct {
	// record sees every protocol message the server receives.
	record func(secEvent)
	// beforeSnapshot is called when phase p has closed, before its
	// snapshot is written; afterClose after the close was published. An
	// error from either is a simulated crash: Run returns it at once,
	// writing and publishing nothing more.
	beforeSnapshot, afterClose func(round int, attempt uint32, p secagg.Phase) error
	// sum sees the unmasked ring sum of every round.
	sum func(round int, sum []uint64)
	// release is called in a secure round's release with step
	// "unmasked" when the sum is known and nothing is written, and
	// "released" when x^{round+1} and its mark are written, before the
	// next round's attempt is opened. An error is a simulated crash there.
	release func(round int, step string) error
}

// open opens phase p of the aggregator for all learners (phase 0) or the
// survivors of phase p-1.
func (sr *secRound) open(p secagg.Phase) error {
	n := sr.ctx.N
	sr.phase, sr.tally = p, newTally()
	sr.expected, sr.answered, sr.hashes = slices.Repeat([]bool{p == secagg.PhaseAdvertise}, n), make([]bool, n), make([][sha256.Size]byte, n)
	for _, i := range sr.agg.Accepted(p - 1) {
		sr.expected[i] = true
	}
	if p == secagg.PhaseUnmask {
		// A learner that unmasked another attempt will not answer.
		for i := range sr.refused {
			sr.expected[i] = false
		}
	}
	if sr.want() == 0 {
		close(sr.full) // nobody can answer: the phase closes at once
	}
	if sr.changed == nil {
		sr.changed = make(chan struct{})
	}
	var err error
	switch p {
	case secagg.PhaseShares:
		sr.msgs, err = marshalAll(sr.agg.Roster())
	case secagg.PhaseUnmask:
		sr.msgs, err = marshalAll(sr.agg.Signatures())
	}
	return err
}

// marshalAll returns the encodings of ms.
func marshalAll[M encoding.BinaryMarshaler](ms []M) ([][]byte, error) {
	out := make([][]byte, len(ms))
	for k, m := range ms {
		var err error
		if out[k], err = m.MarshalBinary(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// want is the number of learners expected in the open phase.
func (sr *secRound) want() int {
	k := 0
	for _, e := range sr.expected {
		if e {
			k++
		}
	}
	return k
}

// answer records that learner i answered the open phase with a message of
// hash h.
func (sr *secRound) answer(i int, h [sha256.Size]byte) {
	sr.answered[i], sr.hashes[i] = true, h
	sr.add(sr.want(), sr.ctx.T)
}

// drop removes learner i, if it has not answered, from the learners the
// open phase waits for: the phase closes as soon as the others answered.
func (sr *secRound) drop(i int) {
	if !sr.expected[i] || sr.answered[i] {
		return
	}
	// Until now got < want, so full is open.
	sr.expected[i] = false
	if sr.got == sr.want() {
		close(sr.full)
	}
}

// noteUnmasked takes learner i's word (SecAggRequest.unmasked_attempt)
// that it answered the unmask phase of round r in attempt a. A learner
// answers phase 4 of a round in one attempt only (learnerState.unmasked):
// with a other than the open attempt it answers phase 4 of no attempt this
// server has or may still open for r (the attempts only grow, each with
// fresh keys, so even its recorded answer, resent in a later attempt
// numbered a, would be refused: its shares are checked against the
// dealers' commitments). Such a learner is counted, and no longer waited
// for in phase 4; once more than n - T learners refused, no attempt can
// collect T unmask answers, and the server stops with ErrRoundStuck (the
// caller holds s.mu).
//
// The word is not checked, and need not be: a learner that claims it
// falsely only withholds its own unmask answer, which it could do anyway
// by staying away. Counting it as unable to take part is safe for privacy:
// it never makes the server unmask or release anything. Nor can claims
// stop a run that could complete without the claimants: the run stops
// only when they are more than n - T, so that the others are fewer than
// T, and the word of a learner whose phase-4 answer of the open attempt
// is in is ignored. The first word of a learner stands for the server's
// life (a claim withdrawn changes nothing), so the server logs at most
// one refusal per learner.
func (s *Server) noteUnmasked(i, r int, a uint32) {
	sr := s.sec
	if s.fault != nil || sr == nil || r != s.round || a == sr.ctx.Attempt {
		return
	}
	if _, ok := sr.refused[i]; ok || sr.phase == secagg.PhaseUnmask && sr.answered[i] {
		// Counted already; or its answer is in, whatever it says now.
		return
	}
	if sr.refused == nil {
		sr.refused = map[int]uint32{}
	}
	sr.refused[i] = a
	if sr.phase == secagg.PhaseUnmask {
		sr.drop(i)
	}
	n, T, open := sr.ctx.N, sr.ctx.T, sr.ctx.Attempt
	s.log.Warn("learner refuses the open attempt", "learner", i, "round", r, "attempt", open, "unmasked_attempt", a, "refused", len(sr.refused), "threshold", T)
	if n-len(sr.refused) >= T {
		return
	}
	ids := slices.Sorted(maps.Keys(sr.refused))
	who := make([]string, len(ids))
	for k, j := range ids {
		who[k] = fmt.Sprintf("learner %d in attempt %d", j, sr.refused[j])
	}
	s.fault = fmt.Errorf("%w: round %d, attempt %d: %d of %d learners answered its unmask phase in another attempt (%s) and refuse every other, leaving %d, fewer than the threshold %d; this run cannot release round %d (the models released up to x^%d stand): start a new run in a fresh state directory",
		ErrRoundStuck, r, open, len(ids), n, strings.Join(who, ", "), n-len(ids), T, r, r)
	close(s.faulted)
	s.log.Error("round cannot complete", "round", r, "attempt", open, "refused", len(ids), "learners", n, "threshold", T, "reason", s.fault.Error())
}

// closePhase closes the open phase through the aggregator and opens the
// next. It returns secagg.ErrTooFew (wrapped) when fewer than T answered.
func (sr *secRound) closePhase() error {
	var err error
	switch sr.phase {
	case secagg.PhaseAdvertise:
		_, err = sr.agg.CloseAdvertise()
	case secagg.PhaseShares:
		_, err = sr.agg.CloseShares()
	case secagg.PhaseMasked:
		_, err = sr.agg.CloseMasked()
	case secagg.PhaseConsistency:
		_, err = sr.agg.CloseConsistency()
	default:
		return fmt.Errorf("fednet: closing phase %v", sr.phase)
	}
	if err != nil {
		return err
	}
	return sr.open(sr.phase + 1)
}

// record hands learner i's message of phase p (its encoding b) to the
// aggregator.
func (sr *secRound) record(i int, p secagg.Phase, b []byte) error {
	switch p {
	case secagg.PhaseAdvertise:
		return accept(b, i, func(m secagg.Advertise) int { return m.From }, sr.agg.Advertised)
	case secagg.PhaseShares:
		return accept(b, i, func(m secagg.Shares) int { return m.From }, sr.agg.Shared)
	case secagg.PhaseConsistency:
		return accept(b, i, func(m secagg.Signature) int { return m.From }, sr.agg.Signed)
	case secagg.PhaseUnmask:
		return accept(b, i, func(m secagg.Unmask) int { return m.From }, sr.agg.Unmasked)
	}
	return fmt.Errorf("no message for phase %v through SecAgg", p)
}

// accept decodes b, checks that it is learner i's message (from names its
// sender) and hands it to the aggregator's record.
func accept[M any, PM interface {
	*M
	encoding.BinaryUnmarshaler
}](b []byte, i int, from func(M) int, record func(M) error) error {
	var m M
	if err := PM(&m).UnmarshalBinary(b); err != nil {
		return err
	}
	if f := from(m); f != i {
		return fmt.Errorf("a message from learner %d sent by learner %d", f, i)
	}
	return record(m)
}

// secState is what the server asks of learner i in round sr (the caller
// holds s.mu).
func (s *Server) secState(i, r int) *flv1.SecAggResponse {
	resp := &flv1.SecAggResponse{Round: int32(r), Run: s.run[:]}
	sr := s.sec
	if r < s.round || sr == nil {
		resp.State = flv1.SecAggState_SEC_AGG_STATE_DONE
		s.submitted[i] = max(s.submitted[i], r)
		return resp
	}
	resp.Attempt, resp.Phase = sr.ctx.Attempt, int32(sr.phase)
	switch {
	case !sr.expected[i]:
		resp.State = flv1.SecAggState_SEC_AGG_STATE_DROPPED
		s.submitted[i] = max(s.submitted[i], r)
	case sr.answered[i]:
		resp.State = flv1.SecAggState_SEC_AGG_STATE_WAIT
	default:
		resp.State = flv1.SecAggState_SEC_AGG_STATE_ANSWER
		switch sr.phase {
		case secagg.PhaseShares:
			resp.Messages = sr.msgs
		case secagg.PhaseMasked:
			for _, e := range sr.agg.Inbox(i) {
				b, err := e.MarshalBinary()
				if err == nil {
					resp.Messages = append(resp.Messages, b)
				}
			}
		case secagg.PhaseConsistency:
			resp.Survivors = convert[int32](sr.agg.Accepted(secagg.PhaseMasked))
		case secagg.PhaseUnmask:
			resp.Survivors, resp.Messages = convert[int32](sr.agg.Accepted(secagg.PhaseMasked)), sr.msgs
		}
	}
	return resp
}

// secureError returns why a secure-aggregation call of learner i for round
// r, attempt a and phase p may not proceed, or nil (the caller holds
// s.mu).
func (s *Server) secureError(call string, i, r int, a uint32, p secagg.Phase) *rejection {
	sr := s.sec
	switch {
	case s.fault != nil:
		return refusal(codes.FailedPrecondition, call, i, r, "%v", s.fault)
	case r != s.round || sr == nil:
		return refusal(codes.FailedPrecondition, call, i, r, "message for round %d, the open round is %d", r, s.round)
	case a != sr.ctx.Attempt:
		return refusal(codes.FailedPrecondition, call, i, r, "message for attempt %d of round %d, the open attempt is %d", a, r, sr.ctx.Attempt)
	case sr.failed != nil:
		return refusal(codes.Unavailable, call, i, r, "attempt %d of round %d failed: %v", a, r, sr.failed)
	case s.halted:
		return refusal(codes.Unavailable, call, i, r, "the server stopped; round %d's phase will not close", r)
	case p != sr.phase:
		return refusal(codes.FailedPrecondition, call, i, r, "message for phase %d (%v), the open phase is %d (%v)", int(p), p, int(sr.phase), sr.phase)
	case !sr.expected[i]:
		return refusal(codes.FailedPrecondition, call, i, r, "learner %d is not among the learners of phase %d (%v) of attempt %d", i, int(p), p, a)
	}
	return nil
}

// SecAgg implements the Federation service: one message of the
// secure-aggregation protocol, or a poll. The answer waits (up to
// ServerOptions.MaxWait and the call's deadline) while the learner has
// answered the open phase and it has not closed.
func (s *Server) SecAgg(ctx context.Context, req *flv1.SecAggRequest) (*flv1.SecAggResponse, error) {
	const call = "SecAgg"
	if !s.ok() {
		return nil, status.Error(codes.FailedPrecondition, errNoServer.Error())
	}
	i, r := int(req.GetLearner()), int(req.GetRound())
	if rj := s.learnerError(ctx, call, i); rj != nil {
		return nil, s.logged(rj)
	}
	if s.opt.SecureAggregation == nil {
		return nil, s.reject(codes.FailedPrecondition, call, i, r, "the run does not use secure aggregation")
	}
	if rj := s.polls.acquire(call, i, true); rj != nil {
		return nil, s.logged(rj)
	}
	defer s.polls.release(i, true)
	select {
	case <-s.closed:
		// Run returned: no phase of the open round closes any more. A
		// learner that could only sit it out would otherwise be answered
		// ANSWER for ever; it retries up to its GiveUp, as with a server
		// that is down. The fault's line and a released round's DONE
		// are still served; nothing more is taken, claims included.
		s.mu.Lock()
		open := s.fault == nil && r == s.round && s.sec != nil
		s.mu.Unlock()
		if open {
			return nil, status.Errorf(codes.Unavailable, "the server stopped; round %d's phase will not close", r)
		}
	default:
	}
	if req.UnmaskedAttempt != nil {
		s.mu.Lock()
		s.noteUnmasked(i, r, req.GetUnmaskedAttempt())
		s.mu.Unlock()
	}
	if req.GetHasMessage() {
		p := secagg.Phase(req.GetPhase())
		if p == secagg.PhaseMasked {
			return nil, s.reject(codes.InvalidArgument, call, i, r, "the masked input (phase 2) goes through SubmitMasked")
		}
		s.mu.Lock()
		if rj := s.secureError(call, i, r, req.GetAttempt(), p); rj != nil {
			s.mu.Unlock()
			return nil, s.logged(rj)
		}
		sr := s.sec
		h := sha256.Sum256(req.GetMessage())
		switch {
		case sr.answered[i] && sr.hashes[i] == h:
			// The same message again (a retry after a lost answer).
		case sr.answered[i]:
			s.mu.Unlock()
			return nil, s.reject(codes.AlreadyExists, call, i, r, "learner %d already answered phase %d (%v) of attempt %d with another message", i, int(p), p, sr.ctx.Attempt)
		default:
			if err := sr.record(i, p, req.GetMessage()); err != nil {
				s.mu.Unlock()
				return nil, s.reject(codes.InvalidArgument, call, i, r, "phase %d (%v) message: %s", int(p), p, strings.TrimPrefix(err.Error(), "secagg: "))
			}
			if s.hooks.record != nil {
				s.hooks.record(secEvent{Round: r, Attempt: sr.ctx.Attempt, Phase: p, From: i, Bytes: slices.Clone(req.GetMessage())})
			}
			sr.answer(i, h)
		}
		s.mu.Unlock()
	}
	wait := time.NewTimer(s.opt.MaxWait)
	defer wait.Stop()
	for {
		s.mu.Lock()
		if s.fault != nil {
			s.mu.Unlock()
			return nil, status.Error(codes.FailedPrecondition, s.faultErr().Error())
		}
		if open := s.round; r > open {
			s.mu.Unlock()
			return nil, s.reject(codes.FailedPrecondition, call, i, r, "round %d is not open, the open round is %d", r, open)
		}
		if sr := s.sec; sr != nil && sr.failed != nil && r == s.round {
			a := sr.ctx.Attempt
			s.mu.Unlock()
			return nil, s.reject(codes.Unavailable, call, i, r, "attempt %d of round %d failed (fewer learners than the threshold): the server stops; a restart opens the next attempt", a, r)
		}
		if s.halted && r == s.round {
			// A close that failed (its snapshot not written, or the next
			// round's attempt not opened): what it changed in memory is
			// not on disk, and a restart resumes what is.
			s.mu.Unlock()
			return nil, status.Errorf(codes.Unavailable, "the server stopped; round %d's phase will not close", r)
		}
		resp := s.secState(i, r)
		var changed <-chan struct{}
		if s.sec != nil {
			changed = s.sec.changed
		}
		rel := s.released
		s.mu.Unlock()
		if resp.State != flv1.SecAggState_SEC_AGG_STATE_WAIT {
			return resp, nil
		}
		select {
		case <-changed:
		case <-rel:
		case <-s.faulted:
		case <-s.closed:
			return nil, status.Errorf(codes.Unavailable, "the server stopped; round %d's phase will not close", r)
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		case <-wait.C:
			return resp, nil
		}
	}
}

// SubmitMasked implements the Federation service: a learner's masked
// input y_u (phase 2), under the same limits as SubmitUpdate. It is added
// to the round's sum at once and not kept.
func (s *Server) SubmitMasked(stream grpc.ClientStreamingServer[flv1.MaskedChunk, flv1.SubmitResponse]) error {
	const call = "SubmitMasked"
	receive := func(id int, perLearner *int) received[uint64] {
		return receiveVector(s, stream.Context(), stream.Recv, call, "masked input", id, perLearner, (*flv1.MaskedChunk).GetAttempt, s.maskedError)
	}
	return upload(s, stream, call, true, receive, func(res received[uint64]) error {
		s.mu.Lock()
		if rj := s.maskedError(res.i, res.r, res.a); rj != nil {
			s.mu.Unlock()
			return s.logged(rj)
		}
		sr := s.sec
		if err := sr.agg.Masked(res.i, res.x); err != nil {
			s.mu.Unlock()
			return s.reject(codes.InvalidArgument, call, res.i, res.r, "masked input: %s", strings.TrimPrefix(err.Error(), "secagg: "))
		}
		if s.hooks.record != nil {
			s.hooks.record(secEvent{Round: res.r, Attempt: res.a, Phase: secagg.PhaseMasked, From: res.i, Masked: slices.Clone(res.x)})
		}
		sr.answer(res.i, [sha256.Size]byte{})
		s.mu.Unlock()
		return stream.SendAndClose(&flv1.SubmitResponse{Round: int32(res.r)})
	})
}

// maskedError is secureError for learner i's masked input of round r,
// attempt a, refusing a second one (the caller holds s.mu).
func (s *Server) maskedError(i, r int, a uint32) *rejection {
	const call = "SubmitMasked"
	if rj := s.secureError(call, i, r, a, secagg.PhaseMasked); rj != nil {
		return rj
	}
	if s.sec.answered[i] {
		return refusal(codes.AlreadyExists, call, i, r, "duplicate masked input: learner %d already sent one for attempt %d", i, a)
	}
	return nil
}

// runSecureRound runs the protocol of the open round to its end and
// releases the next model.
func (s *Server) runSecureRound(ctx context.Context) error {
	for {
		// The open phase may close when every expected learner answered,
		// QuorumGrace passed since T did, or RoundTimeout passed.
		s.mu.Lock()
		sr := s.sec
		r, a, p, full, quorum := s.round, sr.ctx.Attempt, sr.phase, sr.full, sr.quorum
		s.mu.Unlock()
		if err := s.awaitRound(ctx, full, quorum); err != nil {
			return err
		}
		if p == secagg.PhaseUnmask {
			return s.underState(func() error { return s.releaseSecure(sr) })
		}
		if err := s.underState(func() error { return s.closeSecPhase(sr) }); err != nil {
			return err
		}
		if s.hooks.afterClose != nil {
			if err := s.hooks.afterClose(r, a, p); err != nil {
				return err
			}
		}
	}
}

// closeSecPhase closes the open phase of sr (before phase 4) and writes
// its snapshot; only then are its results served. The caller holds
// s.stMu and s.mu.
func (s *Server) closeSecPhase(sr *secRound) error {
	r, p, a, got := s.round, sr.phase, sr.ctx.Attempt, sr.got
	err := sr.closePhase()
	if err == nil && s.hooks.beforeSnapshot != nil {
		if err := s.hooks.beforeSnapshot(r, a, p); err != nil {
			return err
		}
	}
	if err == nil {
		err = s.writeSecSnapshot(sr)
	}
	switch {
	case errors.Is(err, secagg.ErrTooFew):
		return s.failAttempt(sr, err)
	case err != nil:
		return fmt.Errorf("fednet: round %d, attempt %d, closing phase %d (%v): %w", r, a, int(p), p, err)
	}
	// Only now, with the close on disk, are its results served.
	prev := sr.changed
	sr.changed = make(chan struct{})
	close(prev)
	s.log.Info("phase closed", "round", r, "attempt", a, "phase", p.String(), "answers", got)
	return nil
}

// failAttempt records that the open phase of sr closed with fewer than T
// learners (err): the attempt failed, and a restart opens the next. The
// caller holds s.stMu and s.mu.
func (s *Server) failAttempt(sr *secRound, err error) error {
	sr.failed = err
	werr := s.writeSecSnapshot(sr)
	close(sr.changed)
	r, a, p := s.round, sr.ctx.Attempt, sr.phase
	s.log.Error("round failed", "round", r, "attempt", a, "phase", p.String(), "answers", sr.got, "threshold", sr.ctx.T)
	err = fmt.Errorf("%w: round %d, attempt %d: phase %d (%v) closed with %d learners, fewer than the threshold %d; released rounds are kept, restart the server to start attempt %d", ErrTooFewLearners, r, a, int(p), p, sr.got, sr.ctx.T, a+1)
	return errors.Join(err, werr)
}

// releaseSecure closes phase 4: the aggregator removes the masks, the
// ring sum is released through fedopt, written and published. The caller
// holds s.stMu and s.mu.
func (s *Server) releaseSecure(sr *secRound) error {
	r, n := s.round, s.opt.Shape.Learners
	sum, u3, err := sr.agg.Finish()
	if errors.Is(err, secagg.ErrTooFew) {
		return s.failAttempt(sr, err)
	}
	if err != nil {
		return fmt.Errorf("fednet: round %d, attempt %d, unmasking: %w", r, sr.ctx.Attempt, err)
	}
	if s.hooks.sum != nil {
		s.hooks.sum(r, slices.Clone(sum))
	}
	if s.hooks.release != nil {
		if err := s.hooks.release(r, "unmasked"); err != nil {
			return err
		}
	}
	if err := s.core.ReleaseRingSum(sum, len(u3)); err != nil {
		return err
	}
	x := slices.Clone(s.core.Model())
	if err := s.st.release(Released{Round: r + 1, Updates: len(u3), X: x}); err != nil {
		return fmt.Errorf("fednet: writing x^%d: %w", r+1, err)
	}
	s.log.Info("released", "round", r+1, "updates", len(u3), "learners", n, "attempt", sr.ctx.Attempt)
	if s.hooks.release != nil {
		if err := s.hooks.release(r, "released"); err != nil {
			return err
		}
	}
	s.round, s.model = r+1, x
	s.digests = append(s.digests, s.st.head)
	close(sr.changed)
	s.sec = nil
	if s.round < s.opt.Shape.Rounds {
		if s.sec, err = s.openSecRound(0); err != nil {
			return err
		}
	}
	close(s.released)
	s.released = make(chan struct{})
	return nil
}

// secContext returns the protocol's context of attempt a of the open
// round.
func (s *Server) secContext(a uint32) secagg.Context {
	return secagg.Context{Run: s.run, Round: s.round, Attempt: a, N: s.opt.Shape.Learners,
		T: s.opt.SecureAggregation.Threshold, Dim: s.opt.Shape.Dim}
}

// openSecRound opens attempt a of the open round and writes its snapshot,
// so that the attempt counter is on disk before any learner is served.
func (s *Server) openSecRound(a uint32) (*secRound, error) {
	c := s.secContext(a)
	agg, err := secagg.NewAggregator(c)
	if err != nil {
		return nil, fmt.Errorf("fednet: secure aggregation: %w", err)
	}
	sr := &secRound{ctx: c, agg: agg}
	if err := sr.open(secagg.PhaseAdvertise); err != nil {
		return nil, err
	}
	if err := s.writeSecSnapshot(sr); err != nil {
		return nil, err
	}
	return sr, nil
}
