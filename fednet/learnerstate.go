package fednet

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dpmf/dpmf/internal/atomicfile"
)

// The learner's record, learner.state in its state directory
// (LearnerOptions.StateDir), binds the directory to one run, one learner
// and the directory itself, and holds the learner's witness (the newest
// model received: its round and the server's digest) and the newest round
// whose unmask phase (phase 4 of secure aggregation) the learner answered,
// the attempt, and the answer: the 8 bytes "DPMFLS02" (the format and its
// version), the run's 16-byte identity, little-endian uint32 learner
// index, one byte 1 if a round was unmasked (0: nothing unmasked yet),
// uint64 round, uint32 attempt, uint32 length of the Unmask message,
// uint64 inode and int64 creation time (nanoseconds since the epoch) of
// the directory the record was first written in (0 where the platform or
// file system has none), one byte 1 if a model was received, its uint64
// round, uint32 length of its digest, uint32 length of the data's digest,
// then the Unmask message as sent, the digest as the server sent it, the
// digest of the learner's data (what its stream reports, see dataDigest;
// empty: not known), and the SHA-256 of everything before it. Format
// "DPMFLS02" (dpmf before the data's digest) is the same without the
// data's digest and its length; "DPMFLS01" (dpmf before the witness) is
// the same up to the message's length, then the message. Both are read as
// records without what they lack, and rewritten as DPMFLS03.
//
// Each learner process that starts on the directory writes the record to
// a file of its own, learner-GGGGGGGG.state, named by its generation G:
// one more than the largest generation in the directory, taken under the
// lock after the newest record was read. As the server's snapshots
// (secstore.go): the process claims G by linking its first write into
// place (store.writeNew: never over an existing file), after checking
// that the lock is still its own, and from then on replaces only its own
// file; a start reads the file of the largest generation and, once its
// own is claimed, removes the older ones (learner.state it replaces by
// a tombstone, below). A stale process (frozen after a lock check, its
// lock file removed, overtaken by
// a second process of the learner, then thawed) thus writes only a file
// of a smaller generation than the second one's, which no start reads,
// or fails to claim the second one's. The single file learner.state of
// dpmf before generations is read when the directory has no generation's
// file; the first write of a process whose directory has no tombstone
// replaces it by one, learnerMoved (after its claim): an older dpmf
// refuses that file (bad magic) rather than start without the record,
// and a start that finds the tombstone and no generation's file refuses
// too (the records were lost). A process killed between its claim and
// the tombstone leaves learner.state a record that an older dpmf may add
// to; a start refuses one its largest generation does not cover
// (checkBeside).
//
// It is written durably (store.write) before the learner acts
// on what it records: before the unmask message is sent, so that a learner
// restarted at any point unmasks at most one attempt of a round and
// resends the same bytes if asked for that attempt again; and before a
// model received is used, so that a restarted learner tells the server the
// newest model it received, which a rolled-back server cannot have. The
// data's digest is bound at the record's first write (or the first of a
// record that has none), and a learner restarted with data of another
// digest is refused before it uses the data (learnerState.checkData).
const (
	// learnerFile is the single record file of dpmf before generations,
	// read where no learner-GGGGGGGG.state is.
	learnerFile = "learner.state"
	// learnerPrefix and learnerSuffix frame a record file's generation.
	learnerPrefix = "learner-"
	learnerSuffix = ".state"
	// learnerMoved begins the tombstone learner.state becomes once the
	// record is in generations' files.
	learnerMoved   = "DPMFLSGN"
	learnerMagic   = "DPMFLS03"
	learnerMagicV2 = "DPMFLS02"
	learnerMagicV1 = "DPMFLS01"
	// learnerHeadV1 is the length of a DPMFLS01 record before the message.
	learnerHeadV1 = len(learnerMagicV1) + 16 + 4 + 1 + 8 + 4 + 4
	// learnerHeadV2 is the length of a DPMFLS02 record before the message.
	learnerHeadV2 = learnerHeadV1 + 8 + 8 + 1 + 8 + 4
	// learnerHead is the length of the record before the message.
	learnerHead = learnerHeadV2 + 4
	// maxDigest bounds the digest of a model the learner records (the
	// server's are 64 bytes: a SHA-256 and its tag), and the digest of
	// its data (dataset.Stream's: 64 hexadecimal digits).
	maxDigest = 1024
	// maxLearnerFile bounds the record read back: the message came within
	// one gRPC message.
	maxLearnerFile = learnerHead + MaxMsgSize + 2*maxDigest + sha256.Size
)

