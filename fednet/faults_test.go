package fednet

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/internal/testutil"
	flv1 "github.com/dpmf/dpmf/proto/dpmf/fl/v1"
)

// gate holds learners back: a learner's stream blocks in rounds at or past
// the gate's limit, so the test decides how far a server gets.
type gate struct {
	limit   atomic.Int64
	waiting atomic.Int64 // learners blocked at the limit
}

type gatedStream struct {
	fedopt.Stream
	g *gate
}

func (s gatedStream) Sample(r, t int) ([]float64, float64) {
	if int64(r) >= s.g.limit.Load() {
		s.g.waiting.Add(1)
		for int64(r) >= s.g.limit.Load() {
			time.Sleep(time.Millisecond)
		}
		s.g.waiting.Add(-1)
	}
	return s.Stream.Sample(r, t)
}

// releases records every model released under each round number, across
// server restarts, from the state directories and the servers themselves.
type releases map[int][][]float64

// add records x as released in round r, once per distinct value.
func (rs releases) add(r int, x []float64) {
	for _, y := range rs[r] {
		if testutil.SameBits(x, y) {
			return
		}
	}
	rs[r] = append(rs[r], slices.Clone(x))
}

// addDir records the rounds in a state directory.
func (rs releases) addDir(t *testing.T, dir string) {
	t.Helper()
	st := store{dir}
	rounds, err := st.rounds()
	require.NoError(t, err)
	for _, r := range rounds {
		_, rel, err := st.readRound(r)
		require.NoError(t, err)
		rs.add(r, rel.X)
	}
}

// copyDir replaces the regular files of to by those of from (a backup put
// back in place): files of to that from lacks are removed.
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	have := snapshot(t, to)
	want := snapshot(t, from)
	for name := range have {
		if _, ok := want[name]; !ok && name != lockFile {
			rm(t, to, name)
		}
	}
	for name := range want {
		if name != lockFile {
			cp(t, from, to, name)
		}
	}
}

// The faults that made a server release a round twice with the same noise
// (the difference of the two releases is one aggregate's difference,
// without noise): a second server on the directory, a lost newest round,
// files swapped in from another run, a complete older copy put back in
// place while learners run, a copy started elsewhere. Learners run throughout, across restarts of the server on
// one address. Every round is released with one value only, and the
// run's models are the simulation's.
func TestFaultsNeverReleaseTwice(t *testing.T) {
	r := newRun(t, 2, 12, 1, 3)
	dir := filepath.Join(t.TempDir(), "state")
	opt := r.options(dir, nil)
	opt.NoiseKey = nil // the key from crypto/rand, kept in dir
	opt.MaxWait = 2 * time.Second
	var g gate
	g.limit.Store(4)
	seen := releases{}

	// The learners outlive the servers: they retry while none serves.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	learnerErrs := make([]error, r.n)
	startLearners := func(addr string, errs []error) {
		for i := range r.n {
			wg.Go(func() {
				_, errs[i] = RunLearner(ctx, LearnerOptions{
					Addr: addr, ID: i, Creds: insecure.NewCredentials(),
					Data: func(*flv1.RunConfig) (fedopt.Stream, error) {
						return gatedStream{r.data.Stream(i), &g}, nil
					},
					CallTimeout: 2 * time.Second, WaitTimeout: 2 * time.Second, GiveUp: 20 * time.Second,
				})
			})
		}
	}
	// waitAt waits until server s has released round k and both learners
	// hold x^k (they block computing their update for round k).
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
	stop := func(s *served) error {
		s.stop()
		return <-s.errc
	}

	// The first life: rounds 1..4.
	s1 := serveAt(t, opt, nil, "127.0.0.1:0")
	addr := s1.addr
	startLearners(addr, learnerErrs)
	waitAt(s1, 4)
	// A second server on the same directory is refused while the first runs.
	_, err := NewServer(opt)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "in use by another server")
	stop(s1)
	seen.addDir(t, dir)
	backup := t.TempDir()
	copyDir(t, dir, backup)

	// The second life resumes: rounds 5..7.
	s2 := serveAt(t, opt, nil, addr)
	g.limit.Store(7)
	waitAt(s2, 7)
	stop(s2)
	seen.addDir(t, dir)
	good := t.TempDir()
	copyDir(t, dir, good)

	// The newest round file lost: refused.
	rm(t, dir, roundName(7))
	_, err = NewServer(opt)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "round 7 was released")
	copyDir(t, good, dir)

	// Files swapped in from another run of the same configuration (its
	// own key and identity): refused, each.
	other := filepath.Join(t.TempDir(), "other")
	oopt := opt
	oopt.Dir = other
	osrv, err := NewServer(oopt)
	require.NoError(t, err)
	require.NoError(t, osrv.Close())
	for name, reason := range map[string]string{keyFile: "not run", roundName(0): "belongs to run", markFile: "belongs to run"} {
		cp(t, other, dir, name)
		_, err = NewServer(opt)
		require.Error(t, err, "%s of another run", name)
		assert.Contains(t, err.Error(), reason, "%s of another run", name)
		copyDir(t, good, dir)
	}

	// A copy of the directory started elsewhere: refused.
	elsewhere := filepath.Join(t.TempDir(), "copy")
	require.NoError(t, os.Mkdir(elsewhere, 0o755))
	copyDir(t, good, elsewhere)
	copt := opt
	copt.Dir = elsewhere
	if _, ok := dirInode(dir); ok {
		_, err = NewServer(copt)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "copy or a restore")
	}

	// The complete backup of round 4 put back in place: nothing on disk
	// can tell, but the learners hold x^7. The server stops at their first
	// call instead of releasing rounds 5..7 again.
	copyDir(t, backup, dir)
	s3 := serveAt(t, opt, nil, addr)
	g.limit.Store(int64(r.R + 1))
	select {
	case err = <-s3.errc:
	case <-time.After(20 * time.Second):
		t.Fatal("the rewound server did not stop")
	}
	require.Error(t, err)
	assert.Contains(t, err.Error(), "rewound")
	got, _ := s3.srv.Round()
	assert.Equal(t, 4, got, "the rewound server released a round")
	wg.Wait() // the stopped server still answers, with the reason
	s3.stop()
	for i, err := range learnerErrs {
		require.Error(t, err, "learner %d", i)
		assert.Contains(t, err.Error(), "rewound", "learner %d", i)
	}
	seen.addDir(t, dir)

	// The newest state back in place: new learners finish the run.
	copyDir(t, good, dir)
	s4 := serveAt(t, opt, nil, addr)
	learnerErrs = make([]error, r.n)
	startLearners(addr, learnerErrs)
	wg.Wait()
	for i, err := range learnerErrs {
		require.NoError(t, err, "learner %d", i)
	}
	require.NoError(t, <-s4.errc)
	seen.addDir(t, dir)

	for k := 0; k <= r.R; k++ {
		require.Len(t, seen[k], 1, "round %d released with %d values", k, len(seen[k]))
	}
	// Bit for bit the simulation's, with the key the server made.
	key, err := store{dir}.readKey()
	require.NoError(t, err)
	r.fileKey = &key
	want := r.simulate(t, nil)
	for k := 0; k <= r.R; k++ {
		require.True(t, testutil.SameBits(seen[k][0], want[k]), "x^%d differs from the simulation", k)
	}
}
