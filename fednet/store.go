package fednet

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dpmf/dpmf/internal/atomicfile"
	"github.com/dpmf/dpmf/internal/private"
	"github.com/dpmf/dpmf/mechanism"
)

// The server's state directory holds, each file written to a temporary file,
// synced, renamed into place (a released round's file: linked, never
// replacing one) and the directory synced:
//
//	lock               locked by the one server that uses the directory
//	run.json           the run's record: its identity, plan and noise-key fingerprint
//	noise.key          the 256-bit noise key (mode 0600), unless the caller gives the key
//	released           the high-water mark: the last released round and its file's hash
//	round-NNNNNNNN.x   the released model x^r, one file per round r = 0..R
//	secagg-GGGGGGGG.state  with secure aggregation: the open round's attempt at its last phase close, one file per server generation G (secstore.go)
//
// A round file is: the 8 bytes "DPMFXR02", the run's 16-byte identity,
// little-endian uint64 round, dimension and number of aggregated updates,
// the SHA-256 that ends round r-1's file (for round 0: the plan's digest,
// planDigest, in state format 3; zeros in format 2), the dimension's
// float64 entries (little-endian IEEE 754), and the SHA-256 of everything
// before it. The files form a hash chain: the hash that ends round r's
// file commits to every round before it and, from format 3 on, to the
// plan run.json records.
//
// The high-water mark is: the 8 bytes "DPMFHW01", the run's identity, the
// little-endian uint64 round and the hash that ends that round's file, and
// the SHA-256 of everything before it. It is written, and the directory
// synced, after the round file and before the model is served to anyone.
const (
	runFile    = "run.json"
	keyFile    = "noise.key"
	markFile   = "released"
	lockFile   = "lock"
	roundMagic = "DPMFXR02"
	markMagic  = "DPMFHW01"
	// stateFormat is the format of the state directory run.json records
	// for a new run. Format 3 binds the plan to the run: round 0's file
	// starts the hash chain with the plan's digest (planDigest).
	stateFormat = 3
	// legacyFormat is the format before: round 0's chain starts from
	// zeros and nothing outside run.json records its plan. A directory of
	// this format is read and resumed as before.
	legacyFormat = 2
)

// Limits of the state files read back: none is longer in a valid
// directory (a round file of a model with up to MaxWire entries, the
// largest dimension NewServer takes; before, a read took 2^28 entries and
// a server of a larger model refused its own directory at every restart).
const (
	maxRunFile         = 1 << 20
	maxRoundFile int64 = int64(roundHead) + 8*MaxWire + sha256.Size
)

// roundHead is the length of a round file's header: magic, run identity,
// round, dimension, updates and the previous round's hash.
const roundHead = len(roundMagic) + 16 + 24 + sha256.Size

// markLen is the length of the high-water mark file.
const markLen = len(markMagic) + 16 + 8 + 2*sha256.Size

// roundName returns the file name of round r's model.
func roundName(r int) string { return fmt.Sprintf("round-%08d.x", r) }

// serverFile reports whether base names one of the files a server writes
// in its state directory: run.json, noise.key, released, a round file or
// a secure-aggregation snapshot (of this format or the older one).
func serverFile(base string) bool {
	switch base {
	case runFile, keyFile, markFile, secOldFile:
		return true
	}
	return strings.HasPrefix(base, "round-") && strings.HasSuffix(base, ".x") ||
		strings.HasPrefix(base, secPrefix) && strings.HasSuffix(base, secSuffix)
}

// runID identifies a run: 16 random bytes drawn when its state directory
// is created, recorded in run.json and in every round file.
type runID [16]byte

func (id runID) String() string { return hex.EncodeToString(id[:]) }

// Released is a released model as stored: x^Round, aggregated from Updates
// learners' updates (0 for the initial model).
type Released struct {
	Round   int
	Updates int
	X       []float64
}

// roundHeader is what a round file says of itself besides the model.
type roundHeader struct {
	run       runID
	round     int
	dim       int
	updates   int
	prev, sum [sha256.Size]byte
}

// parseRoundHeader parses the header of a round file of size bytes and
// checks that the size agrees with it; tail is the file's last 32 bytes.
func parseRoundHeader(head []byte, tail []byte, size int64) (roundHeader, error) {
	var h roundHeader
	if len(head) < len(roundMagic) || string(head[:len(roundMagic)]) != roundMagic {
		if len(head) >= len(roundMagic) && strings.HasPrefix(string(head[:len(roundMagic)]), "DPMFXR") {
			return h, fmt.Errorf("round file format %q, want %q (%s)", head[:len(roundMagic)], roundMagic, writtenBy(string(head[:len(roundMagic)]) < roundMagic))
		}
		return h, errors.New("not a round file (bad magic)")
	}
	if len(head) < roundHead || len(tail) != sha256.Size {
		return h, errors.New("not a round file (too short)")
	}
	copy(h.run[:], head[len(roundMagic):])
	u := func(k int) uint64 { return binary.LittleEndian.Uint64(head[len(roundMagic)+16+8*k:]) }
	round, dim, upd := u(0), u(1), u(2)
	copy(h.prev[:], head[roundHead-sha256.Size:])
	copy(h.sum[:], tail)
	if round > math.MaxInt32 || upd > math.MaxInt32 || dim > MaxWire ||
		size != int64(roundHead)+8*int64(dim)+sha256.Size {
		return h, errors.New("inconsistent header")
	}
	h.round, h.dim, h.updates = int(round), int(dim), int(upd)
	return h, nil
}