// learnerName returns the name of generation g's record file.
func learnerName(g uint64) string { return fmt.Sprintf("%s%08d%s", learnerPrefix, g, learnerSuffix) }

// learnerRecordFile reports whether base names a record file, of a
// generation or the older single one.
func learnerRecordFile(base string) bool {
	return base == learnerFile || strings.HasPrefix(base, learnerPrefix) && strings.HasSuffix(base, learnerSuffix)
}

// learnerTombstone is the content of learner.state once the record is
// in generations' files.
const learnerTombstone = learnerMoved + "\nthis learner's record is in learner-GGGGGGGG.state (the largest G): run the dpmf that wrote it (an older one cannot read it)\n"

// learnerRecord is the content of a learner's record.
type learnerRecord struct {
	run      runID
	learner  int
	unmasked bool   // round, attempt and msg are set
	round    int    // the newest round whose phase 4 was answered
	attempt  uint32 // in this attempt
	msg      []byte // with this Unmask message
	// dirIno and dirBirth are the inode and creation time of the directory
	// the record was first written in (0: not known).
	dirIno   uint64
	dirBirth int64
	// witnessed is set once a model was received: the newest one, of
	// round seenRound, with the server's digest seenDigest.
	witnessed  bool
	seenRound  int
	seenDigest []byte
	// data is the digest of the data the learner dealt its clients from
	// when the record was first written ("": not known).
	data string
}

// encode returns the record's bytes.
func (rec *learnerRecord) encode() []byte {
	b := make([]byte, 0, learnerHead+len(rec.msg)+len(rec.seenDigest)+sha256.Size)
	b = append(b, learnerMagic...)
	b = append(b, rec.run[:]...)
	b = binary.LittleEndian.AppendUint32(b, uint32(rec.learner))
	b = append(b, flagByte(rec.unmasked))
	b = binary.LittleEndian.AppendUint64(b, uint64(rec.round))
	b = binary.LittleEndian.AppendUint32(b, rec.attempt)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(rec.msg)))
	b = binary.LittleEndian.AppendUint64(b, rec.dirIno)
	b = binary.LittleEndian.AppendUint64(b, uint64(rec.dirBirth))
	b = append(b, flagByte(rec.witnessed))
	b = binary.LittleEndian.AppendUint64(b, uint64(rec.seenRound))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(rec.seenDigest)))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(rec.data)))
	b = append(b, rec.msg...)
	b = append(b, rec.seenDigest...)
	return seal(append(b, rec.data...))
}

// flagByte is 1 for true, 0 for false.
func flagByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

