package fednet

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/dpmf/dpmf/fedopt"
	flv1 "github.com/dpmf/dpmf/proto/dpmf/fl/v1"
)

// plainLearner returns the options of plain learner i of run r with the
// state directory dir ("" for none).
func plainLearner(r *run, addr string, i int, dir string) LearnerOptions {
	return LearnerOptions{Addr: addr, ID: i, Creds: insecure.NewCredentials(),
		Data:        func(rc *flv1.RunConfig) (fedopt.Stream, error) { return r.learnerData(rc, i) },
		CallTimeout: 2 * time.Second, WaitTimeout: 2 * time.Second, GiveUp: 20 * time.Second, StateDir: dir}
}

// A server whose state directory was rolled back (a complete older copy
// put back in place after it had released more rounds) stops before it
// releases anything, even when every learner that comes back is a new
// process: plain learners with a state directory keep their witness on
// disk. Before the witness was durable, the restarted learners were fresh
// ones and the server released rounds 4..6 a second time. The learners'
// newest state then finishes the run with the simulation's models: a
// restarted learner whose witness is the server's newest round goes on.
func TestRestartedLearnersWitnessRollback(t *testing.T) {
	r := newRun(t, 2, 8, 1, 3)
	dir := filepath.Join(t.TempDir(), "state")
	opt := r.options(dir, nil)
	opt.NoiseKey = nil // the key from crypto/rand, kept in dir
	opt.MaxWait = 2 * time.Second
	lds := []string{t.TempDir(), t.TempDir()}
	var g gate
	g.limit.Store(3)
	var wg sync.WaitGroup
	startLearners := func(ctx context.Context, addr string, errs []error) {
		for i := range r.n {
			wg.Go(func() {
				o := plainLearner(r, addr, i, lds[i])
				o.Data = func(*flv1.RunConfig) (fedopt.Stream, error) {
					return gatedStream{r.data.Stream(i), &g}, nil
				}
				_, errs[i] = RunLearner(ctx, o)
			})
		}
	}
	waitAt := func(s *served, k int) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			got, _ := s.srv.Round()
			if got == k && g.waiting.Load() == int64(r.n) {
				return
			}
			require.True(t, time.Now().Before(deadline), "server at round %d, want %d", got, k)
			time.Sleep(time.Millisecond)
		}
	}

	// Rounds 1..3, a backup of the directory, rounds 4..6; then the server
	// and the learner processes stop.
	s1 := serveAt(t, opt, nil, "127.0.0.1:0")
	addr := s1.addr
	ctx1, cancel1 := context.WithTimeout(context.Background(), 60*time.Second)
	errs := make([]error, r.n)
	startLearners(ctx1, addr, errs)
	waitAt(s1, 3)
	backup := t.TempDir()
	copyDir(t, dir, backup) // the learners hold the server at round 3
	g.limit.Store(6)
	waitAt(s1, 6)
	s1.stop()
	<-s1.errc // stopped: context canceled
	cancel1()
	g.limit.Store(int64(r.R + 1))
	wg.Wait()
	for i, ld := range lds {
		rec := readRecord(t, ld)
		require.True(t, rec.witnessed && rec.seenRound == 6, "learner %d's record witnesses round %d", i, rec.seenRound)
	}
	good := t.TempDir()
	copyDir(t, dir, good)

	// The backup of round 3 put back in place, new learner processes on
	// the same state directories: the server stops at their first call.
	copyDir(t, backup, dir)
	s2 := serveAt(t, opt, nil, addr)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel2()
	errs = make([]error, r.n)
	startLearners(ctx2, addr, errs)
	var err error
	select {
	case err = <-s2.errc:
	case <-time.After(20 * time.Second):
		t.Fatal("the rolled-back server did not stop")
	}
	require.Error(t, err)
	assert.Contains(t, err.Error(), "rewound")
	got, _ := s2.srv.Round()
	assert.Equal(t, 3, got, "the rolled-back server released a round")
	wg.Wait()
	s2.stop()
	for i, err := range errs {
		require.Error(t, err, "learner %d", i)
		assert.Contains(t, err.Error(), "rewound", "learner %d", i)
		assert.NotContains(t, err.Error(), "\n", "learner %d", i)
		rec := readRecord(t, lds[i])
		assert.Equal(t, 6, rec.seenRound, "learner %d's witness moved", i)
	}

	// The newest state back: restarted learners finish the run.
	copyDir(t, good, dir)
	s3 := serveAt(t, opt, nil, addr)
	errs = make([]error, r.n)
	startLearners(ctx2, addr, errs)
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "learner %d", i)
		assert.Equal(t, r.R, readRecord(t, lds[i]).seenRound, "learner %d", i)
	}
	require.NoError(t, <-s3.errc)
	key, err := store{dir}.readKey()
	require.NoError(t, err)
	r.fileKey = &key
	requireSameModels(t, readRounds(t, dir, r.R), r.simulate(t, nil))
}