// decodeRound parses a whole round file, checking its magic and checksum.
func decodeRound(data []byte) (roundHeader, []float64, error) {
	if len(data) < roundHead+sha256.Size {
		h, err := parseRoundHeader(data, nil, int64(len(data))) // without a tail: an error
		return h, nil, err
	}
	body := data[:len(data)-sha256.Size]
	h, err := parseRoundHeader(data[:roundHead], data[len(body):], int64(len(data)))
	if err != nil {
		return h, nil, err
	}
	if sum := sha256.Sum256(body); sum != h.sum {
		return h, nil, errors.New("checksum mismatch")
	}
	x := make([]float64, h.dim)
	for k := range x {
		x[k] = math.Float64frombits(binary.LittleEndian.Uint64(body[roundHead+8*k:]))
	}
	return h, x, nil
}

// seal returns b followed by its SHA-256, as every state file ends.
func seal(b []byte) []byte {
	sum := sha256.Sum256(b)
	return append(b, sum[:]...)
}

// unseal checks the magic and the final SHA-256 of a state file (what)
// whose part before the hash is at least head bytes long, and returns that
// part after the magic.
func unseal(data []byte, magic string, head int, what string) ([]byte, error) {
	if len(data) < head+sha256.Size || string(data[:len(magic)]) != magic {
		return nil, fmt.Errorf("not a %s of format %s (bad magic or too short)", what, magic)
	}
	body := data[:len(data)-sha256.Size]
	if sum := sha256.Sum256(body); !bytes.Equal(sum[:], data[len(body):]) {
		return nil, errors.New("checksum mismatch")
	}
	return body[len(magic):], nil
}

// store is the server's state directory.
type store struct {
	dir string
}

func (s store) path(name string) string { return filepath.Join(s.dir, name) }

// write writes name durably: the file is synced, renamed into place and
// the directory synced, each checked. Like atomicfile.WriteDurable, it
// replaces only a writable regular file (atomicfile.CheckTarget, before
// the temporary file is made and again before the rename), and a file it
// replaces keeps its permission bits.
func (s store) write(name string, perm os.FileMode, data []byte) error {
	path := s.path(name)
	if err := atomicfile.CheckTarget(path); err != nil {
		return err
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
		perm = fi.Mode().Perm()
	}
	return s.put(name, perm, data, false)
}

