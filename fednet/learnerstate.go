package fednet

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"

	"github.com/dpmf/dpmf/internal/atomicfile"
)

// The learner's record, learner.state in its state directory
// (LearnerOptions.StateDir), binds the directory to one run and one
// learner and holds the newest round whose unmask phase (phase 4 of
// secure aggregation) the learner answered, the attempt, and the answer:
// the 8 bytes "DPMFLS01" (the format and its version), the run's 16-byte
// identity, little-endian uint32 learner index, one byte 1 if a round was
// unmasked (0: bound to the run, nothing unmasked yet), uint64 round,
// uint32 attempt, uint32 length and the Unmask message as sent, and the
// SHA-256 of everything before it. It is written durably
// (atomicfile.WriteDurable) before the message is sent, so that a learner
// restarted at any point unmasks at most one attempt of a round, and
// resends the same bytes if asked for that attempt again.
const (
	learnerFile  = "learner.state"
	learnerMagic = "DPMFLS01"
	// learnerHead is the length of the record before the message.
	learnerHead = len(learnerMagic) + 16 + 4 + 1 + 8 + 4 + 4
	// maxLearnerFile bounds the record read back: the message came within
	// one gRPC message.
	maxLearnerFile = learnerHead + MaxMsgSize + sha256.Size
)

// learnerRecord is the content of a learner's record.
type learnerRecord struct {
	run      runID
	learner  int
	unmasked bool   // round, attempt and msg are set
	round    int    // the newest round whose phase 4 was answered
	attempt  uint32 // in this attempt
	msg      []byte // with this Unmask message
}

// encode returns the record's bytes.
func (rec *learnerRecord) encode() []byte {
	b := make([]byte, 0, learnerHead+len(rec.msg)+sha256.Size)
	b = append(b, learnerMagic...)
	b = append(b, rec.run[:]...)
	b = binary.LittleEndian.AppendUint32(b, uint32(rec.learner))
	flag := byte(0)
	if rec.unmasked {
		flag = 1
	}
	b = append(b, flag)
	b = binary.LittleEndian.AppendUint64(b, uint64(rec.round))
	b = binary.LittleEndian.AppendUint32(b, rec.attempt)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(rec.msg)))
	return seal(append(b, rec.msg...))
}

// decodeLearnerRecord parses a record, checking its magic, checksum and
// lengths.
func decodeLearnerRecord(data []byte) (learnerRecord, error) {
	var rec learnerRecord
	p, err := unseal(data, learnerMagic, learnerHead, "learner state file")
	if err != nil {
		return rec, err
	}
	copy(rec.run[:], p[:16])
	p = p[16:]
	learner := binary.LittleEndian.Uint32(p)
	flag := p[4]
	round := binary.LittleEndian.Uint64(p[5:])
	rec.attempt = binary.LittleEndian.Uint32(p[13:])
	l := binary.LittleEndian.Uint32(p[17:])
	p = p[21:]
	switch {
	case learner > MaxWire || round > math.MaxInt32 || flag > 1:
		return rec, errors.New("inconsistent record")
	case uint64(l) != uint64(len(p)) || (flag == 0) != (l == 0) || flag == 0 && (round != 0 || rec.attempt != 0):
		return rec, errors.New("inconsistent record")
	}
	rec.learner, rec.unmasked, rec.round = int(learner), flag == 1, int(round)
	rec.msg = bytes.Clone(p)
	return rec, nil
}

// learnerState is a learner's state directory, locked while the learner
// runs, and its record (nil until the learner is bound to a run).
type learnerState struct {
	dir  string
	id   int
	lock *dirLock
	rec  *learnerRecord
}

// openLearnerState locks dir (creating it) for learner id and reads its
// record, if any. A record that is corrupt, of another format or of
// another learner is refused, never replaced.
func openLearnerState(dir string, id int) (ls *learnerState, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("fednet: learner state directory: %w", err)
	}
	lock, err := lockDir(filepath.Join(dir, lockFile), "learner")
	if err != nil {
		return nil, fmt.Errorf("fednet: %w", err)
	}
	defer func() {
		if err != nil {
			lock.Close()
		}
	}()
	ls = &learnerState{dir: dir, id: id, lock: lock}
	path := ls.path()
	data, err := atomicfile.ReadRegular(path, int64(maxLearnerFile))
	if errors.Is(err, fs.ErrNotExist) {
		return ls, nil
	}
	if err != nil {
		return nil, fmt.Errorf("fednet: learner state %s: %w", path, err)
	}
	rec, err := decodeLearnerRecord(data)
	if err != nil {
		return nil, fmt.Errorf("fednet: learner state %s: %v; refusing to start (it records which attempt of a round this learner unmasked: restore it, or use a fresh directory for a new run)", path, err)
	}
	if rec.learner != id {
		return nil, fmt.Errorf("fednet: learner state %s is learner %d's, this is learner %d: one state directory per learner", path, rec.learner, id)
	}
	ls.rec = &rec
	return ls, nil
}