// A plain learner's state directory is refused with one line, its record
// left as it is: a record that is corrupt or truncated, of another run
// (accepted with NewRun, which binds it to the new run), or in a copy of
// the directory it was written in (a copy beside the original, or a
// restore into a directory made anew at its path, where the file system
// tells: a new inode or a new creation time). A record of the earlier
// format (no witness, no directory) is read, and rewritten with both.
func TestPlainLearnerStateRefused(t *testing.T) {
	r := newRun(t, 1, 2, 1, 3)
	first := serve(t, r.options(t.TempDir(), nil), nil)
	orig := t.TempDir()
	start := func(addr, dir string, newRun bool) error {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		o := plainLearner(r, addr, 0, dir)
		o.GiveUp = 5 * time.Second
		o.NewRun = newRun
		_, err := RunLearner(ctx, o)
		return err
	}
	require.NoError(t, start(first.addr, orig, false))
	require.NoError(t, <-first.errc)
	done, err := os.ReadFile(recordPath(t, orig))
	require.NoError(t, err)
	rec := readRecord(t, orig)
	require.True(t, rec.witnessed && rec.seenRound == r.R && bytes.Equal(rec.run[:], first.srv.run[:]), "record %+v", rec)
	ino, inoOK := dirInode(orig)
	birth, birthOK := dirBirth(orig)
	require.Equal(t, ino, rec.dirIno)
	require.Equal(t, birth, rec.dirBirth)

	// A second run (its server waits for the learner meanwhile).
	second := serve(t, r.options(t.TempDir(), nil), nil)
	corrupt := bytes.Clone(done)
	corrupt[len(learnerMagic)+20] ^= 1
	fresh := func() string { return t.TempDir() }
	same := func() string { return orig }
	for _, c := range []struct {
		name, want string
		file       []byte
		dir        func() string
		skip       bool
	}{
		{"corrupt", "checksum mismatch", corrupt, fresh, false},
		{"truncated", "learner state", done[:len(done)-1], fresh, false},
		{"empty", "too short", []byte{}, fresh, false},
		{"another run", "give a new run a fresh state directory", done, same, false},
		{"a copy", "is a copy or a restore", done, fresh, !inoOK},
		{"restored over the deleted directory", "is a copy or a restore", done, func() string {
			require.NoError(t, os.RemoveAll(orig))
			require.NoError(t, os.Mkdir(orig, 0o700))
			return orig
		}, !birthOK},
	} {
		if c.skip {
			t.Logf("%s: not told on this platform", c.name)
			continue
		}
		dir := c.dir()
		path := filepath.Join(dir, learnerFile)
		require.NoError(t, os.WriteFile(path, c.file, 0o600))
		err := start(second.addr, dir, false)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line with %q", c.name, err, c.want)
			continue
		}
		t.Logf("%s: %v", c.name, err)
		if b, _ := os.ReadFile(path); !bytes.Equal(b, c.file) {
			t.Errorf("%s: the record was replaced", c.name)
		}
	}

	// A record of the earlier format, of the first run: read, refused
	// for the second run without NewRun, taken over with it.
	dir := t.TempDir()
	path := filepath.Join(dir, learnerFile)
	old := handRecord(rec.run[:], 0, 0, 0, nil)
	require.NoError(t, os.WriteFile(path, old, 0o600))
	err = start(second.addr, dir, false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "belongs to run")
	b, _ := os.ReadFile(path)
	assert.Equal(t, old, b, "the record was replaced")
	require.NoError(t, start(second.addr, dir, true))
	require.NoError(t, <-second.errc)
	rec = readRecord(t, dir)
	assert.True(t, rec.witnessed && rec.seenRound == r.R && bytes.Equal(rec.run[:], second.srv.run[:]), "record after NewRun %+v", rec)
	ino, _ = dirInode(dir)
	birth, _ = dirBirth(dir)
	assert.Equal(t, ino, rec.dirIno)
	assert.Equal(t, birth, rec.dirBirth)
}