// encodeRound returns the file of x^r of run id, chained to prev (the hash
// that ends the previous round's file), and the hash that ends it.
func encodeRound(id runID, prev [sha256.Size]byte, rel Released) ([]byte, [sha256.Size]byte) {
	b := make([]byte, 0, roundHead+8*len(rel.X)+sha256.Size)
	b = append(append(b, roundMagic...), id[:]...)
	for _, v := range []uint64{uint64(rel.Round), uint64(len(rel.X)), uint64(rel.Updates)} {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	b = append(b, prev[:]...)
	for _, v := range rel.X {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	b = seal(b)
	return b, [sha256.Size]byte(b[len(b)-sha256.Size:])
}

// writeRound writes x^r of run id, chained to prev, durably, replacing
// any file of round r, and returns the hash that ends its file.
func (s store) writeRound(id runID, prev [sha256.Size]byte, rel Released) ([sha256.Size]byte, error) {
	b, sum := encodeRound(id, prev, rel)
	return sum, s.write(roundName(rel.Round), 0o644, b)
}

// writeNew writes name durably, as write does, but never replaces a file
// of that name: the synced temporary file is hard-linked to name, which
// fails if name exists, and then removed. (Where the file system has no
// hard links, the file is renamed into place without replacing, or after
// a check where no such rename exists: atomicfile.DurableOptions.Once.)
func (s store) writeNew(name string, perm os.FileMode, data []byte) error {
	return s.put(name, perm, data, true)
}

// put writes data to a temporary file of the directory, with permission
// bits perm (exactly, not minus the umask), syncs and closes it, and puts
// it in place as name: linked (once, never over an existing file) or
// renamed (replacing one), then the directory is synced. Every step is
// checked: atomicfile.WriteDurableWith, whose every file operation a test
// can fail (atomicfiletest.FailOps).
func (s store) put(name string, perm os.FileMode, data []byte, once bool) error {
	path := s.path(name)
	err := atomicfile.WriteDurableWith(path, perm, atomicfile.DurableOptions{ExactPerm: true, Once: once}, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, atomicfile.ErrExists):
		return fmt.Errorf("%s already exists, but each such file is written once: another server or learner process put it there (was the lock file removed?); stopping without serving or sending what it holds", path)
	case errors.Is(err, atomicfile.ErrTempGone):
		return fmt.Errorf("writing %s: its temporary file is gone (another server or learner process started on the directory, or the directory was moved or replaced); stopping without serving or sending what it holds", path)
	}
	return fmt.Errorf("writing %s: %w", path, err)
}

// readRegular reads a state file, refusing a symbolic link (a state file
// is never one: a link could make another run's file, or any file, pass
// for this run's) and anything but a regular file.
func (s store) readRegular(name string, max int64) ([]byte, error) {
	if _, err := s.checkRegular(name); err != nil {
		return nil, err
	}
	return atomicfile.ReadRegular(s.path(name), max)
}

// checkRegular returns name's Lstat, or an error if it is a symbolic link
// or not a regular file, and the error of Lstat (fs.ErrNotExist) if it is
// missing.
func (s store) checkRegular(name string) (fs.FileInfo, error) {
	fi, err := os.Lstat(s.path(name))
	if err != nil {
		return nil, err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, fmt.Errorf("%s is a symbolic link: a state file must be a regular file", s.path(name))
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", s.path(name))
	}
	return fi, nil
}

// readHeader reads the header and the final hash of round r's file
// without reading the model.
func (s store) readHeader(r int) (roundHeader, error) {
	name := roundName(r)
	if _, err := s.checkRegular(name); err != nil {
		return roundHeader{}, err
	}
	f, err := atomicfile.OpenRegular(s.path(name))
	if err != nil {
		return roundHeader{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return roundHeader{}, err
	}
	head := make([]byte, roundHead)
	tail := make([]byte, sha256.Size)
	if fi.Size() < int64(roundHead+sha256.Size) {
		return roundHeader{}, fmt.Errorf("%s: not a round file (too short)", s.path(name))
	}
	if _, err := f.ReadAt(head, 0); err != nil {
		return roundHeader{}, fmt.Errorf("%s: %w", s.path(name), err)
	}
	if _, err := f.ReadAt(tail, fi.Size()-sha256.Size); err != nil {
		return roundHeader{}, fmt.Errorf("%s: %w", s.path(name), err)
	}
	h, err := parseRoundHeader(head, tail, fi.Size())
	if err != nil {
		return h, fmt.Errorf("%s: %v", s.path(name), err)
	}
	if h.round != r {
		return h, fmt.Errorf("%s: holds round %d", s.path(name), h.round)
	}
	return h, nil
}

// readRound reads and checks round r's whole file.
func (s store) readRound(r int) (roundHeader, Released, error) {
	name := roundName(r)
	data, err := s.readRegular(name, maxRoundFile)
	if err != nil {
		return roundHeader{}, Released{}, err
	}
	h, x, err := decodeRound(data)
	if err != nil {
		return h, Released{}, fmt.Errorf("%s: %v", s.path(name), err)
	}
	if h.round != r {
		return h, Released{}, fmt.Errorf("%s: holds round %d", s.path(name), h.round)
	}
	return h, Released{Round: r, Updates: h.updates, X: x}, nil
}

// ReadRound reads and checks round r's model in the state directory dir:
// the file's checksum, and that it belongs to the run that dir's run.json
// records.
func ReadRound(dir string, r int) (Released, error) {
	if r < 0 {
		return Released{}, fmt.Errorf("fednet: round %d, want >= 0", r)
	}
	s := store{dir}
	rec, err := s.readRun()
	if err != nil {
		return Released{}, err
	}
	h, rel, err := s.readRound(r)
	if err != nil {
		return Released{}, err
	}
	if h.run != rec.id {
		return Released{}, fmt.Errorf("%s: belongs to run %v, the directory's run is %v", s.path(roundName(r)), h.run, rec.id)
	}
	return rel, nil
}

// ReadPlan returns the run's description that dir's run.json records: the
// plan's JSON when the server was given ServerOptions.Plan (ofl server
// gives the run's plan.Plan), else the description NewServer made. In a
// directory of state format 3 the plan is checked against the digest that
// round 0's file (checksummed) starts the run's hash chain with: a plan
// changed in run.json (a bit flip, an edit) is refused. A directory of
// format 2 records no digest, and its plan is returned as recorded (once
// round 0's file, if readable, shows no digest: a format changed from 3 to
// 2 in run.json is refused).
func ReadPlan(dir string) (json.RawMessage, error) {
	s := store{dir}
	rec, err := s.readRun()
	if err != nil {
		return nil, err
	}
	h, _, err := s.readRound(0)
	switch {
	case err != nil && rec.Format == legacyFormat:
		return rec.Plan, nil // nothing records its plan: as before
	case err != nil:
		return nil, fmt.Errorf("%s, which binds run.json's plan to the run, cannot be read, so the plan cannot be checked: %v", s.path(roundName(0)), err)
	}
	if h.run != rec.id {
		return nil, fmt.Errorf("%s: belongs to run %v, the directory's run is %v", s.path(roundName(0)), h.run, rec.id)
	}
	if err := s.checkPlan(rec, h.prev); err != nil {
		return nil, err
	}
	return rec.Plan, nil
}

// planDigest is the digest of a run's plan that round 0's file records
// (state format 3): SHA-256 of a domain string and the plan's canonical
// JSON, as encoding/json writes it into run.json (compact, HTML
// characters escaped), so that the plan given at the start and the plan
// read back from run.json have one digest.
func planDigest(p json.RawMessage) ([sha256.Size]byte, error) {
	c, err := json.Marshal(p)
	if err != nil {
		return [sha256.Size]byte{}, err
	}
	h := sha256.New()
	h.Write([]byte("dpmf/fednet/plan/v1\x00"))
	h.Write(c)
	return [sha256.Size]byte(h.Sum(nil)), nil
}

// chainStart returns what round 0's file records before its model: zeros
// in state format 2, the plan's digest in format 3.
func chainStart(rec runRecord) ([sha256.Size]byte, error) {
	if rec.Format == legacyFormat {
		return [sha256.Size]byte{}, nil
	}
	return planDigest(rec.Plan)
}

// checkPlan checks that rec's plan is the one whose digest round 0's file
// records (start, its header's previous-hash field).
func (s store) checkPlan(rec runRecord, start [sha256.Size]byte) error {
	want, err := chainStart(rec)
	if err != nil {
		return fmt.Errorf("%s: plan: %v", s.path(runFile), err)
	}
	if rec.Format == legacyFormat && start != want {
		return fmt.Errorf("%s: records state format %d, but %s records a plan digest (format %d): run.json was changed (a disk error or an edit); put back the run's own run.json from a copy if you have one, else start a new run in a fresh state directory", s.path(runFile), legacyFormat, s.path(roundName(0)), stateFormat)
	}
	if want != start {
		return fmt.Errorf("%s: its plan is not the plan run %v started with (%s records another digest): run.json was changed (a disk error or an edit) and its plan cannot be trusted; put back the run's own run.json from a copy if you have one, else start a new run in a fresh state directory", s.path(runFile), rec.id, s.path(roundName(0)))
	}
	return nil
}

// rounds returns the rounds that have a file in dir, increasing.
func (s store) rounds() ([]int, error) { return numbered(s, "round-", ".x", roundName) }

// numbered returns the numbers of the files prefix+number+suffix in the
// directory, increasing. A file of that form whose name is not name(its
// number) is refused: one number, one spelling (a number beyond N's range
// has none).
func numbered[N int | uint64](s store, prefix, suffix string, name func(N) string) ([]N, error) {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, err
	}
	var ns []N
	for _, e := range ents {
		file := e.Name()
		if !strings.HasPrefix(file, prefix) || !strings.HasSuffix(file, suffix) {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(file, prefix), suffix), 10, 64)
		if err != nil || name(N(n)) != file {
			return nil, fmt.Errorf("%s: unexpected file in the state directory: move it out (only the files of the server or learner that uses the directory belong there)", s.path(file))
		}
		ns = append(ns, N(n))
	}
	slices.Sort(ns)
	return ns, nil
}