// decodeLearnerRecord parses a record (of format DPMFLS03, DPMFLS02 or
// DPMFLS01), checking its magic, checksum and lengths.
func decodeLearnerRecord(data []byte) (learnerRecord, error) {
	var rec learnerRecord
	v1 := bytes.HasPrefix(data, []byte(learnerMagicV1))
	v2 := bytes.HasPrefix(data, []byte(learnerMagicV2))
	magic, head := learnerMagic, learnerHead
	switch {
	case v1:
		magic, head = learnerMagicV1, learnerHeadV1
	case v2:
		magic, head = learnerMagicV2, learnerHeadV2
	}
	p, err := unseal(data, magic, head, "learner state file")
	if err != nil {
		return rec, err
	}
	copy(rec.run[:], p[:16])
	p = p[16:]
	learner := binary.LittleEndian.Uint32(p)
	flag := p[4]
	round := binary.LittleEndian.Uint64(p[5:])
	rec.attempt = binary.LittleEndian.Uint32(p[13:])
	l := uint64(binary.LittleEndian.Uint32(p[17:]))
	p = p[21:]
	var wflag byte
	var wround, wl, dl uint64
	if !v1 {
		rec.dirIno = binary.LittleEndian.Uint64(p)
		rec.dirBirth = int64(binary.LittleEndian.Uint64(p[8:]))
		wflag = p[16]
		wround = binary.LittleEndian.Uint64(p[17:])
		wl = uint64(binary.LittleEndian.Uint32(p[25:]))
		p = p[29:]
	}
	if !v1 && !v2 {
		dl = uint64(binary.LittleEndian.Uint32(p))
		p = p[4:]
	}
	if learner > MaxWire || round > math.MaxInt32 || flag > 1 || wflag > 1 || wround > math.MaxInt32 || wl > maxDigest || dl > maxDigest ||
		l+wl+dl != uint64(len(p)) || (flag == 0) != (l == 0) || flag == 0 && (round != 0 || rec.attempt != 0) ||
		wflag == 0 && (wround != 0 || wl != 0) {
		return rec, errors.New("inconsistent record")
	}
	rec.learner, rec.unmasked, rec.round = int(learner), flag == 1, int(round)
	rec.msg = bytes.Clone(p[:l])
	rec.witnessed, rec.seenRound, rec.seenDigest = wflag == 1, int(wround), bytes.Clone(p[l:l+wl])
	rec.data = string(p[l+wl:])
	return rec, nil
}

// learnerState is a learner's state directory, locked while the learner
// runs, and its record (nil until the learner is bound to a run).
type learnerState struct {
	dir  string
	id   int
	lock *dirLock
	rec  *learnerRecord
	// file is the file the record was read from ("": none); gen is this
	// process's generation, claimed by its first write (claimed).
	file    string
	gen     uint64
	claimed bool
	// moved is set once learner.state is the tombstone.
	moved bool
	// data is the digest of the data this process deals its clients
	// from ("": not known), bound to the record by its first write.
	data string
	// afterCheck, test-only, is called by write after its lock check
	// passed and before the record is written: a process frozen there.
	afterCheck func()
}

