package fednet

import (
	"cmp"
	"context"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/netutil"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// DefaultCallsPerLearner is the default of ServerOptions.MaxUploadsPerLearner
// and MaxModelStreamsPerLearner: one call and a retry that overlaps it
// while the server has not yet noticed that the first one was abandoned.
const DefaultCallsPerLearner = 2

// MaxStreamsPerConn is the most calls one connection may have in progress
// at once (grpc.MaxConcurrentStreams, set by ServerOptionsGRPC); further
// calls wait on the client's side, where they cost the server nothing.
const MaxStreamsPerConn = 16

// MaxHeaderListSize is the most bytes of HTTP/2 headers one call may
// send (grpc.MaxHeaderListSize, set by ServerOptionsGRPC): a learner's
// calls carry a few hundred. gRPC's default, 16 MiB (8 KiB is the
// default it is moving to), would let each call the limits admit hold
// that much while it waits; a call over the limit is reset before it
// reaches the server's code. A learner takes at most as much of the
// server's headers ([RunLearner]).
const MaxHeaderListSize = 8 << 10

// StreamWindow and ConnWindow are the server's HTTP/2 receive windows:
// the most bytes a peer may send on one call, and on one connection in
// all, before the server's code has read them (grpc.InitialWindowSize and
// grpc.InitialConnWindowSize, set by ServerOptionsGRPC). Fixed windows
// turn off gRPC's bandwidth-delay estimate, which grows both up to 16 MiB
// on a fast link: received data that no handler has read yet is then
// bounded by StreamWindow per call (gRPC acknowledges a connection's data
// as it arrives, read or not, so ConnWindow bounds what is in flight on a
// connection rather than what the server holds: a connection's
// MaxStreamsPerConn calls may hold 8 MiB unread). TestPlainHostileUploads
// measured the heap after a collection grow by 39 to 40 MiB under its
// flood with the grown windows and by 18 to 24 MiB with these; its live
// heap grows by 14 to 16 MiB, against a bound of 44 MiB derived from the
// limits. An upload on one call then moves at most StreamWindow bytes per
// round trip: 10 MiB/s at 50 ms.
const (
	StreamWindow = 512 << 10
	ConnWindow   = 1 << 20
)

// ConnectionsPerLearner and SpareConnections give DefaultMaxConnections.
const (
	ConnectionsPerLearner = 4
	SpareConnections      = 16
)

// DefaultMaxConnections returns the default number of connections a
// server of n learners serves at once (LimitConnections):
// ConnectionsPerLearner per learner (one in use, and room for reconnects
// while the old connection closes) plus SpareConnections.
func DefaultMaxConnections(n int) int {
	return ConnectionsPerLearner*max(n, 0) + SpareConnections
}

// LimitConnections returns l accepting at most n connections at once;
// further ones wait in the operating system's queue until one closes.
// What a peer holds before its calls reach the server's limits (an idle
// connection's buffers; requests whose stream never ends, up to
// MaxStreamsPerConn messages of MaxMsgSize a connection, which gRPC keeps
// until the stream ends) is then bounded by n times that, whatever peers
// send. n < 1 is taken as 1.
func LimitConnections(l net.Listener, n int) net.Listener {
	return netutil.LimitListener(l, max(n, 1))
}

// Log rate limit of the lines about refused calls: a burst of logBurst
// lines, then logRate lines a second; the lines dropped are counted in the
// next line that gets through (suppressed=N).
const (
	logBurst = 50
	logRate  = 10
)

// slots counts the calls of one kind in progress, in total and per
// learner, against their limits.
type slots struct {
	what        string // "uploads" or "model streams"
	max, perMax int
	mu          sync.Mutex
	total       int
	perLearner  []int
}

func newSlots(what string, learners, max, perMax int) *slots {
	return &slots{what: what, max: max, perMax: perMax, perLearner: make([]int, learners)}
}

// acquire takes a slot in the total (if total) and for learner i (if
// i >= 0) for a call, both or neither; the refusal says which limit is
// reached.
func (l *slots) acquire(call string, i int, total bool) *rejection {
	l.mu.Lock()
	defer l.mu.Unlock()
	if i >= 0 && l.perLearner[i] >= l.perMax {
		return refusal(codes.ResourceExhausted, call, i, -1, "learner %d has %d %s in progress, at most %d: wait for them to end", i, l.perLearner[i], l.what, l.perMax)
	}
	if total && l.total >= l.max {
		return refusal(codes.ResourceExhausted, call, i, -1, "the server has %d %s in progress, at most %d: try again later", l.total, l.what, l.max)
	}
	l.add(i, total, 1)
	return nil
}

// release gives back what acquire(i, total) took.
func (l *slots) release(i int, total bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.add(i, total, -1)
}

// add adds d to the total (if total) and to learner i's count (if
// i >= 0); the caller holds l.mu.
func (l *slots) add(i int, total bool, d int) {
	if total {
		l.total += d
	}
	if i >= 0 {
		l.perLearner[i] += d
	}
}

// bothDone returns a function to be called once by each of two parties
// (a handler and the goroutine that receives or sends for it); f runs
// when both have called it, so that a call's slot is given back only
// when nothing of it is left.
func bothDone(f func()) func() {
	var n atomic.Int32
	return func() {
		if n.Add(1) == 2 {
			f()
		}
	}
}

// rejection is a refused call: its status and what the log line says.
type rejection struct {
	code           codes.Code
	call           string
	learner, round int
	msg            string
	// st, if not nil, is the status to return in place of code and msg
	// (one with a typed detail).
	st *status.Status
}

func (r *rejection) Error() string { return r.msg }

// logLimiter is a token bucket for the lines written to log: a burst of
// burst lines, then rate lines a second (zero values: logBurst and
// logRate). A line that gets through says how many were suppressed before
// it, under the key suppressedKey ("" for "suppressed").
type logLimiter struct {
	log           *slog.Logger
	burst, rate   float64
	suppressedKey string

	mu         sync.Mutex
	tokens     float64
	last       time.Time
	suppressed int
}

// allow reports whether a line may be written now and how many were
// suppressed since the last one that was.
func (l *logLimiter) allow(now time.Time) (ok bool, suppressed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	burst, rate := cmp.Or(l.burst, logBurst), cmp.Or(l.rate, logRate)
	if l.last.IsZero() {
		l.tokens = burst
	} else {
		l.tokens = min(burst, l.tokens+now.Sub(l.last).Seconds()*rate)
	}
	l.last = now
	if l.tokens < 1 {
		l.suppressed++
		return false, 0
	}
	l.tokens--
	suppressed, l.suppressed = l.suppressed, 0
	return true, suppressed
}

// line writes a line at level at time now, unless the limit is reached.
func (l *logLimiter) line(now time.Time, level slog.Level, msg string, args ...any) {
	ok, suppressed := l.allow(now)
	if !ok {
		return
	}
	if suppressed > 0 {
		args = append(args, cmp.Or(l.suppressedKey, "suppressed"), suppressed)
	}
	l.log.Log(context.Background(), level, msg, args...)
}

// warn writes a warning about a refused call, subject to the log rate
// limit, so that a flood of bad calls cannot flood the log. The lines a
// peer can cause at will (refused calls, joins) share one budget.
func (s *Server) warn(msg string, args ...any) {
	s.logLim.line(time.Now(), slog.LevelWarn, msg, args...)
}

// logged logs a rejection (rate-limited) and returns its status.
func (s *Server) logged(r *rejection) error {
	s.warn("rejected", "call", r.call, "learner", r.learner, "round", r.round, "reason", r.msg)
	if r.st != nil {
		return r.st.Err()
	}
	return status.Error(r.code, r.msg)
}