// maxGen is the largest generation a start takes for its server's
// snapshot file or its learner's record file: one more than the largest
// in its directory. No directory gets near it by starts (one generation
// each); a file of generation maxGen or more could only have been put
// there or renamed, and has no next generation that fits, so a start
// refuses it rather than wrap to a small generation that the next start
// would not read as the newest.
const maxGen = math.MaxInt64

// generations returns numbered's generations of the files
// prefix+G+suffix, refusing a directory whose largest generation is
// maxGen or more (todo says what to do).
func generations(s store, prefix, suffix string, name func(uint64) string, todo string) ([]uint64, error) {
	gs, err := numbered(s, prefix, suffix, name)
	if err == nil && len(gs) > 0 && gs[len(gs)-1] >= maxGen {
		g := gs[len(gs)-1]
		return nil, fmt.Errorf("%s: generation %d has no next one (a start takes one more than the largest, at most %d, one per start): no server or learner wrote it, it was put there or renamed; %s", s.path(name(g)), g, uint64(maxGen), todo)
	}
	return gs, err
}

// mark is the high-water mark: the last released round of run id and the
// hash that ends its file.
type mark struct {
	run   runID
	round int
	sum   [sha256.Size]byte
}

// readMark reads and checks the high-water mark.
func (s store) readMark() (mark, error) {
	var m mark
	data, err := s.readRegular(markFile, 1024)
	if err != nil {
		return m, err
	}
	p, err := unseal(data, markMagic, markLen-sha256.Size, "high-water mark file")
	if err == nil && len(data) != markLen {
		err = errors.New("not a high-water mark file (bad length)")
	}
	if err != nil {
		return m, fmt.Errorf("%s: %v", s.path(markFile), err)
	}
	copy(m.run[:], p)
	r := binary.LittleEndian.Uint64(p[16:])
	if r > math.MaxInt32 {
		return m, fmt.Errorf("%s: round %d out of range", s.path(markFile), r)
	}
	m.round = int(r)
	copy(m.sum[:], p[24:])
	return m, nil
}

// writeMark writes the high-water mark durably.
func (s store) writeMark(m mark) error {
	b := append([]byte(markMagic), m.run[:]...)
	b = binary.LittleEndian.AppendUint64(b, uint64(m.round))
	return s.write(markFile, 0o644, seal(append(b, m.sum[:]...)))
}

// runRecord is the content of run.json.
type runRecord struct {
	// Format is the state directory's format, stateFormat.
	Format int `json:"format"`
	// Run is the run's identity (hex).
	Run string `json:"run"`
	// Noise says where the noise key comes from: "none" (no noise),
	// "file" (noise.key, made by the server) or "given" (by the caller,
	// for example from a seed).
	Noise string `json:"noise"`
	// KeySHA256 is the key's fingerprint, keyFingerprint.
	KeySHA256 string `json:"noise_key_sha256,omitempty"`
	// Derivation is the noise derivation's fingerprint
	// (mechanism.DerivationFingerprint) of the build that started the
	// run, recorded with noise only: a resume under another derivation
	// would draw other noise rows than those already released with.
	Derivation string `json:"noise_derivation,omitempty"`
	// DirInode is the inode of the state directory the run started in
	// (0 where the platform has none): a copy has another, but a
	// directory made after one was deleted may get the deleted one's.
	DirInode uint64 `json:"dir_inode,omitempty"`
	// DirBirth is that directory's creation time in nanoseconds since
	// the epoch (0 where the platform or file system records none): a
	// directory made anew in place of a deleted one may get its inode
	// number, never its creation time.
	DirBirth int64 `json:"dir_birth_ns,omitempty"`
	// Plan describes the run: configuration, shape, model, privacy.
	Plan json.RawMessage `json:"plan"`

	id runID
}

// writtenBy says which dpmf wrote a state file of another format, older
// (or else newer) than this one's, and what to do.
func writtenBy(older bool) string {
	if older {
		return "written by an older dpmf: finish the run with it, or start a fresh state directory"
	}
	return "written by a newer dpmf: use that version for this run"
}

// formatError is run.json of another dpmf's format; its message says
// what to do.
type formatError struct{ msg string }

func (e *formatError) Error() string { return e.msg }