// path is the record's file.
func (ls *learnerState) path() string { return filepath.Join(ls.dir, learnerFile) }

// Close releases the directory's lock.
func (ls *learnerState) Close() error { return ls.lock.Close() }

// write replaces the record with rec durably, then keeps it. It first
// checks that the directory's lock is still this process's: once the lock
// file was removed or replaced, a second process of this learner may hold
// the directory and have recorded an unmask answer of its own, which this
// one must never replace (a restart of the second would then answer this
// attempt too). What the check leaves is a write already past it when the
// second process starts.
func (ls *learnerState) write(rec learnerRecord) error {
	if err := ls.lock.held(); err != nil {
		return fmt.Errorf("fednet: %w", err)
	}
	if err := (store{ls.dir}).write(learnerFile, 0o600, rec.encode()); err != nil {
		return fmt.Errorf("fednet: writing the learner state: %w", err)
	}
	ls.rec = &rec
	return nil
}

// bind binds the directory to the run the server serves: a directory
// without a record records the run; one of another run is refused unless
// newRun says to replace it.
func (ls *learnerState) bind(run []byte, newRun bool) error {
	if len(run) != len(runID{}) {
		return fmt.Errorf("fednet: the server's run identity has %d bytes, want %d", len(run), len(runID{}))
	}
	var id runID
	copy(id[:], run)
	switch {
	case ls.rec != nil && ls.rec.run == id:
		return nil
	case ls.rec != nil && !newRun:
		return fmt.Errorf("fednet: learner state %s belongs to run %v, the server serves run %v: give a new run a fresh state directory (LearnerOptions.NewRun, ofl learner -new-run, replaces the old run's record)", ls.path(), ls.rec.run, id)
	}
	return ls.write(learnerRecord{run: id, learner: ls.id})
}

// checkRound refuses round r of the run if the learner unmasked a later
// round: the server's state was rewound.
func (ls *learnerState) checkRound(r int) error {
	if rec := ls.rec; rec != nil && rec.unmasked && r < rec.round {
		return fmt.Errorf("fednet: the server is at round %d, but this learner answered the unmask phase of round %d (%s): the server's state was rewound; stopping", r, rec.round, ls.path())
	}
	return nil
}

// unmasked returns the message with which the learner answered phase 4
// of round r, attempt a, if it did (ok), and an error if it answered
// phase 4 of round r in another attempt.
func (ls *learnerState) unmasked(r int, a uint32) (msg []byte, ok bool, err error) {
	rec := ls.rec
	switch {
	case rec == nil || !rec.unmasked || rec.round != r:
		return nil, false, nil
	case rec.attempt != a:
		return nil, false, fmt.Errorf("this learner answered the unmask phase of round %d in attempt %d (%s), not %d", r, rec.attempt, ls.path(), a)
	}
	return rec.msg, true, nil
}

// unmaskedAttempt returns the attempt in which the learner answered phase
// 4 of round r, if it did (ok).
func (ls *learnerState) unmaskedAttempt(r int) (a uint32, ok bool) {
	if rec := ls.rec; rec != nil && rec.unmasked && rec.round == r {
		return rec.attempt, true
	}
	return 0, false
}

// recordUnmask records durably that the learner answers phase 4 of round
// r, attempt a, with msg; the caller sends msg only after it returns nil.
func (ls *learnerState) recordUnmask(r int, a uint32, msg []byte) error {
	switch rec := ls.rec; {
	case rec == nil:
		return errors.New("fednet: the learner state is bound to no run")
	case rec.unmasked && r <= rec.round:
		// Never rewound or doubled (the callers check first).
		return fmt.Errorf("fednet: recording the unmask answer of round %d, attempt %d over that of round %d, attempt %d", r, a, rec.round, rec.attempt)
	}
	rec := *ls.rec
	rec.unmasked, rec.round, rec.attempt, rec.msg = true, r, a, bytes.Clone(msg)
	if err := ls.write(rec); err != nil {
		return err
	}
	// A second learner process that took the directory after its lock
	// file was removed has read this record unless this check fails, and
	// then the answer is never sent.
	if err := ls.lock.held(); err != nil {
		return fmt.Errorf("fednet: %w", err)
	}
	return nil
}
