package fednet

import (
	"encoding/hex"
	"errors"
	"slices"
	"strconv"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The server refuses a learner index outside its run (0..n-1) with status
// code InvalidArgument and one detail, a google.rpc.ErrorInfo with
// Domain [RefusalDomain], Reason [ReasonLearnerIndex] and the metadata
// "learner" (the index refused) and "learners" (n), both in decimal. The
// status's message is for people and may change; a learner recognises
// the refusal by the detail ([RunLearner] returns a *[LearnerIndexError]).
const (
	// RefusalDomain is the ErrorInfo domain of fednet's typed refusals.
	RefusalDomain = "fl.dpmf"
	// ReasonLearnerIndex is the ErrorInfo reason of the refusal of a
	// learner index outside the run.
	ReasonLearnerIndex = "LEARNER_INDEX_OUT_OF_RANGE"
	// ReasonOtherRun is the ErrorInfo reason of the refusal of a
	// learner's witness of another run than the server's (status code
	// FailedPrecondition), with the metadata "seen_run" (the witness's
	// run) and "run" (the server's), both in hex. A learner whose record
	// is of a run that is over (LearnerOptions.NewRun) recognises it by
	// the detail and asks again without its witness.
	ReasonOtherRun = "WITNESS_OF_ANOTHER_RUN"
)

// ErrLearnerIndex is what errors.Is finds in the error of [RunLearner]
// when the server refused the learner's index as outside its run.
var ErrLearnerIndex = errors.New("fednet: the server refused the learner index (outside its run)")

// LearnerIndexError is the server's refusal of a learner index outside its
// run, as [RunLearner] returns it: errors.Is finds [ErrLearnerIndex], and
// status.Code the refusal's InvalidArgument.
type LearnerIndexError struct {
	// ID is the index refused and Learners the run's n: the server's
	// indices are 0..Learners-1.
	ID, Learners int
	// err is the server's status.
	err error
}

// Error returns the server's status, as gRPC words it.
func (e *LearnerIndexError) Error() string { return e.err.Error() }

// Is reports whether target is [ErrLearnerIndex].
func (e *LearnerIndexError) Is(target error) bool { return target == ErrLearnerIndex }

// Unwrap returns the server's status error.
func (e *LearnerIndexError) Unwrap() error { return e.err }

// indexStatus returns the server's refusal of learner index learner in a
// run of n learners, with message msg and the typed detail.
func indexStatus(learner, n int, msg string) *status.Status {
	return typedStatus(codes.InvalidArgument, msg, ReasonLearnerIndex, map[string]string{"learner": strconv.Itoa(learner), "learners": strconv.Itoa(n)})
}

// typedStatus returns a status of code with message msg and one detail, an
// ErrorInfo of RefusalDomain with reason and metadata md.
func typedStatus(code codes.Code, msg, reason string, md map[string]string) *status.Status {
	st := status.New(code, msg)
	if d, err := st.WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: RefusalDomain, Metadata: md}); err == nil {
		st = d
	}
	return st
}

// typedDetails returns the metadata of the details of err, a status of
// code, that are ErrorInfos of RefusalDomain with reason (none if err is
// not such a status).
func typedDetails(err error, code codes.Code, reason string) []map[string]string {
	st, ok := status.FromError(err)
	if !ok || st.Code() != code {
		return nil
	}
	var mds []map[string]string
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == RefusalDomain && info.GetReason() == reason {
			mds = append(mds, info.GetMetadata())
		}
	}
	return mds
}

// learnerIndexError returns err as a *LearnerIndexError if it is a status
// that carries the typed refusal of index id (a detail naming another
// index is not this learner's refusal), and err otherwise.
func learnerIndexError(err error, id int) error {
	for _, md := range typedDetails(err, codes.InvalidArgument, ReasonLearnerIndex) {
		learner, err1 := strconv.Atoi(md["learner"])
		n, err2 := strconv.Atoi(md["learners"])
		if err1 == nil && err2 == nil && learner == id && n >= 1 && n <= MaxWire {
			return &LearnerIndexError{ID: id, Learners: n, err: err}
		}
	}
	return err
}

// otherRunStatus returns the server's refusal, with message msg and the
// typed detail, of a witness of run seen by the server of run.
func otherRunStatus(seen, run []byte, msg string) *status.Status {
	return typedStatus(codes.FailedPrecondition, msg, ReasonOtherRun, map[string]string{"seen_run": hex.EncodeToString(seen), "run": hex.EncodeToString(run)})
}

// isOtherRunRefusal reports whether err is the server's typed refusal of
// a witness of run seen as another run's (a detail naming another
// witness's run, or the server's run as the witness's, is not).
func isOtherRunRefusal(err error, seen []byte) bool {
	return slices.ContainsFunc(typedDetails(err, codes.FailedPrecondition, ReasonOtherRun), func(md map[string]string) bool {
		return md["seen_run"] == hex.EncodeToString(seen) && md["run"] != md["seen_run"]
	})
}