// damaged adds to err, why a start refuses a state directory whose files
// are damaged, missing or another run's, what the operator can do. Such
// a directory cannot show which rounds were released (the writes are
// durable and atomic: a crash leaves none of this), so the run cannot
// safely go on in it; a file the server may not read is the exception.
func (s store) damaged(err error) error {
	if errors.Is(err, fs.ErrPermission) {
		return fmt.Errorf("%w; refusing to resume: give the server back read and write access to %s and its files", err, s.dir)
	}
	return fmt.Errorf("%w; refusing to resume from %s: start a new run in a fresh state directory (see docs/distributed.md, Faults)", err, s.dir)
}

// readRun reads and parses run.json.
func (s store) readRun() (runRecord, error) {
	var rec runRecord
	data, err := s.readRegular(runFile, maxRunFile)
	if err != nil {
		return rec, err
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		return rec, fmt.Errorf("%s: %v", s.path(runFile), err)
	}
	if rec.Format != stateFormat && rec.Format != legacyFormat {
		return rec, &formatError{fmt.Sprintf("%s: state format %d, want %d (%s)", s.path(runFile), rec.Format, stateFormat, writtenBy(rec.Format < stateFormat))}
	}
	id, err := hex.DecodeString(rec.Run)
	if err != nil || len(id) != len(rec.id) {
		return rec, fmt.Errorf("%s: run identity %q, want 32 hex digits", s.path(runFile), rec.Run)
	}
	copy(rec.id[:], id)
	// run.json has no checksum; what catches a change of it (a bit flip)
	// is that every field is checked: the plan against the one the
	// server is started with and (format 3) against the digest round 0's
	// file records (checkPlan, also by ReadPlan), the key's and the
	// derivation's fingerprints against the key and the build, the identity against the round files
	// and the mark, the directory's inode and creation time against the
	// directory. What remains is a field's spelling, refused here: a name
	// this dpmf never wrote (a flipped name would drop its field, and with
	// it the directory's binding), a noise source it does not know, an
	// identity not in lower-case hex. (encoding/json matches a field's name
	// whatever its case, so a flip of a letter's case reads the same
	// record.)
	strict := json.NewDecoder(bytes.NewReader(data))
	strict.DisallowUnknownFields()
	var again runRecord
	if err := strict.Decode(&again); err != nil {
		return rec, fmt.Errorf("%s: %v: not a field of run.json format %d (the file was changed)", s.path(runFile), err, rec.Format)
	}
	switch {
	case rec.Noise != "none" && rec.Noise != "file" && rec.Noise != "given":
		return rec, fmt.Errorf("%s: noise %q, want none, file or given (the file was changed)", s.path(runFile), rec.Noise)
	case rec.Run != rec.id.String():
		return rec, fmt.Errorf("%s: run identity %q, want 32 lower-case hex digits (the file was changed)", s.path(runFile), rec.Run)
	}
	return rec, nil
}

// keyFingerprint identifies a noise key in run.json without revealing it:
// SHA-256 of a domain string and the key.
func keyFingerprint(key [32]byte) string {
	h := sha256.New()
	h.Write([]byte("dpmf/fednet/noise-key/v1"))
	h.Write(key[:])
	return hex.EncodeToString(h.Sum(nil))
}

// noiseDerivation is mechanism.DerivationFingerprint; tests replace it to
// simulate a build whose noise derivation differs.
var noiseDerivation = mechanism.DerivationFingerprint

// permError is a noise key that group or others may access; its message
// says what to do.
type permError struct{ msg string }

func (e *permError) Error() string { return e.msg }

// readKey reads the noise key file and refuses one that group or others
// may read or write: whoever reads it can remove the noise from every
// released model.
func (s store) readKey() ([32]byte, error) {
	var key [32]byte
	path := s.path(keyFile)
	fi, err := s.checkRegular(keyFile)
	if err != nil {
		return key, err
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return key, &permError{fmt.Sprintf("%s has mode %04o: group or others may access the noise key; run chmod 600 on it (and treat the key as exposed if they did)", path, perm)}
	}
	data, err := s.readRegular(keyFile, 1024)
	if err != nil {
		return key, err
	}
	if len(data) != len(key) {
		return key, fmt.Errorf("%s: %d bytes, want %d", path, len(data), len(key))
	}
	copy(key[:], data)
	return key, nil
}

// stateOptions say what a run needs of its state directory.
type stateOptions struct {
	plan  []byte    // the run's description (JSON)
	x0    []float64 // the initial model
	noise bool      // the run adds noise and needs a key
	key   *[32]byte // the caller's key, or nil for one kept in noise.key
	// beforeCreateWrite, test-only, is called by create before each of
	// its writes (a process frozen there).
	beforeCreateWrite func(name string)
}

// state is a run's state directory, opened and locked.
type state struct {
	store
	lock    *dirLock
	run     runID
	key     [32]byte            // the noise key (zero without noise)
	last    Released            // the last released model
	head    [sha256.Size]byte   // the hash that ends its file
	sums    [][sha256.Size]byte // the hashes that end rounds 0..last
	resumed bool
	stale   int // temporary files removed at start
	// beforeMark, test-only, is called by release between the round
	// file and the mark; an error is a simulated crash there.
	beforeMark func(round int) error
}

// checkPrivateDir refuses a state directory that another local user could
// write into (package private: owned by another user than this process's
// and root, or writable by its group or others), or could replace whole
// through a directory above it (private.CheckDir: one owned by another
// user, or writable by its group or others without the sticky bit): such
// a user could replace the run's record or its rounds, and rewind the
// privacy state. Where there are no Unix mode bits, nothing is checked.
func checkPrivateDir(dir, role string) error {
	err := private.CheckDir(dir)
	var pe *private.Error
	switch {
	case errors.As(err, &pe):
		return fmt.Errorf("state directory %s %s; the %s refuses to use it, since another user could rewrite its state", dir, pe.Reason, role)
	case err != nil:
		return fmt.Errorf("state directory: %w", err)
	}
	return nil
}

