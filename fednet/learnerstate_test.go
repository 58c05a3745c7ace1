package fednet

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dpmf/dpmf/internal/testutil"
	"github.com/dpmf/dpmf/secagg"
)

// handRecord builds a learner record of the earlier format DPMFLS01
// byte by byte from the layout that learnerstate.go documents (msg nil:
// bound to the run, nothing unmasked). A learner still reads it.
func handRecord(run []byte, learner uint32, round uint64, attempt uint32, msg []byte) []byte {
	b := []byte("DPMFLS01")
	b = append(b, run...)
	b = binary.LittleEndian.AppendUint32(b, learner)
	if msg != nil {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	b = binary.LittleEndian.AppendUint64(b, round)
	b = binary.LittleEndian.AppendUint32(b, attempt)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(msg)))
	b = append(b, msg...)
	sum := sha256.Sum256(b)
	return append(b, sum[:]...)
}

// handRecord2 builds a record of format DPMFLS02 byte by byte from the
// documented layout: handRecord's fields, then the directory's inode and
// creation time and the witness (digest nil: no model received).
func handRecord2(run []byte, learner uint32, round uint64, attempt uint32, msg []byte, ino uint64, birth int64, seen uint64, digest []byte) []byte {
	return handRecordWitness("DPMFLS02", run, learner, round, attempt, msg, ino, birth, seen, digest, nil)
}

// handRecord3 builds a record of format DPMFLS03 byte by byte from the
// documented layout: handRecord2's fields, the length of the data's
// digest after the witness's, and the data's digest after the witness's
// digest ("": not known).
func handRecord3(run []byte, learner uint32, round uint64, attempt uint32, msg []byte, ino uint64, birth int64, seen uint64, digest []byte, data string) []byte {
	return handRecordWitness("DPMFLS03", run, learner, round, attempt, msg, ino, birth, seen, digest, &data)
}

// handRecordWitness is handRecord2 (data nil) and handRecord3 under magic.
func handRecordWitness(magic string, run []byte, learner uint32, round uint64, attempt uint32, msg []byte, ino uint64, birth int64, seen uint64, digest []byte, data *string) []byte {
	b := []byte(magic)
	b = append(b, run...)
	b = binary.LittleEndian.AppendUint32(b, learner)
	if msg != nil {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	b = binary.LittleEndian.AppendUint64(b, round)
	b = binary.LittleEndian.AppendUint32(b, attempt)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(msg)))
	b = binary.LittleEndian.AppendUint64(b, ino)
	b = binary.LittleEndian.AppendUint64(b, uint64(birth))
	if digest != nil {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	b = binary.LittleEndian.AppendUint64(b, seen)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(digest)))
	if data != nil {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(*data)))
	}
	b = append(b, msg...)
	b = append(b, digest...)
	if data != nil {
		b = append(b, *data...)
	}
	sum := sha256.Sum256(b)
	return append(b, sum[:]...)
}

// recordPath returns the file of the newest record in dir: the largest
// generation's, or learner.state where there is none.
func recordPath(t *testing.T, dir string) string {
	t.Helper()
	gs, err := numbered(store{dir}, learnerPrefix, learnerSuffix, learnerName)
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) == 0 {
		return filepath.Join(dir, learnerFile)
	}
	return filepath.Join(dir, learnerName(gs[len(gs)-1]))
}

