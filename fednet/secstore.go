package fednet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"

	"github.com/dpmf/dpmf/secagg"
)

// The secure-aggregation snapshot, secagg.state in the state directory,
// holds the open round's attempt as of its last phase close (or its
// opening): the 8 bytes "DPMFSA02", the run's identity, little-endian
// uint64 round, uint32 attempt, uint32 open phase (secagg.PhaseFailed for
// an attempt that failed), the aggregator's snapshot (which holds the sets
// and messages the next phases need; empty for a failed attempt), and the
// SHA-256 of everything before it. It is written durably at every phase
// close before the close's result is served.
const (
	secFile  = "secagg.state"
	secMagic = "DPMFSA02"
	// secHead is the length of the header: magic, run, round, attempt, phase.
	secHead = len(secMagic) + 16 + 8 + 4 + 4
	// maxSecFile bounds the snapshot read back: the aggregator's sum (8
	// bytes an entry, up to secagg.MaxDim) and its O(N^2) shares.
	maxSecFile = 8*secagg.MaxDim + 64<<20
)

// secSnapshot is a decoded snapshot.
type secSnapshot struct {
	run     runID
	round   int
	attempt uint32
	phase   secagg.Phase
	agg     []byte
}

// decodeSec parses a snapshot, checking its magic, checksum and header.
func decodeSec(data []byte) (secSnapshot, error) {
	var s secSnapshot
	p, err := unseal(data, secMagic, secHead, "secure-aggregation snapshot")
	if err != nil {
		return s, err
	}
	copy(s.run[:], p)
	round := binary.LittleEndian.Uint64(p[16:])
	s.attempt = binary.LittleEndian.Uint32(p[24:])
	ph := binary.LittleEndian.Uint32(p[28:])
	if round > math.MaxInt32 || ph > uint32(secagg.PhaseFailed) {
		return s, errors.New("inconsistent snapshot")
	}
	s.round, s.phase, s.agg = int(round), secagg.Phase(ph), p[secHead-len(secMagic):]
	return s, nil
}

// writeSecSnapshot writes sr's snapshot durably. The caller holds s.mu
// and s.stMu with s.st open.
func (s *Server) writeSecSnapshot(sr *secRound) error {
	b := append([]byte(secMagic), s.run[:]...)
	b = binary.LittleEndian.AppendUint64(b, uint64(sr.ctx.Round))
	b = binary.LittleEndian.AppendUint32(b, sr.ctx.Attempt)
	if sr.failed != nil { // a failed attempt is never resumed
		b = binary.LittleEndian.AppendUint32(b, uint32(secagg.PhaseFailed))
	} else {
		b = binary.LittleEndian.AppendUint32(b, uint32(sr.phase))
		agg, err := sr.agg.MarshalBinary()
		if err != nil {
			return fmt.Errorf("fednet: secure-aggregation snapshot: %w", err)
		}
		b = append(b, agg...)
	}
	if err := s.st.write(secFile, 0o600, seal(b)); err != nil {
		return fmt.Errorf("fednet: writing the secure-aggregation snapshot: %w", err)
	}
	// As for a release: the close is served only from the locked
	// directory.
	if err := s.st.lock.held(); err != nil {
		return fmt.Errorf("fednet: %w", err)
	}
	return nil
}

// resumeSecure positions a new secure server at the open round's attempt:
// the snapshot's, at its open phase, if it is of this round; a new
// attempt after one that failed; attempt 0 without a snapshot of this
// round. A snapshot of another run, of a round not yet open, or one that
// is unreadable is refused like the other state files.
func (s *Server) resumeSecure() error {
	if s.round == s.opt.Shape.Rounds {
		return nil
	}
	st := s.st
	data, err := st.readRegular(secFile, maxSecFile)
	if errors.Is(err, fs.ErrNotExist) {
		s.sec, err = s.openSecRound(0)
		return err
	}
	if err != nil {
		return fmt.Errorf("fednet: %s: %w", st.path(secFile), err)
	}
	snap, err := decodeSec(data)
	switch {
	case err != nil:
		return fmt.Errorf("fednet: %s: %v; refusing to resume (the attempt's state is lost: remove the file only if no learner answered its unmask phase)", st.path(secFile), err)
	case snap.run != s.run:
		return fmt.Errorf("fednet: %s belongs to run %v, not %v", st.path(secFile), snap.run, s.run)
	case snap.round > s.round:
		return fmt.Errorf("fednet: %s is of round %d, but the newest released round is %d: the state directory was rewound; refusing to resume", st.path(secFile), snap.round, s.round)
	case snap.round < s.round:
		// Left by a round that was released: start the next afresh.
		s.sec, err = s.openSecRound(0)
		return err
	case snap.phase == secagg.PhaseFailed:
		if snap.attempt == math.MaxUint32 {
			return fmt.Errorf("fednet: %s: round %d has used every attempt", st.path(secFile), s.round)
		}
		s.log.Info("new attempt", "round", s.round, "attempt", snap.attempt+1, "failed", snap.attempt)
		s.sec, err = s.openSecRound(snap.attempt + 1)
		return err
	case snap.phase >= secagg.PhaseDone:
		return fmt.Errorf("fednet: %s: phase %d, want an open phase", st.path(secFile), int(snap.phase))
	}
	agg, err := secagg.RestoreAggregator(snap.agg)
	if err != nil {
		return fmt.Errorf("fednet: %s: %w", st.path(secFile), err)
	}
	ctx := s.secContext(snap.attempt)
	if agg.Phase() != snap.phase || agg.Context() != ctx {
		return fmt.Errorf("fednet: %s: the aggregator is in phase %v of context %+v, the snapshot says phase %v of %+v", st.path(secFile), agg.Phase(), agg.Context(), snap.phase, ctx)
	}
	sr := &secRound{ctx: ctx, agg: agg}
	if err := sr.open(snap.phase); err != nil {
		return fmt.Errorf("fednet: %s: %w", st.path(secFile), err)
	}
	s.sec = sr
	s.log.Info("resumed the secure round", "round", s.round, "attempt", snap.attempt, "phase", snap.phase.String())
	return nil
}
