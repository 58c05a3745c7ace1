package fednet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"

	"github.com/dpmf/dpmf/internal/atomicfile"
	"github.com/dpmf/dpmf/secagg"
)

// The secure-aggregation snapshot holds the open round's attempt as of its
// last phase close (or its opening): the 8 bytes "DPMFSA03", the run's
// identity, little-endian uint64 round, uint32 attempt, uint32 open phase
// (secagg.PhaseFailed for an attempt that failed), uint64 generation, the
// aggregator's snapshot (which holds the sets and messages the next phases
// need; empty for a failed attempt), and the SHA-256 of everything before
// it. It is written durably at every phase close before the close's
// result is served.
//
// Each server that starts on the state directory writes its snapshots to
// a file of its own, secagg-GGGGGGGG.state, named by its generation G: one
// more than the largest generation in the directory, taken under the lock
// after the previous snapshot was read. The server claims G by linking its
// first snapshot into place (store.writeNew: never over an existing file),
// after checking that the lock is still its own, and from then on replaces
// only its own file; a start reads the file of the largest generation and,
// once its own is claimed, removes the older ones. Why a stale server
// (frozen, its lock file removed, overtaken by server N, then thawed) can
// never make a restart resume its snapshot in place of N's: it writes only
// its own generation's file, and its generation is smaller than N's. N
// took its lock after the lock file was removed, hence after the stale
// server's lock check before its claim passed, hence after the stale
// server listed the directory; N lists it after taking its lock, and the
// largest generation there never decreases (only a server that claimed a
// larger one removes files). So N's generation is at least the stale
// server's, and the two are never equal: of two claims of one
// generation the second finds the file and fails, and its server stops
// before serving anything (unless a server of a larger generation, newer
// than both, removed the file in between). A single file replaced by rename could not give this: the
// stale server's rename may come at any time after its last lock check.
const (
	secPrefix = "secagg-"
	secSuffix = ".state"
	// secOldFile is the single snapshot file of older formats (DPMFSA01,
	// DPMFSA02), refused.
	secOldFile = "secagg.state"
	secMagic   = "DPMFSA03"
	// secHead is the length of the header: magic, run, round, attempt,
	// phase, generation.
	secHead = len(secMagic) + 16 + 8 + 4 + 4 + 8
	// maxSecFile bounds the snapshot read back: the aggregator's sum (8
	// bytes an entry, up to secagg.MaxDim) and its O(N^2) shares.
	maxSecFile = 8*secagg.MaxDim + 64<<20
)

// secName returns the name of generation g's snapshot file.
func secName(g uint64) string { return fmt.Sprintf("%s%08d%s", secPrefix, g, secSuffix) }

// secSnapshot is a decoded snapshot.
type secSnapshot struct {
	run     runID
	round   int
	attempt uint32
	phase   secagg.Phase
	gen     uint64
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
	s.gen = binary.LittleEndian.Uint64(p[32:])
	if round > math.MaxInt32 || ph > uint32(secagg.PhaseFailed) {
		return s, errors.New("inconsistent snapshot")
	}
	s.round, s.phase, s.agg = int(round), secagg.Phase(ph), p[secHead-len(secMagic):]
	return s, nil
}

// secGens returns the generations that have a snapshot file in the
// directory, increasing.
func (s store) secGens() ([]uint64, error) {
	return generations(s, secPrefix, secSuffix, secName, "refusing to resume: start a new run in a fresh state directory")
}

// writeSecSnapshot writes sr's snapshot durably to this server's file,
// claiming its generation with the first write. The caller holds s.mu
// and s.stMu with s.st open.
func (s *Server) writeSecSnapshot(sr *secRound) error {
	b := append([]byte(secMagic), s.run[:]...)
	b = binary.LittleEndian.AppendUint64(b, uint64(sr.ctx.Round))
	b = binary.LittleEndian.AppendUint32(b, sr.ctx.Attempt)
	ph := sr.phase
	if sr.failed != nil { // a failed attempt is never resumed
		ph = secagg.PhaseFailed
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(ph))
	b = binary.LittleEndian.AppendUint64(b, s.secGen)
	if sr.failed == nil {
		agg, err := sr.agg.MarshalBinary()
		if err != nil {
			return fmt.Errorf("fednet: secure-aggregation snapshot: %w", err)
		}
		b = append(b, agg...)
	}
	// As for a release: never written into a directory another server
	// may have taken (the generation's claim relies on this check), and
	// the close is served only from the locked directory.
	if err := s.st.lock.held(); err != nil {
		return fmt.Errorf("fednet: %w", err)
	}
	write := s.st.write
	if !s.secClaimed {
		write = s.st.writeNew
	}
	if err := write(secName(s.secGen), 0o600, seal(b)); err != nil {
		return fmt.Errorf("fednet: writing the secure-aggregation snapshot: %w", err)
	}
	if !s.secClaimed {
		s.secClaimed = true
		// The older generations' files are never read again (their
		// removal need not be durable).
		if gs, err := s.st.secGens(); err == nil {
			for _, g := range gs {
				if g < s.secGen {
					os.Remove(s.st.path(secName(g)))
				}
			}
		}
	}
	if err := s.st.lock.held(); err != nil {
		return fmt.Errorf("fednet: %w", err)
	}
	return nil
}