// openState locks dir and resumes the run it holds, or starts one in it.
// See docs/distributed.md, "Faults", for what each refusal protects.
func openState(dir string, o stateOptions) (st *state, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	if err := checkPrivateDir(dir, "server"); err != nil {
		return nil, err
	}
	lock, err := lockDir(filepath.Join(dir, lockFile), "server")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			lock.Close()
		}
	}()
	st = &state{store: store{dir}, lock: lock}
	// Under the lock no other server writes here: every temporary file
	// of the server's own files is a leftover of a killed server (a
	// complete model that was never released, perhaps). Other programs'
	// temporary files (an ofl learner's -out pointed here) are left to
	// them.
	if st.stale, err = atomicfile.RemoveStaleOf(dir, 0, serverFile); err != nil {
		return nil, fmt.Errorf("removing stale temporary files: %w", err)
	}
	rec, err := st.readRun()
	var fe *formatError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return st, st.create(o)
	case errors.As(err, &fe):
		return nil, err
	case err != nil:
		return nil, st.damaged(err)
	}
	return st, st.resume(rec, o)
}

// create starts a run in a directory without run.json. run.json is
// written last: a directory without it has released nothing noisy.
func (st *state) create(o stateOptions) error {
	rs, err := st.rounds()
	if err != nil {
		return err
	}
	if len(rs) > 0 && rs[len(rs)-1] > 0 {
		return fmt.Errorf("%s holds released rounds (up to %d) but no %s: the run's record is lost; resuming or restarting on it could release a round twice with the same noise, so use a fresh state directory", st.dir, rs[len(rs)-1], runFile)
	}
	if m, err := st.readMark(); err == nil && m.round > 0 {
		return fmt.Errorf("%s records round %d as released but %s is missing: use a fresh state directory", st.path(markFile), m.round, runFile)
	}
	if _, err := os.Lstat(st.path(keyFile)); err == nil && o.noise && o.key == nil {
		return fmt.Errorf("%s exists but %s does not: it is left from an interrupted start or another run and is never reused for a new run; remove it if no model was released with it, or use a fresh state directory", st.path(keyFile), runFile)
	}
	rand.Read(st.run[:]) // never fails (crypto/rand, Go 1.24+)
	// Round 0's file starts the hash chain with the plan's digest, before
	// run.json and before any round is served: a reader of run.json
	// (ReadPlan, a resume) refuses a plan changed there.
	start, err := planDigest(o.plan)
	if err != nil {
		return fmt.Errorf("the run's plan: %w", err)
	}
	// run.json is made, and its length checked against what a restart
	// reads back, before anything is written: a longer one (a library
	// plan or model name of a megabyte) started a run that every restart
	// then refused as damaged.
	rec := runRecord{Format: stateFormat, Run: st.run.String(), Noise: "none", Plan: o.plan}
	rec.DirInode, _ = dirInode(st.dir)
	rec.DirBirth, _ = dirBirth(st.dir)
	if o.noise {
		if o.key != nil {
			st.key, rec.Noise = *o.key, "given"
		} else {
			rand.Read(st.key[:]) // never fails
			rec.Noise = "file"
		}
		rec.KeySHA256 = keyFingerprint(st.key)
		rec.Derivation = noiseDerivation()
	}
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	if len(data) > maxRunFile {
		return fmt.Errorf("the run's description makes %s %d bytes, more than the %d a restart reads back: shorten the plan (a long model name or data source, say); nothing was written", st.path(runFile), len(data), maxRunFile)
	}
	// Each write checks first that the lock is still this server's: a
	// server frozen here while an operator removed its lock file and
	// another server started a run in the directory must not overwrite
	// that run's files (its key would be lost). The key and run.json,
	// absent when a run is created, are never replaced.
	held := func(name string) error {
		if o.beforeCreateWrite != nil {
			o.beforeCreateWrite(name)
		}
		return st.lock.held()
	}
	st.last = Released{Round: 0, X: o.x0}
	if err := held(roundName(0)); err != nil {
		return err
	}
	if st.head, err = st.writeRound(st.run, start, st.last); err != nil {
		return err
	}
	if err := held(markFile); err != nil {
		return err
	}
	if err := st.writeMark(mark{run: st.run, round: 0, sum: st.head}); err != nil {
		return err
	}
	st.sums = [][sha256.Size]byte{st.head}
	if rec.Noise == "file" {
		if err := held(keyFile); err != nil {
			return err
		}
		if err := st.writeNew(keyFile, 0o600, st.key[:]); err != nil {
			return err
		}
	}
	if err := held(runFile); err != nil {
		return err
	}
	return st.writeNew(runFile, 0o644, data)
}