// openLearnerState locks dir (creating it) for learner id and reads its
// record, if any. A record that is corrupt, of another format or of
// another learner is refused, never replaced.
func openLearnerState(dir string, id int) (ls *learnerState, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("fednet: learner state directory: %w", err)
	}
	if err := checkPrivateDir(dir, "learner"); err != nil {
		return nil, fmt.Errorf("fednet: %w", err)
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
	// Under the lock no other process of this learner writes here: a
	// temporary file of the record is a leftover of a killed one.
	if _, err := atomicfile.RemoveStaleOf(dir, 0, learnerRecordFile); err != nil {
		return nil, fmt.Errorf("fednet: learner state directory %s: removing stale temporary files: %w", dir, err)
	}
	gs, err := generations(store{dir}, learnerPrefix, learnerSuffix, learnerName, "refusing to start (move it out if you put it there; else use a fresh directory for a new run)")
	if err != nil {
		return nil, fmt.Errorf("fednet: learner state: %w", err)
	}
	ls.file, ls.gen = learnerFile, 1
	if len(gs) > 0 {
		ls.file, ls.gen = learnerName(gs[len(gs)-1]), gs[len(gs)-1]+1
		ls.moved = isTombstone(store{dir}.path(learnerFile))
	}
	path := ls.path()
	// As the server's state files: never a symbolic link, which would
	// make another file pass for the record.
	_, err = store{dir}.checkRegular(ls.file)
	if errors.Is(err, fs.ErrNotExist) && len(gs) == 0 {
		ls.file = ""
		return ls, nil
	}
	var data []byte
	if err == nil {
		data, err = atomicfile.ReadRegular(path, int64(maxLearnerFile))
	}
	if err != nil {
		return nil, fmt.Errorf("fednet: learner state: %v; refusing to start (%s must be the learner's record, a regular file: put the record back, or use a fresh directory for a new run)", err, path)
	}
	if bytes.HasPrefix(data, []byte(learnerMoved)) {
		return nil, fmt.Errorf("fednet: learner state %s says that this learner's record is in %sGGGGGGGG%s files, and there is none: they were lost or removed; refusing to start (restore them, or use a fresh directory for a new run)", path, learnerPrefix, learnerSuffix)
	}
	rec, err := decodeLearnerRecord(data)
	if err != nil {
		return nil, fmt.Errorf("fednet: learner state %s: %v; refusing to start (it records the newest model this learner received and which attempt of a round it unmasked: restore it, or use a fresh directory for a new run)", path, err)
	}
	if rec.learner != id {
		return nil, fmt.Errorf("fednet: learner state %s is learner %d's, this is learner %d: one state directory per learner", path, rec.learner, id)
	}
	if err := checkDirBinding(dir, rec); err != nil {
		return nil, err
	}
	if len(gs) > 0 && !ls.moved {
		if err := ls.checkBeside(rec); err != nil {
			return nil, err
		}
	}
	ls.rec = &rec
	return ls, nil
}

// checkBeside refuses to start on rec, the largest generation's record,
// where learner.state still holds a record of this run and learner (no
// tombstone: a process was killed between its claim of a generation and
// the tombstone) that rec does not cover: an older dpmf, which reads and
// writes only learner.state, ran since and may have answered phase 4 of
// a round or received a newer model that rec does not record. A record
// one write on from learner.state's (the kill's) covers it: writes only
// add an unmask answer of a later round or a newer witness.
func (ls *learnerState) checkBeside(rec learnerRecord) error {
	path := store{ls.dir}.path(learnerFile)
	data, err := atomicfile.ReadRegular(path, int64(maxLearnerFile))
	if err != nil {
		return nil // none (or not a record): nothing written by an older dpmf
	}
	old, err := decodeLearnerRecord(data)
	if err != nil || old.run != rec.run || old.learner != rec.learner || covers(rec, old) {
		return nil
	}
	return fmt.Errorf("fednet: learner state %s holds a record that %s does not cover (an unmask answer or a model received that it lacks): an older dpmf ran on the directory after this one was stopped between its first two writes; refusing to start (finish the run with that dpmf, or use a fresh directory for a new run)", path, ls.path())
}

// covers reports whether rec records everything old does: old's unmask
// answer (or one of a later round) and old's witness (or a later one).
func covers(rec, old learnerRecord) bool {
	if old.unmasked && !(rec.unmasked && (rec.round > old.round ||
		rec.round == old.round && rec.attempt == old.attempt && bytes.Equal(rec.msg, old.msg))) {
		return false
	}
	return !old.witnessed || rec.witnessed && (rec.seenRound > old.seenRound ||
		rec.seenRound == old.seenRound && bytes.Equal(rec.seenDigest, old.seenDigest))
}

// isTombstone reports whether the file at path is a regular file that
// begins with learnerMoved.
func isTombstone(path string) bool {
	f, err := atomicfile.OpenRegular(path)
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, len(learnerMoved))
	_, err = io.ReadFull(f, b)
	return err == nil && string(b) == learnerMoved
}