// NewRun replaces a record of another run only: a learner given it on a
// record of the run the server serves (a restart script that always
// passes -new-run) still tells the server its witness in its first
// request, so a server whose directory was rolled back stops at once.
// Before, NewRun left the witness out of the first request whatever run
// the record was of: the learner stopped on its own when the older model
// came, and the server went on waiting for, or releasing with, the other
// learners. A record of another run is still replaced under NewRun (the
// server refuses the old run's witness, and the learner asks again
// without it).
func TestNewRunKeepsTheWitnessOfTheSameRun(t *testing.T) {
	r := newRun(t, 2, 6, 1, 3)
	dir := filepath.Join(t.TempDir(), "state")
	opt := r.options(dir, nil)
	opt.NoiseKey = nil
	opt.MaxWait = 2 * time.Second
	lds := []string{t.TempDir(), t.TempDir()}
	var g gate
	g.limit.Store(2)
	var wg sync.WaitGroup
	errs := make([]error, r.n)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s1 := serveAt(t, opt, nil, "127.0.0.1:0")
	addr := s1.addr
	lctx, lcancel := context.WithCancel(ctx)
	for i := range r.n {
		wg.Go(func() {
			o := plainLearner(r, addr, i, lds[i])
			o.Data = func(*flv1.RunConfig) (fedopt.Stream, error) { return gatedStream{r.data.Stream(i), &g}, nil }
			_, errs[i] = RunLearner(lctx, o)
		})
	}
	waitRound := func(k int) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			got, _ := s1.srv.Round()
			if got == k && g.waiting.Load() == int64(r.n) {
				return
			}
			require.True(t, time.Now().Before(deadline), "server at round %d, want %d", got, k)
			time.Sleep(time.Millisecond)
		}
	}
	waitRound(2)
	backup := t.TempDir()
	copyDir(t, dir, backup)
	g.limit.Store(4)
	waitRound(4)
	s1.stop()
	<-s1.errc
	lcancel()
	g.limit.Store(int64(r.R + 1))
	wg.Wait()
	require.Equal(t, 4, readRecord(t, lds[0]).seenRound)

	// The backup of round 2 put back; learner 0 restarted with NewRun on
	// its record of this run: the server stops at its first request.
	copyDir(t, backup, dir)
	s2 := serveAt(t, opt, nil, addr)
	o := plainLearner(r, addr, 0, lds[0])
	o.NewRun = true
	_, lerr := RunLearner(ctx, o)
	require.Error(t, lerr)
	var err error
	select {
	case err = <-s2.errc:
	case <-time.After(5 * time.Second):
		s2.stop()
		t.Fatalf("the rolled-back server did not stop at the witness of a learner given NewRun (the learner: %v)", lerr)
	}
	require.Error(t, err)
	assert.Contains(t, err.Error(), "rewound")
	assert.Equal(t, 4, readRecord(t, lds[0]).seenRound, "the witness moved")

	// A record of another run is replaced under NewRun.
	other := filepath.Join(t.TempDir(), "other")
	oopt := r.options(other, nil)
	oopt.NoiseKey = nil
	s3 := serveAt(t, oopt, nil, "127.0.0.1:0")
	var oerrs [2]error
	for i := range r.n {
		wg.Go(func() {
			o := plainLearner(r, s3.addr, i, lds[i])
			o.NewRun = true
			_, oerrs[i] = RunLearner(ctx, o)
		})
	}
	wg.Wait()
	require.NoError(t, <-s3.errc)
	for i := range r.n {
		require.NoError(t, oerrs[i], "learner %d", i)
		assert.Equal(t, r.R, readRecord(t, lds[i]).seenRound, "learner %d", i)
	}
}