// resume checks a directory with run.json against the run o describes and
// positions the state at its last released round.
func (st *state) resume(rec runRecord, o stateOptions) error {
	st.run, st.resumed = rec.id, true
	runPath := st.path(runFile)
	if same, legacy := comparePlans(rec.Plan, o.plan); legacy {
		// The digest binds the run to the C its noise streams; without it
		// nothing shows that this build's solvers give the C the rounds
		// so far were released with (a solver change moves C within its
		// certified gap), and mixing two factorizations in one run is not
		// the mechanism the record was calibrated for.
		return fmt.Errorf("%s was written by a dpmf that did not record the factorization's digest (privacy.operator_sha256), so this build cannot check that it streams the noise the run's rounds so far were released with: finish the run with the build that started it, or start a new run in a fresh state directory", runPath)
	} else if !same && legacyRecord(rec.Plan, o.plan) {
		// The record does not say which participation (rounds, strategy,
		// ...) its sensitivity of C is under: plan.Parse refuses it, and a
		// plan calibrated again by this build is not the plan the run's
		// rounds so far were released under.
		return fmt.Errorf("%s was written by a dpmf whose privacy record does not name the participation and other settings it was calibrated under (privacy.participation), so this build cannot check the guarantee it states: finish the run with the build that started it, or start a new run in a fresh state directory", runPath)
	} else if !same {
		return fmt.Errorf("%s describes another run (%s); this one is %s: if it is this run, finish it with the build that started it (a new build can give another plan); otherwise use a fresh state directory", runPath, compact(rec.Plan), compact(o.plan))
	}
	if ino, ok := dirInode(st.dir); ok && rec.DirInode != 0 && ino != rec.DirInode {
		return fmt.Errorf("%s is a copy or a restore of the directory run %v started in (inode %d, this one %d): a copy may lag behind the rounds already released, and resuming it could release a round twice with the same noise; start a fresh run in a fresh state directory", st.dir, st.run, rec.DirInode, ino)
	}
	if birth, ok := dirBirth(st.dir); ok && rec.DirBirth != 0 && birth != rec.DirBirth {
		return fmt.Errorf("%s is a copy or a restore of the directory run %v started in (that one was created at %s, this one at %s): a copy may lag behind the rounds already released, and resuming it could release a round twice with the same noise; start a fresh run in a fresh state directory", st.dir, st.run, time.Unix(0, rec.DirBirth).UTC().Format(time.RFC3339Nano), time.Unix(0, birth).UTC().Format(time.RFC3339Nano))
	}
	if o.noise != (rec.Noise != "none") {
		return fmt.Errorf("%s records noise %q: the run's noise cannot change on a restart; restart with the run's noise settings, or start a new run in a fresh state directory", runPath, rec.Noise)
	}
	if o.noise {
		// The released rounds' noise rows are drawn again on resume (the
		// operator's state): another derivation would continue them with
		// rows unrelated to those released, which is not the mechanism
		// the run was calibrated for.
		switch cur := noiseDerivation(); rec.Derivation {
		case cur:
		case "":
			return fmt.Errorf("%s was written by a dpmf that did not record its noise derivation (noise_derivation), so this build (%s) cannot check that it draws the noise the run's rounds so far were released with: finish the run with the build that started it, or start a new run in a fresh state directory", runPath, cur)
		default:
			return fmt.Errorf("%s records noise derivation %s, this build draws %s: its noise would not continue the rounds already released (another dpmf or Go version, or another machine's floating point); finish the run with the build that started it, or start a new run in a fresh state directory", runPath, rec.Derivation, cur)
		}
	}
	if o.noise {
		switch {
		case o.key != nil:
			st.key = *o.key
		case rec.Noise == "given":
			return fmt.Errorf("%s: the run's noise key was given by the caller (a seed), not kept in %s: restart with the same seed", runPath, keyFile)
		default:
			key, err := st.readKey()
			if errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("%s is missing: the run's noise cannot be resumed without it and a new key is never made for a run that released rounds; use a fresh state directory", st.path(keyFile))
			}
			var pe *permError
			if errors.As(err, &pe) {
				return err
			}
			if err != nil {
				return st.damaged(err)
			}
			st.key = key
		}
		if keyFingerprint(st.key) != rec.KeySHA256 {
			if o.key != nil {
				return fmt.Errorf("the noise key (or seed) is not run %v's: %s records another fingerprint; restart with the run's seed", st.run, runPath)
			}
			return fmt.Errorf("%s is not run %v's noise key (%s records another fingerprint): one of the two was replaced or changed; put back the run's own files if you have them (the fingerprint checks the key), else start a new run in a fresh state directory", st.path(keyFile), st.run, runPath)
		}
	}
	m, err := st.readMark()
	if errors.Is(err, fs.ErrNotExist) {
		return st.damaged(fmt.Errorf("%s is missing: without the high-water mark the server cannot prove it would not release a round twice", st.path(markFile)))
	}
	if err != nil {
		return st.damaged(err)
	}
	if m.run != st.run {
		return st.damaged(fmt.Errorf("%s belongs to run %v, not %v", st.path(markFile), m.run, st.run))
	}
	rs, err := st.rounds()
	if err != nil {
		return err
	}
	last := -1
	if len(rs) > 0 {
		last = rs[len(rs)-1]
	}
	if last < m.round {
		return fmt.Errorf("%s holds rounds up to %d, but round %d was released: round files were lost or restored from an older copy; resuming would release rounds %d..%d again with the same noise, so the server refuses (the released models are those the learners hold): start a new run in a fresh state directory", st.dir, last, m.round, last+1, m.round)
	}
	// The chain from round 0: every round present, of this run, each file
	// naming the one before it; round 0's, in format 3, the plan's digest.
	prev, err := chainStart(rec)
	if err != nil {
		return st.damaged(fmt.Errorf("%s: plan: %v", runPath, err))
	}
	for k, r := range rs {
		if r != k {
			return st.damaged(fmt.Errorf("%s: round %d is missing (found rounds up to %d)", st.dir, k, last))
		}
		h, err := st.readHeader(r)
		if err != nil {
			return st.damaged(err)
		}
		if h.run != st.run {
			return st.damaged(fmt.Errorf("%s belongs to run %v, not %v", st.path(roundName(r)), h.run, st.run))
		}
		if r == 0 {
			if err := st.checkPlan(rec, h.prev); err != nil {
				return err
			}
		} else if h.prev != prev {
			return st.damaged(fmt.Errorf("%s does not follow round %d's file (broken hash chain): a file was replaced", st.path(roundName(r)), r-1))
		}
		// After the run's own checks (its plan first), the run's
		// dimension bounds what the last round's read below takes: a
		// header (and a sparse file) of another dimension would have it
		// read up to 8 MaxWire bytes, 17 GB, before its checksum failed.
		if h.dim != len(o.x0) {
			return st.damaged(fmt.Errorf("%s holds a model of dimension %d, the run's is %d", st.path(roundName(r)), h.dim, len(o.x0)))
		}
		if r == m.round && h.sum != m.sum {
			return st.damaged(fmt.Errorf("%s is not the round %d that was released (%s records another hash)", st.path(roundName(r)), r, st.path(markFile)))
		}
		prev = h.sum
		st.sums = append(st.sums, h.sum)
	}
	h, rel, err := st.readRound(last)
	if err != nil {
		// Never fall back to an earlier round: re-releasing a round with
		// the same noise vector would reveal the difference of two
		// aggregates without noise.
		return st.damaged(fmt.Errorf("the last released model is unreadable: %w", err))
	}
	if h.sum != prev {
		return fmt.Errorf("%s changed while being read: another process writes in %s; stop it and restart", st.path(roundName(last)), st.dir)
	}
	// Rounds past the mark, each this run's and chained from the marked
	// one. Round m.round+1 may have been written and never served (the
	// mark comes before serving): it is released now, for the first time.
	// Rounds further on were released by a server whose mark a stale one
	// then rewound (frozen between its round file and its mark, and
	// thawed after a second server had taken the directory over: its mark
	// write precedes its lock check). A round file is written once, so
	// each is the release it was or would have been; serving it again is
	// never a second release of the round, and the mark moves to the
	// last. Without such rounds the mark is written again as it is: a
	// resume otherwise writes nothing (a plain run's; a secure run writes
	// its snapshot), and a directory this server cannot write in would
	// fail only at the first release, after the learners did a round's
	// work. (A fresh start writes round 0, the mark and run.json.)
	if err := st.writeMark(mark{run: st.run, round: last, sum: h.sum}); err != nil {
		return fmt.Errorf("state directory %s: the server could not write there at start (it writes every round it releases there: make the directory and its files writable by this server): %w", st.dir, err)
	}
	st.last, st.head = rel, h.sum
	return nil
}