// checkDirBinding refuses a record that was first written in another
// directory than dir: a copy of the learner's directory (or a restore from
// a backup into a directory made anew) is refused, because the lock holds
// one directory only, so that a copy run beside the original would be a
// second process of one learner with a record of its own, and a restored
// one may lag behind what the learner recorded (an unmask answer, the
// newest model). A rename keeps the directory's inode and creation time.
func checkDirBinding(dir string, rec learnerRecord) error {
	const fix = "run the learner on the directory its record was written in; a fresh directory is for a new run"
	if ino, ok := dirInode(dir); ok && rec.dirIno != 0 && ino != rec.dirIno {
		return fmt.Errorf("fednet: learner state directory %s is a copy or a restore of the one learner %d's record of run %v was written in (inode %d, this one %d); refusing to start: %s", dir, rec.learner, rec.run, rec.dirIno, ino, fix)
	}
	if birth, ok := dirBirth(dir); ok && rec.dirBirth != 0 && birth != rec.dirBirth {
		return fmt.Errorf("fednet: learner state directory %s is a copy or a restore of the one learner %d's record of run %v was written in (that one was created at %s, this one at %s); refusing to start: %s", dir, rec.learner, rec.run,
			time.Unix(0, rec.dirBirth).UTC().Format(time.RFC3339Nano), time.Unix(0, birth).UTC().Format(time.RFC3339Nano), fix)
	}
	return nil
}

// path is the file the record was read from or last written to (the
// older single file where there is none).
func (ls *learnerState) path() string { return filepath.Join(ls.dir, cmp.Or(ls.file, learnerFile)) }

// Close releases the directory's lock.
func (ls *learnerState) Close() error { return ls.lock.Close() }

// write writes rec durably to this process's generation's file, then
// keeps it. It first checks that the directory's lock is still this
// process's: once the lock file was removed or replaced, a second process
// of this learner may hold the directory and have recorded an unmask
// answer of its own, which this one must never replace (a restart of the
// second would then answer this attempt too). A write already past the
// check when the second process starts writes this process's own file,
// of a smaller generation than the second's (or fails to claim the
// second's): see learnerFile's comment.
func (ls *learnerState) write(rec learnerRecord) error {
	if err := ls.lock.held(); err != nil {
		return fmt.Errorf("fednet: %w", err)
	}
	if ls.afterCheck != nil {
		ls.afterCheck()
	}
	if rec.dirIno == 0 && rec.dirBirth == 0 {
		// A new record, or one of a format without the binding: bound to
		// the directory it is written in.
		rec.dirIno, _ = dirInode(ls.dir)
		rec.dirBirth, _ = dirBirth(ls.dir)
	}
	if rec.data == "" {
		// Likewise bound to the data this process deals (checkData).
		rec.data = ls.data
	}
	st := store{ls.dir}
	name := learnerName(ls.gen)
	write := st.write
	if !ls.claimed {
		write = st.writeNew
	}
	if err := write(name, 0o600, rec.encode()); err != nil {
		return fmt.Errorf("fednet: writing the learner state: %w", err)
	}
	ls.rec, ls.file = &rec, name
	if !ls.claimed {
		ls.claimed = true
		// The older generations' files are never read again (their
		// removal need not be durable).
		if gs, err := numbered(st, learnerPrefix, learnerSuffix, learnerName); err == nil {
			for _, g := range gs {
				if g < ls.gen {
					os.Remove(st.path(learnerName(g)))
				}
			}
		}
	}
	if !ls.moved {
		// Durably, before the caller acts on the record: from now on an
		// older dpmf refuses the directory.
		if err := st.write(learnerFile, 0o600, []byte(learnerTombstone)); err != nil {
			return fmt.Errorf("fednet: writing the learner state: %w", err)
		}
		ls.moved = true
	}
	return nil
}