// readRecord decodes the newest learner record in dir.
func readRecord(t *testing.T, dir string) learnerRecord {
	t.Helper()
	b, err := os.ReadFile(recordPath(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := decodeLearnerRecord(b)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// The record's bytes are the documented layout, and read back; a record
// of an earlier format reads as one without what it lacks: the data's
// digest (DPMFLS02), also the directory and the witness (DPMFLS01).
func TestLearnerRecordFormat(t *testing.T) {
	run := bytes.Repeat([]byte{7}, 16)
	digest := bytes.Repeat([]byte{9}, 64)
	data := strings.Repeat("ab", 32)
	rec := learnerRecord{learner: 5, unmasked: true, round: 9, attempt: 3, msg: []byte("unmask"),
		dirIno: 77, dirBirth: -2, witnessed: true, seenRound: 11, seenDigest: digest, data: data}
	copy(rec.run[:], run)
	want := handRecord3(run, 5, 9, 3, []byte("unmask"), 77, -2, 11, digest, data)
	if got := rec.encode(); !bytes.Equal(got, want) {
		t.Fatalf("encode = %x, want %x", got, want)
	}
	back, err := decodeLearnerRecord(want)
	if err != nil || back.run != rec.run || back.learner != 5 || !back.unmasked || back.round != 9 || back.attempt != 3 || string(back.msg) != "unmask" ||
		back.dirIno != 77 || back.dirBirth != -2 || !back.witnessed || back.seenRound != 11 || !bytes.Equal(back.seenDigest, digest) || back.data != data {
		t.Fatalf("decode = %+v, %v", back, err)
	}
	bound := learnerRecord{learner: 2}
	copy(bound.run[:], run)
	if got := bound.encode(); !bytes.Equal(got, handRecord3(run, 2, 0, 0, nil, 0, 0, 0, nil, "")) {
		t.Fatalf("a bound record encodes as %x", got)
	}
	v2, err := decodeLearnerRecord(handRecord2(run, 5, 9, 3, []byte("unmask"), 77, -2, 11, digest))
	if err != nil || v2.run != rec.run || v2.learner != 5 || !v2.unmasked || v2.round != 9 || v2.attempt != 3 || string(v2.msg) != "unmask" ||
		v2.dirIno != 77 || v2.dirBirth != -2 || !v2.witnessed || v2.seenRound != 11 || !bytes.Equal(v2.seenDigest, digest) || v2.data != "" {
		t.Fatalf("decode of a DPMFLS02 record = %+v, %v", v2, err)
	}
	old, err := decodeLearnerRecord(handRecord(run, 5, 9, 3, []byte("unmask")))
	if err != nil || old.run != rec.run || old.learner != 5 || !old.unmasked || old.round != 9 || old.attempt != 3 || string(old.msg) != "unmask" ||
		old.dirIno != 0 || old.dirBirth != 0 || old.witnessed {
		t.Fatalf("decode of a DPMFLS01 record = %+v, %v", old, err)
	}
	// Inconsistent or truncated records are refused (the inconsistent
	// ones with their checksum made right, so that only the layout's
	// checks can tell).
	withFlag := func(flag byte) []byte {
		b := handRecord2(run, 5, 0, 0, nil, 0, 0, 3, digest)
		b[learnerHeadV1+16] = flag
		return reseal(b)
	}
	long := handRecord2(run, 5, 0, 0, nil, 0, 0, 3, bytes.Repeat([]byte{1}, maxDigest+1))
	longData := handRecord3(run, 5, 0, 0, nil, 0, 0, 0, nil, strings.Repeat("a", maxDigest+1))
	for name, b := range map[string][]byte{
		"witness flag 2":                 withFlag(2),
		"a digest without the flag":      withFlag(0),
		"a digest over the bound":        long,
		"a data digest over the bound":   longData,
		"DPMFLS03 without the data part": reseal(append([]byte(learnerMagic), handRecord2(run, 5, 0, 0, nil, 0, 0, 0, nil)[len(learnerMagic):]...)),
		"truncated":                      want[:len(want)-1],
		"empty":                          {},
	} {
		if _, err := decodeLearnerRecord(b); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

// reseal replaces the SHA-256 that ends b by that of the rest.
func reseal(b []byte) []byte {
	return seal(b[:len(b)-sha256.Size])
}

// A learner's state directory is refused, with one line naming the
// problem and without the file being replaced: no directory in a secure
// run, a directory another learner process holds, a record that is
// corrupt, of another format, of another learner, of another run
// (accepted with NewRun), or of a later round than the server's (the
// server was rewound).
func TestLearnerStateRefused(t *testing.T) {
	r := newRun(t, 2, 1, 1, 4)
	secureRun(t, r)
	srvDir := t.TempDir()
	s := serve(t, secureOptions(r, srvDir, 2), nil)
	run := s.srv.run[:]
	other := bytes.Repeat([]byte{0xab}, 16)
	snapshot, err := os.ReadFile(filepath.Join(srvDir, secName(1)))
	if err != nil {
		t.Fatal(err)
	}
	good := handRecord(run, 0, 0, 0, nil)
	corrupt := bytes.Clone(good)
	corrupt[20] ^= 1
	start := func(dir string, newRun bool) error {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		o := secLearner(r, s.addr, 0, dir)
		o.GiveUp = 5 * time.Second
		o.NewRun = newRun
		_, err := RunLearner(ctx, o)
		return err
	}
	for _, c := range []struct {
		name, want string
		file       []byte // nil: no file
		dir        string // "": a fresh directory
	}{
		{"no state directory", "needs a state directory (LearnerOptions.StateDir, ofl learner -state DIR)", nil, "none"},
		{"corrupt", "checksum mismatch", corrupt, ""},
		{"another format", "not a learner state file", snapshot, ""},
		{"another learner", "is learner 1's, this is learner 0", handRecord(run, 1, 0, 0, nil), ""},
		{"another run", "give a new run a fresh state directory", handRecord(other, 0, 2, 0, []byte{1}), ""},
		{"a later round", "answered the unmask phase of round 1", handRecord(run, 0, 1, 0, []byte{1}), ""},
	} {
		dir := t.TempDir()
		if c.dir == "none" {
			dir = ""
		}
		path := filepath.Join(dir, learnerFile)
		if c.file != nil {
			if err := os.WriteFile(path, c.file, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		err := start(dir, false)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line with %q", c.name, err, c.want)
			continue
		}
		t.Logf("%s: %v", c.name, err)
		if c.file != nil {
			if b, _ := os.ReadFile(path); !bytes.Equal(b, c.file) {
				t.Errorf("%s: the record was replaced", c.name)
			}
		}
	}

	// A directory another learner holds.
	dir := t.TempDir()
	ls, err := openLearnerState(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := start(dir, false); err == nil || !strings.Contains(err.Error(), "in use by another learner") {
		t.Errorf("two learners on one directory: %v, want it refused", err)
	} else {
		t.Logf("two learners on one directory: %v", err)
	}
	ls.Close()

	// NewRun replaces another run's record with this run's (on a new
	// server: the first one's phase 0 has been open since the first
	// learner's call); the run then completes, and the record holds
	// learner 0's unmask answer of the last round as the server received
	// it. A corrupt record stays refused with NewRun.
	s.stop()
	s = serve(t, secureOptions(r, t.TempDir(), 2), nil)
	run = s.srv.run[:]
	if err := os.WriteFile(filepath.Join(dir, learnerFile), corrupt, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := start(dir, true); err == nil || !strings.Contains(err.Error(), "checksum mismatch") {
		t.Fatalf("a corrupt record with NewRun: %v, want it refused", err)
	}
	if err := os.WriteFile(filepath.Join(dir, learnerFile), handRecord(other, 0, 2, 0, []byte{1}), 0o600); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var sent []byte
	s.srv.hooks.record = func(e secEvent) {
		if e.From == 0 && e.Phase == secagg.PhaseUnmask {
			mu.Lock()
			sent = e.Bytes
			mu.Unlock()
		}
	}
	errc := make(chan error, 1)
	go func() {
		_, err := RunLearner(context.Background(), secLearner(r, s.addr, 1, t.TempDir()))
		errc <- err
	}()
	if err := start(dir, true); err != nil {
		t.Fatalf("learner 0 with NewRun: %v", err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("learner 1: %v", err)
	}
	b, err := os.ReadFile(recordPath(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	rec, err := decodeLearnerRecord(b)
	if err != nil || sent == nil || !bytes.Equal(rec.run[:], run) || !rec.unmasked || rec.round != 0 || rec.attempt != 0 || !bytes.Equal(rec.msg, sent) {
		t.Fatalf("the record after the run is %+v (%v), want round 0, attempt 0, the answer the server got", rec, err)
	}
	if !rec.witnessed || rec.seenRound != r.R {
		t.Fatalf("the record after the run witnesses round %d (%v), want %d", rec.seenRound, rec.witnessed, r.R)
	}
	if ino, ok := dirInode(dir); ok && rec.dirIno != ino {
		t.Fatalf("the record is bound to inode %d, the directory's is %d", rec.dirIno, ino)
	}
}

// unmaskLog collects the unmask answers a server receives, by learner.
type unmaskLog struct {
	mu   sync.Mutex
	got  map[int][]secEvent
	both chan struct{} // closed once learners 0 and 1 answered
}

func newUnmaskLog() *unmaskLog {
	return &unmaskLog{got: map[int][]secEvent{}, both: make(chan struct{})}
}

func (l *unmaskLog) record(e secEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e.Phase != secagg.PhaseUnmask {
		return
	}
	l.got[e.From] = append(l.got[e.From], e)
	if len(l.got[0]) > 0 && len(l.got[1]) > 0 && len(l.got[0])+len(l.got[1]) == 2 {
		close(l.both)
	}
}

func (l *unmaskLog) of(i int) []secEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.got[i]
}

// A learner that answered the unmask phase of attempt 0 of a round and is
// restarted (its process ends, its state directory stays) refuses the
// unmask phase of attempt 1 of that round: the first server's attempt
// fails in phase 4 (learners 1 and 2 stop before it), a restarted server
// opens attempt 1, and all three learners restarted on their directories
// complete it without learner 0's unmask answer (its masked input is in
// the sum, its self-mask rebuilt from the others' shares), to the
// simulation's models. Learner 0 tells the server that it unmasked
// attempt 0; 2 learners remain, T = 2, so the server goes on, and closes
// phase 4 once learners 1 and 2 answered, without waiting for learner 0
// (the quorum grace is 20 s).
func TestSecureLearnerRestartRefusesSecondAttempt(t *testing.T) {
	t.Parallel() // waits out its timeouts (little CPU); its own run, servers and hooks
	r := newRun(t, 3, 1, 1, 4)
	secureRun(t, r)
	want := r.simulate(t, nil)
	dir := t.TempDir()
	opt := secureOptions(r, dir, 2)
	opt.RoundTimeout = 3 * time.Second // phase 4 fails with one answer
	srv1, err := NewServer(opt)
	if err != nil {
		t.Fatal(err)
	}
	log1 := newUnmaskLog()
	srv1.hooks.record = log1.record
	s1 := serveServer(t, srv1)
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	ctx, kill := context.WithCancel(context.Background())
	first := make(chan []learnerResult, 1)
	go func() {
		first <- runSecLearners(t, ctx, r, s1.addr, func(i int, o *LearnerOptions) {
			o.StateDir = dirs[i]
			if i > 0 {
				o.stopBefore = func(round int, p secagg.Phase) bool { return p == secagg.PhaseUnmask }
			}
		})
	}()
	if err := <-s1.errc; !errors.Is(err, ErrTooFewLearners) {
		t.Fatalf("first server: %v, want ErrTooFewLearners", err)
	}
	kill() // learner 0 is retrying: it ends as if killed
	for i, l := range <-first {
		if i == 0 && !errors.Is(l.err, context.Canceled) || i > 0 && !errors.Is(l.err, errStopped) {
			t.Fatalf("first learner %d: %v", i, l.err)
		}
	}
	if u := log1.of(0); len(u) != 1 || u[0].Attempt != 0 {
		t.Fatalf("learner 0's unmask answers to the first server: %+v, want one of attempt 0", u)
	}
	s1.stop()

	opt.RoundTimeout, opt.QuorumGrace = 20*time.Second, 20*time.Second
	var log2 testutil.SyncBuffer
	opt.Log = slog.New(slog.NewTextHandler(&log2, nil))
	srv2, err := NewServer(opt)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	phases := map[int][]secagg.Phase{}
	var lastUnmask, unmasked time.Time
	srv2.hooks.record = func(e secEvent) {
		mu.Lock()
		defer mu.Unlock()
		if e.Attempt != 1 {
			t.Errorf("learner %d answered attempt %d, want 1", e.From, e.Attempt)
		}
		phases[e.From] = append(phases[e.From], e.Phase)
		if e.Phase == secagg.PhaseUnmask {
			lastUnmask = time.Now()
		}
	}
	srv2.hooks.release = func(_ int, step string) error {
		if step == "unmasked" {
			mu.Lock()
			unmasked = time.Now()
			mu.Unlock()
		}
		return nil
	}
	s2 := serveServerAt(t, srv2, nil, s1.addr)
	requireLearnersOK(t, "restarted learner", runSecLearners(t, context.Background(), r, s2.addr, func(i int, o *LearnerOptions) { o.StateDir = dirs[i] }))
	if err := <-s2.errc; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	all := []secagg.Phase{secagg.PhaseAdvertise, secagg.PhaseShares, secagg.PhaseMasked, secagg.PhaseConsistency, secagg.PhaseUnmask}
	for i, want := range [][]secagg.Phase{all[:4], all, all} {
		if got := phases[i]; !slicesEqual(got, want) {
			t.Errorf("learner %d answered phases %v of attempt 1, want %v", i, got, want)
		}
	}
	requireSameModels(t, readRounds(t, dir, r.R), want)
	if !strings.Contains(log2.String(), `msg="learner refuses the open attempt" learner=0 round=0 attempt=1 unmasked_attempt=0 refused=1 threshold=2`) {
		t.Errorf("the server did not count learner 0's refusal:\n%s", log2.String())
	}
	if wait := unmasked.Sub(lastUnmask); wait > 10*time.Second {
		t.Errorf("phase 4 closed %v after the last answer, want at once (learner 0 is not waited for)", wait)
	}
}

// slicesEqual reports whether a and b hold the same phases in order.
func slicesEqual(a, b []secagg.Phase) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if a[k] != b[k] {
			return false
		}
	}
	return true
}

// A learner restarted after it answered the unmask phase of an attempt
// answers that phase of the same attempt again with the same bytes (a
// resend after a server restart), and the round completes: learners 0
// and 1 answer phase 4 of attempt 0, learner 2 stops before it; the
// server is stopped before the phase closes and learner 0 is restarted
// on its directory; the restarted server, resumed at phase 4, gets
// learner 0's answer again, byte for byte, and releases the simulation's
// models.
func TestSecureLearnerRestartResendsUnmask(t *testing.T) {
	t.Parallel() // waits out its timeouts (little CPU); its own run, servers and hooks
	r := newRun(t, 3, 1, 1, 4)
	secureRun(t, r)
	want := r.simulate(t, nil)
	dir := t.TempDir()
	opt := secureOptions(r, dir, 2) // the quorum grace (20 s) holds phase 4 open
	srv1, err := NewServer(opt)
	if err != nil {
		t.Fatal(err)
	}
	log1 := newUnmaskLog()
	srv1.hooks.record = log1.record
	s1 := serveServer(t, srv1)
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	ctx0, kill0 := context.WithCancel(context.Background())
	defer kill0()
	errs := make([]chan error, 3)
	for i := range errs {
		errs[i] = make(chan error, 1)
		ctx := context.Background()
		if i == 0 {
			ctx = ctx0
		}
		o := secLearner(r, s1.addr, i, dirs[i])
		if i == 2 {
			o.stopBefore = func(round int, p secagg.Phase) bool { return p == secagg.PhaseUnmask }
		}
		go func() {
			_, err := RunLearner(ctx, o)
			errs[i] <- err
		}()
	}
	select {
	case <-log1.both:
	case <-time.After(30 * time.Second):
		t.Fatal("learners 0 and 1 did not answer phase 4 within 30 s")
	}
	kill0()
	if err := <-errs[0]; !errors.Is(err, context.Canceled) {
		t.Fatalf("first learner 0: %v", err)
	}
	s1.stop()
	if err := <-s1.errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("first server: %v, want it stopped", err)
	}
	if err := <-errs[2]; !errors.Is(err, errStopped) {
		t.Fatalf("learner 2: %v", err)
	}

	opt.QuorumGrace = time.Second // learner 2 is gone
	srv2, err := NewServer(opt)
	if err != nil {
		t.Fatal(err)
	}
	log2 := newUnmaskLog()
	srv2.hooks.record = log2.record
	s2 := serveServerAt(t, srv2, nil, s1.addr)
	go func() {
		_, err := RunLearner(context.Background(), secLearner(r, s2.addr, 0, dirs[0]))
		errs[0] <- err
	}()
	for i := range 2 {
		if err := <-errs[i]; err != nil {
			t.Fatalf("learner %d: %v", i, err)
		}
	}
	if err := <-s2.errc; err != nil {
		t.Fatal(err)
	}
	a, b := log1.of(0), log2.of(0)
	if len(a) != 1 || len(b) != 1 || a[0].Attempt != 0 || b[0].Attempt != 0 || !bytes.Equal(a[0].Bytes, b[0].Bytes) {
		t.Fatalf("learner 0's unmask answers: %d to the first server, %d to the second, want one each of attempt 0 with the same bytes", len(a), len(b))
	}
	requireSameModels(t, readRounds(t, dir, r.R), want)
}

// A stale learner process (frozen, its lock file removed, a second
// process of the same learner started on the directory) never replaces
// the second one's record: had it written its own, a restart of the
// second would find an unmask answer of another attempt than the one the
// second sent, and answer that attempt too.
func TestStaleLearnerNeverReplacesTheRecord(t *testing.T) {
	dir := t.TempDir()
	run := bytes.Repeat([]byte{3}, 16)
	stale, err := openLearnerState(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer stale.Close()
	if err := stale.bind(run, false); err != nil {
		t.Fatal(err)
	}
	if err := removeLock(dir); err != nil {
		t.Fatal(err)
	}
	second, err := openLearnerState(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if err := second.bind(run, false); err != nil {
		t.Fatal(err)
	}
	if err := second.recordUnmask(4, 0, []byte("second")); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(recordPath(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	if rec := readRecord(t, dir); rec.round != 4 || rec.attempt != 0 || string(rec.msg) != "second" {
		t.Fatalf("the second learner's record is %+v", rec)
	}
	err = stale.recordUnmask(4, 1, []byte("stale"))
	if err == nil || !strings.Contains(err.Error(), "removed or replaced") {
		t.Errorf("the stale learner recorded its answer: %v", err)
	}
	err = stale.recordWitness(&model{round: 5, run: run, digest: []byte("stale")})
	if err == nil || !strings.Contains(err.Error(), "removed or replaced") {
		t.Errorf("the stale learner recorded its witness: %v", err)
	}
	if b, _ := os.ReadFile(recordPath(t, dir)); !bytes.Equal(b, want) {
		t.Errorf("the stale learner replaced the second one's record (round 4, attempt 0): the file is %x", b)
	}
}

// TestLearnerStateRemovesTemporaryFiles: a learner that starts on its
// state directory (under its lock) removes the temporary files of its
// record that a killed process left, whatever their time; other files
// stay. Before, they were kept for good.
func TestLearnerStateRemovesTemporaryFiles(t *testing.T) {
	dir := t.TempDir()
	later := time.Now().Add(time.Hour)
	for _, name := range []string{"." + learnerFile + ".tmp-0123456789abcdef", "." + learnerFile + ".tmp-fedcba9876543210", ".other.tmp-01", "notes"} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, later, later); err != nil {
			t.Fatal(err)
		}
	}
	ls, err := openLearnerState(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	if got, want := testutil.DirNames(t, dir), []string{".other.tmp-01", "lock", "notes"}; !slices.Equal(got, want) {
		t.Fatalf("left %q, want %q", got, want)
	}
}

// TestLearnerStateRefusesSymlink: learner.state that is a symbolic link
// (here to an older copy of the record in the same directory, which the
// directory's binding accepts) or a directory is refused at start, in one
// line that says what to do, as the server refuses a linked state file:
// a link makes the learner read another file than its record. Before, the
// link was followed and the older copy read as the record.
func TestLearnerStateRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	ls, err := openLearnerState(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	var run runID
	run[0] = 7
	if err := ls.bind(run[:], false); err != nil {
		t.Fatal(err)
	}
	ls.Close()
	path := recordPath(t, dir)
	if err := os.Rename(path, path+".old"); err != nil {
		t.Fatal(err)
	}
	old := filepath.Base(path) + ".old"
	for _, c := range []struct {
		name string
		make func() error
		want string
	}{
		{"symbolic link", func() error { return os.Symlink(old, path) }, "symbolic link"},
		{"directory", func() error { return os.Mkdir(path, 0o700) }, "not a regular file"},
	} {
		os.Remove(path)
		if err := c.make(); err != nil {
			t.Fatal(err)
		}
		ls, err := openLearnerState(dir, 0)
		if err == nil {
			ls.Close()
			t.Errorf("%s: accepted", c.name)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, c.want) || !strings.Contains(msg, "fresh directory") || strings.Contains(msg, "\n") {
			t.Errorf("%s: %v, want one line with %q and what to do", c.name, err, c.want)
		}
	}
}

// TestStaleLearnerPastItsCheckNeverReplacesTheRecord: a learner process
// (A) frozen after the lock check of a write, its lock file then removed,
// is overtaken by a second process (B) that records its unmask answer of
// round 4, attempt 0 (or, second case, a newer witness); A thaws and
// writes its record (its answer of round 4, attempt 1; or an older
// witness). A restart reads B's record, not A's. Before records were
// written per generation, A's rename replaced learner.state after B's
// write, and a restart read A's answer (so would answer attempt 1 of round
// 4 a second time, after B answered attempt 0) or A's older witness. In
// the third case A had not yet claimed its generation, so B took the same
// one: A's claim then fails and changes nothing.
func TestStaleLearnerPastItsCheckNeverReplacesTheRecord(t *testing.T) {
	run := bytes.Repeat([]byte{3}, 16)
	for _, c := range []string{"unmask", "witness", "unclaimed"} {
		t.Run(c, func(t *testing.T) {
			dir := t.TempDir()
			a, err := openLearnerState(dir, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			if c != "unclaimed" {
				if err := a.bind(run, false); err != nil {
					t.Fatal(err)
				}
			}
			var b *learnerState
			a.afterCheck = func() {
				a.afterCheck = nil
				if err := removeLock(dir); err != nil {
					t.Fatal(err)
				}
				if b, err = openLearnerState(dir, 0); err != nil {
					t.Fatal(err)
				}
				if err := b.bind(run, false); err != nil {
					t.Fatal(err)
				}
				if err := b.recordUnmask(4, 0, []byte("second")); err != nil {
					t.Fatal(err)
				}
				if err := b.recordWitness(&model{round: 6, run: run, digest: []byte("second")}); err != nil {
					t.Fatal(err)
				}
			}
			switch c {
			case "unmask":
				err = a.recordUnmask(4, 1, []byte("stale"))
				if err == nil || !strings.Contains(err.Error(), "removed or replaced") {
					t.Errorf("the stale learner's answer: %v, want its lock check after the write to fail", err)
				}
			case "witness":
				if err := a.recordWitness(&model{round: 5, run: run, digest: []byte("stale")}); err != nil {
					t.Fatal(err)
				}
			case "unclaimed":
				err = a.bind(run, false)
				if err == nil || !strings.Contains(err.Error(), "already exists") || strings.Contains(err.Error(), "\n") {
					t.Errorf("the stale learner's claim of the second one's generation: %v, want one line with %q", err, "already exists")
				}
			}
			if b == nil {
				t.Fatal("the second learner never started")
			}
			b.Close()
			restart, err := openLearnerState(dir, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer restart.Close()
			rec := restart.rec
			if rec == nil || !rec.unmasked || rec.round != 4 || rec.attempt != 0 || string(rec.msg) != "second" ||
				!rec.witnessed || rec.seenRound != 6 || string(rec.seenDigest) != "second" {
				t.Fatalf("a restart reads %+v, want the second learner's record (round 4, attempt 0; witness of round 6)", rec)
			}
			if _, _, err := restart.unmasked(4, 1); err == nil {
				t.Error("a restart would answer attempt 1 of round 4 after the second learner answered attempt 0")
			}
		})
	}
}

// TestLearnerRecordMigrated: a record of the single file learner.state
// (DPMFLS01 here, byte by byte from the documented layout) is read, and
// the first write puts the record, as DPMFLS02, in generation 1's file
// and replaces learner.state by a tombstone that a dpmf before
// generations refuses (its decoder, of DPMFLS01 and DPMFLS02, is this
// one's) instead of starting without the record; the next start takes
// generation 2, and its first write removes generation 1's file. With
// every generation's file lost, the tombstone makes a start refuse.
func TestLearnerRecordMigrated(t *testing.T) {
	dir := t.TempDir()
	run := bytes.Repeat([]byte{5}, 16)
	if err := os.WriteFile(filepath.Join(dir, learnerFile), handRecord(run, 0, 2, 1, []byte("old")), 0o600); err != nil {
		t.Fatal(err)
	}
	for g := uint64(1); g <= 2; g++ {
		ls, err := openLearnerState(dir, 0)
		if err != nil {
			t.Fatal(err)
		}
		if rec := ls.rec; rec == nil || rec.round != 2 || rec.attempt != 1 || string(rec.msg) != "old" {
			t.Fatalf("start %d reads %+v", g, rec)
		}
		if err := ls.recordWitness(&model{round: int(g) + 2, run: run, digest: []byte{byte(g)}}); err != nil {
			t.Fatal(err)
		}
		ls.Close()
		if got, want := testutil.DirNames(t, dir), []string{learnerName(g), learnerFile, "lock"}; !slices.Equal(got, want) {
			t.Fatalf("after start %d the directory holds %q, want %q", g, got, want)
		}
		tomb, err := os.ReadFile(filepath.Join(dir, learnerFile))
		if err != nil || !bytes.HasPrefix(tomb, []byte("DPMFLSGN")) {
			t.Fatalf("learner.state after start %d: %q (%v), want the tombstone", g, tomb, err)
		}
		if _, err := decodeLearnerRecord(tomb); err == nil {
			t.Fatal("a dpmf before generations reads the tombstone as a record")
		}
		b, err := os.ReadFile(filepath.Join(dir, learnerName(g)))
		if err != nil {
			t.Fatal(err)
		}
		ino, _ := dirInode(dir)
		birth, _ := dirBirth(dir)
		if want := handRecord3(run, 0, 2, 1, []byte("old"), ino, birth, g+2, []byte{byte(g)}, ""); !bytes.Equal(b, want) {
			t.Fatalf("generation %d's file is %x, want %x", g, b, want)
		}
	}
	if err := os.Remove(filepath.Join(dir, learnerName(2))); err != nil {
		t.Fatal(err)
	}
	ls, err := openLearnerState(dir, 0)
	if err == nil {
		ls.Close()
		t.Fatal("a start without any generation's file, on the tombstone, was accepted")
	}
	if msg := err.Error(); !strings.Contains(msg, "lost or removed") || strings.Contains(msg, "\n") {
		t.Fatalf("a start without any generation's file: %v, want one line saying the records were lost", err)
	}
}

// TestLearnerRecordBesideGenerationsCovered: a learner killed between
// its first write's claim of learner-00000001.state and the tombstone
// leaves learner.state holding the record of a dpmf before generations.
// An older dpmf started then reads and writes that file (it knows no
// other): here it answered phase 4 of round 3 in attempt 1 and witnessed
// round 4. A start of this dpmf must not read only the generation's file,
// which records neither (it would answer round 3 again, in another
// attempt, and lose the witness): it refuses, in one line. The start after
// the kill alone, whose generation covers learner.state (one write on
// from it), is accepted and reads the generation's record.
func TestLearnerRecordBesideGenerationsCovered(t *testing.T) {
	dir := t.TempDir()
	run := bytes.Repeat([]byte{6}, 16)
	ino, _ := dirInode(dir)
	birth, _ := dirBirth(dir)
	put := func(name string, b []byte) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// What the killed process left: learner.state before its write, and
	// generation 1 one write on (the witness of round 3).
	put(learnerFile, handRecord2(run, 0, 2, 0, []byte("r2"), ino, birth, 2, []byte{2}))
	put(learnerName(1), handRecord2(run, 0, 2, 0, []byte("r2"), ino, birth, 3, []byte{3}))
	ls, err := openLearnerState(dir, 0)
	if err != nil {
		t.Fatalf("the start after a kill between the claim and the tombstone: %v", err)
	}
	if rec := ls.rec; rec == nil || rec.seenRound != 3 || rec.round != 2 {
		t.Fatalf("the start after the kill reads %+v, want generation 1's record", rec)
	}
	ls.Close()
	// An older dpmf then answered round 3 in attempt 1 and saw round 4.
	for _, older := range [][]byte{
		handRecord2(run, 0, 3, 1, []byte("r3"), ino, birth, 4, []byte{4}),
		handRecord2(run, 0, 3, 1, []byte("r3"), ino, birth, 3, []byte{3}),
		handRecord2(run, 0, 2, 0, []byte("r2"), ino, birth, 4, []byte{4}),
		handRecord2(run, 0, 2, 0, []byte("r2"), ino, birth, 3, []byte{9}),
	} {
		put(learnerFile, older)
		ls, err := openLearnerState(dir, 0)
		if err == nil {
			a, ok := ls.unmaskedAttempt(3)
			ls.Close()
			t.Fatalf("a start beside a newer learner.state of an older dpmf was accepted (round 3 unmasked: %v, attempt %d; witness round %d)", ok, a, ls.rec.seenRound)
		}
		if msg := err.Error(); !strings.Contains(msg, "older dpmf") || strings.Contains(msg, "\n") {
			t.Fatalf("a start beside a newer learner.state: %v, want one line naming an older dpmf", err)
		}
	}
}
