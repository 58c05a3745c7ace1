package fednet

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"

	"github.com/dpmf/dpmf/secagg"
)

// The secure-aggregation snapshot, secagg.state in the state directory,
// holds the open round's attempt as of its last phase close (or its
// opening): the 8 bytes "DPMFSA01", the run's identity, little-endian
// uint64 round, uint32 attempt, uint32 open phase (secagg.PhaseFailed for
// an attempt that failed), the bitmap of learners expected in the open
// phase (one byte each, n bytes after a uint32 n), the roster, U2, U3 and
// the signatures (each a uint32 count and its items, a byte string as a
// uint32 length and the bytes, an index as a uint32), the aggregator's
// snapshot (uint64 length and bytes), and the SHA-256 of everything
// before it. It is written durably at every phase close before the
// close's result is served.
const (
	secFile  = "secagg.state"
	secMagic = "DPMFSA01"
	// maxSecFile bounds the snapshot read back: the aggregator's sum (8
	// bytes an entry, up to secagg.MaxDim) and its O(N^2) shares.
	maxSecFile = 8*secagg.MaxDim + 64<<20
)

// encodeSec returns the snapshot of sr in run id.
func encodeSec(id runID, sr *secRound) ([]byte, error) {
	var agg []byte
	if sr.failed == nil { // a failed attempt is never resumed
		var err error
		if agg, err = sr.agg.MarshalBinary(); err != nil {
			return nil, fmt.Errorf("secure-aggregation snapshot: %w", err)
		}
	}
	var b bytes.Buffer
	b.WriteString(secMagic)
	b.Write(id[:])
	b.Write(binary.LittleEndian.AppendUint64(nil, uint64(sr.ctx.Round)))
	phase := sr.phase
	if sr.failed != nil {
		phase = secagg.PhaseFailed
	}
	u32 := func(v int) { b.Write(binary.LittleEndian.AppendUint32(nil, uint32(v))) }
	u32(int(sr.ctx.Attempt))
	u32(int(phase))
	u32(len(sr.expected))
	for _, e := range sr.expected {
		if e {
			b.WriteByte(1)
		} else {
			b.WriteByte(0)
		}
	}
	strs := func(v [][]byte) {
		u32(len(v))
		for _, s := range v {
			u32(len(s))
			b.Write(s)
		}
	}
	ints := func(v []int) {
		u32(len(v))
		for _, x := range v {
			u32(x)
		}
	}
	strs(sr.roster)
	ints(sr.u2)
	ints(sr.u3)
	strs(sr.sigs)
	b.Write(binary.LittleEndian.AppendUint64(nil, uint64(len(agg))))
	b.Write(agg)
	sum := sha256.Sum256(b.Bytes())
	b.Write(sum[:])
	return b.Bytes(), nil
}

// secSnapshot is a decoded snapshot.
type secSnapshot struct {
	run      runID
	round    int
	attempt  uint32
	phase    secagg.Phase
	expected []bool
	roster   [][]byte
	u2, u3   []int
	sigs     [][]byte
	agg      []byte
}

// decodeSec parses a snapshot, checking its magic, checksum and every
// length against what is left before it allocates.
func decodeSec(data []byte) (secSnapshot, error) {
	var s secSnapshot
	if len(data) < len(secMagic)+16+16+sha256.Size || string(data[:len(secMagic)]) != secMagic {
		return s, errors.New("not a secure-aggregation snapshot (bad magic or too short)")
	}
	body := data[:len(data)-sha256.Size]
	if sum := sha256.Sum256(body); !bytes.Equal(sum[:], data[len(body):]) {
		return s, errors.New("checksum mismatch")
	}
	p := body[len(secMagic):]
	bad := errors.New("inconsistent snapshot")
	take := func(n int) ([]byte, bool) {
		if n < 0 || n > len(p) {
			return nil, false
		}
		v := p[:n]
		p = p[n:]
		return v, true
	}
	u32 := func() (int, bool) {
		v, ok := take(4)
		if !ok {
			return 0, false
		}
		return int(binary.LittleEndian.Uint32(v)), true
	}
	id, _ := take(16)
	copy(s.run[:], id)
	rb, _ := take(8)
	round := binary.LittleEndian.Uint64(rb)
	if round > math.MaxInt32 {
		return s, bad
	}
	s.round = int(round)
	a, ok1 := u32()
	ph, ok2 := u32()
	n, ok3 := u32()
	if !ok1 || !ok2 || !ok3 || ph < 0 || ph > int(secagg.PhaseFailed) || n > len(p) {
		return s, bad
	}
	s.attempt, s.phase = uint32(a), secagg.Phase(ph)
	ex, _ := take(n)
	s.expected = make([]bool, n)
	for k, v := range ex {
		s.expected[k] = v == 1
	}
	strs := func() ([][]byte, bool) {
		c, ok := u32()
		if !ok || c > len(p)/4 {
			return nil, false
		}
		out := make([][]byte, 0, c)
		for range c {
			l, ok := u32()
			if !ok {
				return nil, false
			}
			v, ok := take(l)
			if !ok {
				return nil, false
			}
			out = append(out, bytes.Clone(v))
		}
		return out, true
	}
	ints := func() ([]int, bool) {
		c, ok := u32()
		if !ok || c > len(p)/4 {
			return nil, false
		}
		out := make([]int, c)
		for k := range out {
			out[k], _ = u32()
		}
		return out, true
	}
	var ok bool
	if s.roster, ok = strs(); !ok {
		return s, bad
	}
	if s.u2, ok = ints(); !ok {
		return s, bad
	}
	if s.u3, ok = ints(); !ok {
		return s, bad
	}
	if s.sigs, ok = strs(); !ok {
		return s, bad
	}
	lb, ok := take(8)
	if !ok {
		return s, bad
	}
	l := binary.LittleEndian.Uint64(lb)
	if l != uint64(len(p)) {
		return s, bad
	}
	s.agg = p
	return s, nil
}

// writeSecSnapshot writes sr's snapshot durably. The caller holds s.mu
// and s.stMu with s.st open.
func (s *Server) writeSecSnapshot(sr *secRound) error {
	data, err := encodeSec(s.run, sr)
	if err != nil {
		return err
	}
	if err := s.st.write(secFile, 0o600, data); err != nil {
		return fmt.Errorf("fednet: writing the secure-aggregation snapshot: %w", err)
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
	case snap.phase >= secagg.PhaseDone || len(snap.expected) != s.opt.Shape.Learners:
		return fmt.Errorf("fednet: %s: phase %d for %d learners, want an open phase for %d", st.path(secFile), int(snap.phase), len(snap.expected), s.opt.Shape.Learners)
	}
	agg, err := secagg.RestoreAggregator(snap.agg)
	if err != nil {
		return fmt.Errorf("fednet: %s: %w", st.path(secFile), err)
	}
	if agg.Phase() != snap.phase {
		return fmt.Errorf("fednet: %s: the aggregator is in phase %v, the snapshot says %v", st.path(secFile), agg.Phase(), snap.phase)
	}
	sr := &secRound{ctx: s.secContext(snap.attempt), agg: agg, expected: snap.expected,
		roster: snap.roster, u2: snap.u2, u3: snap.u3, sigs: snap.sigs}
	sr.open(snap.phase)
	s.sec = sr
	s.log.Info("resumed the secure round", "round", s.round, "attempt", snap.attempt, "phase", snap.phase.String())
	return nil
}