// bind binds the directory to the run the server serves: a directory
// without a record records the run; one of another run is refused unless
// newRun says to replace it.
func (ls *learnerState) bind(run []byte, newRun bool) error {
	if len(run) != len(runID{}) {
		return fmt.Errorf("fednet: the server's run identity has %d bytes, want %d", len(run), len(runID{}))
	}
	id := runID(run)
	switch {
	case ls.rec != nil && ls.rec.run == id:
		return nil
	case ls.rec != nil && !newRun:
		return fmt.Errorf("fednet: learner state %s belongs to run %v, the server serves run %v: give a new run a fresh state directory (LearnerOptions.NewRun, ofl learner -new-run, replaces the old run's record)", ls.path(), ls.rec.run, id)
	}
	return ls.write(learnerRecord{run: id, learner: ls.id})
}

// checkData refuses to go on in run (the server's run identity) when the
// record is of that run and was written with data of another digest than
// this process's (ls.data), or with a digest and this process's data
// reports none: a run's privacy record counts each client in the rounds
// its participation allows, and a learner whose clients are dealt anew in
// the middle of the run (another seed or split, a changed file) would
// serve, in the rounds still to come, clients that the rounds already
// released used, each then in two releases. A record of another run is
// not checked (bind refuses it, or replaces it under NewRun).
func (ls *learnerState) checkData(run []byte) error {
	if ls == nil || ls.rec == nil {
		return nil
	}
	rec := ls.rec
	if rec.data == "" || rec.data == ls.data || !bytes.Equal(rec.run[:], run) {
		return nil
	}
	now := "reports no digest, so it cannot be shown to be the same"
	if ls.data != "" {
		now = "has SHA-256 " + lockHolder([]byte(ls.data))
	}
	return fmt.Errorf("fednet: learner state %s records that learner %d took part in run %v with data of SHA-256 %s, and this learner's data %s: a learner must deal the same clients all through a run (in ofl, the same -data, -split and -seed), or clients the released rounds used would be used again, beyond the participation the run's noise was calibrated for; refusing to go on (restart with the run's data; a fresh directory is for a new run)",
		ls.path(), rec.learner, rec.run, lockHolder([]byte(rec.data)), now)
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

// witness returns the newest model the learner recorded receiving (its
// round, run and digest; no entries), or nil if none (or ls is nil: the
// learner has no state directory).
func (ls *learnerState) witness() *model {
	if ls == nil || ls.rec == nil || !ls.rec.witnessed {
		return nil
	}
	return &model{round: ls.rec.seenRound, run: bytes.Clone(ls.rec.run[:]), digest: bytes.Clone(ls.rec.seenDigest)}
}

// recordWitness records durably that the learner received m, a model of
// the run the directory is bound to; the caller uses m only after it
// returns nil. The witness never goes back: a model of an earlier round
// than the one recorded, or another model of that round, is refused (the
// server's state was rewound or swapped), and the same model again
// changes nothing.
func (ls *learnerState) recordWitness(m *model) error {
	if err := ls.checkRound(m.round); err != nil {
		return err
	}
	rec := ls.rec
	switch {
	case rec == nil:
		return errors.New("fednet: the learner state is bound to no run")
	case !bytes.Equal(m.run, rec.run[:]):
		return fmt.Errorf("fednet: the server sent a model of run %x, the learner state %s is bound to run %v; stopping", m.run, ls.path(), rec.run)
	case len(m.digest) > maxDigest:
		return fmt.Errorf("fednet: the server's digest of round %d has %d bytes, want at most %d", m.round, len(m.digest), maxDigest)
	case rec.witnessed && m.round < rec.seenRound:
		return fmt.Errorf("fednet: the server sent round %d, but this learner received round %d (%s): the server's state was rewound; stopping", m.round, rec.seenRound, ls.path())
	case rec.witnessed && m.round == rec.seenRound && !bytes.Equal(m.digest, rec.seenDigest):
		return fmt.Errorf("fednet: the server sent another model of round %d than this learner received (%s): its state was swapped; stopping", m.round, ls.path())
	case rec.witnessed && m.round == rec.seenRound:
		return nil
	}
	next := *rec
	next.witnessed, next.seenRound, next.seenDigest = true, m.round, bytes.Clone(m.digest)
	return ls.write(next)
}