// release writes x^r after the current head and then the high-water mark,
// and checks that the directory's lock is still this server's: once
// release returns, x^r may be served. (A server that started on the
// directory after its lock file was removed has read the mark unless
// this check fails, and then x^r is never served.)
func (st *state) release(rel Released) error {
	// A round file is written once: checked before, a lock file replaced
	// by another server's stops this one before it writes, and a file of
	// the round that exists (another server got there between the check
	// and the write) is never replaced.
	if err := st.lock.held(); err != nil {
		return err
	}
	b, sum := encodeRound(st.run, st.head, rel)
	if err := st.writeNew(roundName(rel.Round), 0o644, b); err != nil {
		return err
	}
	if st.beforeMark != nil {
		if err := st.beforeMark(rel.Round); err != nil {
			return err
		}
	}
	if err := st.writeMark(mark{run: st.run, round: rel.Round, sum: sum}); err != nil {
		return err
	}
	if err := st.lock.held(); err != nil {
		return err
	}
	st.head, st.last = sum, rel
	st.sums = append(st.sums, sum)
	return nil
}

// legacyDigest matches the operator digest of a privacy record in compact
// JSON (a quote inside a JSON string is escaped, so the pattern matches
// only a key).
var legacyDigest = regexp.MustCompile(`,"operator_sha256":"[0-9a-f]{64}"`)

// comparePlans reports whether recorded (run.json's plan) and current (the
// plan marshalled for this start) are one run's plan, equal as compact
// JSON; and, when they are not, whether recorded is current as a dpmf
// wrote it before plans recorded the operator's digest
// (plan.OperatorDigest): equal to current without the digest.
func comparePlans(recorded, current []byte) (same, legacy bool) {
	r, c := compact(recorded), compact(current)
	if bytes.Equal(r, c) {
		return true, false
	}
	return false, !bytes.Contains(r, []byte(`"operator_sha256"`)) &&
		len(legacyDigest.FindAllIndex(c, -1)) == 1 &&
		bytes.Equal(r, legacyDigest.ReplaceAll(c, nil))
}

// legacyRecord reports whether recorded (run.json's plan) holds a privacy
// record without the settings it was calibrated under (plan.Record's
// participation, which a dpmf wrote before records named them) while
// current (the plan marshalled for this start) holds one with them.
func legacyRecord(recorded, current []byte) bool {
	type withRecord struct {
		Privacy map[string]json.RawMessage `json:"privacy"`
	}
	var r, c withRecord
	if json.Unmarshal(recorded, &r) != nil || json.Unmarshal(current, &c) != nil || r.Privacy == nil || c.Privacy == nil {
		return false
	}
	_, rok := r.Privacy["participation"]
	_, cok := c.Privacy["participation"]
	return !rok && cok
}

// compact returns JSON text without insignificant white space (or as it
// is, if it is not JSON).
func compact(j []byte) []byte {
	var c bytes.Buffer
	if json.Compact(&c, j) != nil {
		return j
	}
	return c.Bytes()
}