// resumeSecure positions a new secure server at the open round's attempt:
// the snapshot's, at its open phase, if it is of this round; a new
// attempt after one that failed; attempt 0 after a snapshot of the
// round released last, or without any before a round is released. A
// snapshot of another run, of a round not yet open or older than the one
// released last, one that is unreadable, and a missing one once a round
// was released are refused like the other state files.
func (s *Server) resumeSecure() error {
	if s.round == s.opt.Shape.Rounds {
		return nil
	}
	st := s.st
	if _, err := os.Lstat(st.path(secOldFile)); !errors.Is(err, fs.ErrNotExist) {
		format := "unreadable"
		if f, err := atomicfile.OpenRegular(st.path(secOldFile)); err == nil {
			magic := make([]byte, len(secMagic))
			n, _ := io.ReadFull(f, magic)
			f.Close()
			format = fmt.Sprintf("%q", magic[:n])
		}
		return fmt.Errorf("fednet: %s is a secure-aggregation snapshot of an older dpmf (format %s; this one keeps %sGGGGGGGG%s files of format %s): finish the run with that dpmf, or start a fresh state directory", st.path(secOldFile), format, secPrefix, secSuffix, secMagic)
	}
	gs, err := st.secGens()
	if err != nil {
		return fmt.Errorf("fednet: %w", err)
	}
	if len(gs) == 0 {
		// A server writes its snapshot before it serves anything and
		// removes older generations' files only once its own is written:
		// a run that released a round has one. (Without a round released
		// it may have been killed before its first write.)
		if s.round > 0 {
			return fmt.Errorf("fednet: %s holds no secure-aggregation snapshot (%sGGGGGGGG%s), but round %d was released: it was lost or removed, and the attempts of round %d are unknown; refusing to resume (start a new run in a fresh state directory)", st.dir, secPrefix, secSuffix, s.round, s.round)
		}
		s.secGen = 1
		s.sec, err = s.openSecRound(0)
		return err
	}
	g := gs[len(gs)-1]
	s.secGen = g + 1
	path := st.path(secName(g))
	data, err := st.readRegular(secName(g), maxSecFile)
	if err != nil {
		return fmt.Errorf("fednet: %w", st.damaged(fmt.Errorf("%s: %w", path, err)))
	}
	snap, err := decodeSec(data)
	switch {
	case err != nil:
		advice := "remove the file only if no learner answered its unmask phase"
		if s.round > 0 {
			advice = "start a new run in a fresh state directory"
		}
		return fmt.Errorf("fednet: %s: %v; refusing to resume (the attempt's state is lost: %s)", path, err, advice)
	case snap.gen != g:
		return fmt.Errorf("fednet: %w", st.damaged(fmt.Errorf("%s holds generation %d's snapshot: a file was renamed or copied", path, snap.gen)))
	case snap.run != s.run:
		return fmt.Errorf("fednet: %w", st.damaged(fmt.Errorf("%s belongs to run %v, not %v", path, snap.run, s.run)))
	case snap.round > s.round:
		return fmt.Errorf("fednet: %w", st.damaged(fmt.Errorf("%s is of round %d, but the newest released round is %d: the state directory was rewound", path, snap.round, s.round)))
	case snap.round < s.round-1:
		// A release is followed by the next round's snapshot, written
		// before that round is served: the newest is never two behind.
		return fmt.Errorf("fednet: %w", st.damaged(fmt.Errorf("%s is of round %d, but round %d was released: a snapshot of an earlier point of the run was put back, and the attempts of round %d are unknown", path, snap.round, s.round, s.round)))
	case snap.round < s.round && snap.phase != secagg.PhaseUnmask:
		// A round is released from its unmask phase, opened (and
		// written) at the consistency phase's close, and no snapshot is
		// written between that and the release: the one a release
		// leaves is that phase's. Another (an earlier phase, a failed
		// attempt) was put back, and the open round may have run
		// attempts since.
		return fmt.Errorf("fednet: %w", st.damaged(fmt.Errorf("%s is of round %d at phase %d (%v), but round %d was released from its unmask phase, whose snapshot is the last written before its release: a snapshot of an earlier point of the run was put back, and the attempts of round %d are unknown", path, snap.round, int(snap.phase), snap.phase, snap.round, s.round)))
	case snap.round < s.round:
		// Left by the round that was released last: start the next
		// afresh.
		s.sec, err = s.openSecRound(0)
		return err
	case snap.phase == secagg.PhaseFailed:
		if snap.attempt == math.MaxUint32 {
			return fmt.Errorf("fednet: %s: round %d has used every attempt", path, s.round)
		}
		s.log.Info("new attempt", "round", s.round, "attempt", snap.attempt+1, "failed", snap.attempt)
		s.sec, err = s.openSecRound(snap.attempt + 1)
		return err
	case snap.phase >= secagg.PhaseDone:
		return fmt.Errorf("fednet: %w", st.damaged(fmt.Errorf("%s: phase %d, want an open phase", path, int(snap.phase))))
	}
	agg, err := secagg.RestoreAggregator(snap.agg)
	if err != nil {
		return fmt.Errorf("fednet: %w", st.damaged(fmt.Errorf("%s: %w", path, err)))
	}
	ctx := s.secContext(snap.attempt)
	if agg.Phase() != snap.phase || agg.Context() != ctx {
		return fmt.Errorf("fednet: %w", st.damaged(fmt.Errorf("%s: the aggregator is in phase %v of context %+v, the snapshot says phase %v of %+v", path, agg.Phase(), agg.Context(), snap.phase, ctx)))
	}
	sr := &secRound{ctx: ctx, agg: agg}
	if err := sr.open(snap.phase); err != nil {
		return fmt.Errorf("fednet: %s: %w", path, err)
	}
	// The same state, in this server's generation: from now on only this
	// server's file counts.
	if err := s.writeSecSnapshot(sr); err != nil {
		return err
	}
	s.sec = sr
	s.log.Info("resumed the secure round", "round", s.round, "attempt", snap.attempt, "phase", snap.phase.String())
	return nil
}
