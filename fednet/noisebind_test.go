package fednet

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/mechanism"
	dpmodel "github.com/dpmf/dpmf/model"
	"github.com/dpmf/dpmf/plan"
)

// A run without a privacy record (Config.Privacy nil, which the library
// allows) still adds noise whose standard deviation and factorization the
// caller's guarantee rests on: a restart with another std or another
// factorization is refused as another run, as for a run with a record.
// Before, run.json's description named neither, and such a restart
// resumed, continuing the run with noise of another scale or with a C
// that the released rounds' noise was not drawn for.
func TestNoiseWithoutRecordBoundToRun(t *testing.T) {
	r := newRun(t, 2, 4, 1, 3)
	require.Nil(t, r.cfg.Privacy, "the run has no privacy record")
	dir := t.TempDir()
	srv, err := NewServer(r.options(dir, nil))
	require.NoError(t, err)
	require.NoError(t, srv.Close())

	smaller := *r
	smaller.std = r.std / 10
	_, err = NewServer(smaller.options(dir, nil))
	require.Error(t, err, "a restart with a tenth of the noise std resumed")
	assert.Contains(t, err.Error(), "describes another run")

	w, err := factorize.Prefix(r.R)
	require.NoError(t, err)
	other := *r
	other.f, err = factorize.IdentityStrategy{}.Factorize(context.Background(), w, factorize.Participation{})
	require.NoError(t, err)
	_, err = NewServer(other.options(dir, nil))
	require.Error(t, err, "a restart with another factorization resumed")
	assert.Contains(t, err.Error(), "describes another run")

	// The run's own settings resume it.
	srv, err = NewServer(r.options(dir, nil))
	require.NoError(t, err)
	require.NoError(t, srv.Close())
}

// A run with a privacy record but no plan (ServerOptions.Plan nil): its
// description names the record's factorization, so a restart under a
// record of another factorization is refused even where everything else
// the description records (eps, delta, noise std, sensitivity) is equal:
// the identity and the normalized square root both have sensitivity 1
// under single participation. Before, such a restart resumed and streamed
// the rest of the run with another C.
func TestRecordFactorizationBoundToRun(t *testing.T) {
	const d, R = 3, 4
	dim := (dpmodel.Logistic{}).NumParams(d)
	build := func(strategy string) (*fedopt.Privacy, func(int, [32]byte) (mechanism.Mechanism, error)) {
		return planNoise(t, &plan.Plan{Workload: plan.WorkloadPrefix, Participation: "single", Rounds: R, Algorithm: plan.AlgoCorrelated,
			Strategy: strategy, Learners: 2, Tau: 1, Eta: 0.1, EtaG: 1, Clip: 1, Model: &plan.Model{Name: "logistic", Features: d},
			Target: &plan.Target{Eps: 1, Delta: 1e-5}}, dim)
	}
	pa, na := build("identity")
	pb, nb := build("sqrt-normalized")
	require.Equal(t, pa.Sensitivity, pb.Sensitivity, "the two records' sensitivities")
	require.Equal(t, pa.NoiseStd, pb.NoiseStd, "the two records' noise std")
	require.NotEqual(t, pa.OperatorSHA256, pb.OperatorSHA256)
	dir := t.TempDir()
	opts := func(pr *fedopt.Privacy, noise func(int, [32]byte) (mechanism.Mechanism, error)) ServerOptions {
		return ServerOptions{Config: fedopt.Config{Algorithm: fedopt.Correlated, Eta: 0.1, EtaG: 1, Clip: 1, Privacy: pr},
			Shape: fedopt.Shape{Learners: 2, Rounds: R, Tau: 1, Dim: dim}, Model: Model{Name: "logistic", Features: d},
			Noise: noise, Dir: dir}
	}
	srv, err := NewServer(opts(pa, na))
	require.NoError(t, err)
	require.NoError(t, srv.Close())
	_, err = NewServer(opts(pb, nb))
	require.Error(t, err, "a restart under another factorization's record resumed")
	assert.Contains(t, err.Error(), "describes another run")
	srv, err = NewServer(opts(pa, na))
	require.NoError(t, err)
	require.NoError(t, srv.Close())
}

// A Plan without a privacy record (uncalibrated) holds no noise std, and
// run.json records the Plan as it is: a run that adds noise with such a
// plan and no Config.Privacy would bind its noise to nothing, so NewServer
// refuses it, saying what to give. Before, it started, and a restart with
// a tenth of the std resumed the run.
func TestPlanWithoutRecordRefusesNoise(t *testing.T) {
	r := newRun(t, 2, 4, 1, 3)
	p := &plan.Plan{Workload: plan.WorkloadPrefix, Participation: "single", Rounds: r.R, Algorithm: plan.AlgoCorrelated,
		Strategy: "optimal", Learners: r.n, Tau: r.tau, Eta: r.cfg.Eta, EtaG: r.cfg.EtaG, Clip: r.cfg.Clip,
		Model: &plan.Model{Name: "logistic", Features: r.d}}
	js, err := p.Marshal()
	require.NoError(t, err)
	opt := r.options(t.TempDir(), nil)
	opt.Plan = js
	srv, err := NewServer(opt)
	if err == nil {
		srv.Close()
	}
	require.Error(t, err, "a noisy run whose plan has no privacy record started")
	assert.Contains(t, err.Error(), "Config.Privacy")
	assert.NotContains(t, err.Error(), "\n")
}

// A Noise (the library user's mechanism) whose noise std depends on its
// key or on the round it starts at: run.json records the std of the
// mechanism made at round 0 with the public probe key, so the std of the one a run
// actually releases with, made at the resume round with the run's key, is
// checked against it, and NewServer refuses a difference naming both.
// Before, a Noise giving a tenth of the std for a nonzero key (every real
// run's) or for a resume at round 1 started and released with a tenth of
// the recorded noise.
func TestNoiseVaryingByKeyOrRoundRefused(t *testing.T) {
	r := newRun(t, 2, 4, 1, 3)
	require.Nil(t, r.cfg.Privacy, "the run has no privacy record")
	byKey := func(start int, key [32]byte) (mechanism.Mechanism, error) {
		std := r.std
		if key != identityProbeKey {
			std /= 10
		}
		return mechanism.New(r.f, r.d, std, mechanism.WithKey(key), mechanism.WithStartRound(start))
	}
	opt := r.options(t.TempDir(), nil)
	opt.Noise = byKey
	srv, err := NewServer(opt)
	if err == nil {
		srv.Close()
	}
	require.Error(t, err, "a Noise with a tenth of the std for the run's key started")
	assert.Contains(t, err.Error(), "run.json")
	assert.NotContains(t, err.Error(), "\n")

	byRound := func(start int, key [32]byte) (mechanism.Mechanism, error) {
		std := r.std
		if start > 0 {
			std /= 10
		}
		return mechanism.New(r.f, r.d, std, mechanism.WithKey(key), mechanism.WithStartRound(start))
	}
	dir := t.TempDir()
	opt = r.options(dir, nil)
	opt.Noise = byRound
	srv, err = NewServer(opt)
	require.NoError(t, err, "round 0 has the recorded std")
	require.NoError(t, srv.st.release(Released{Round: 1, Updates: 2, X: make([]float64, r.d)}))
	require.NoError(t, srv.Close())
	before := snapshot(t, dir)
	srv, err = NewServer(opt)
	if err == nil {
		srv.Close()
	}
	require.Error(t, err, "a resume at round 1 with a tenth of the std started")
	assert.Contains(t, err.Error(), "round 1")
	assert.NotContains(t, err.Error(), "\n")
	assert.Equal(t, before, snapshot(t, dir), "the refused resume changed the state directory")

	// A Noise of one std for every round and key resumes it.
	opt.Noise = r.noise
	srv, err = NewServer(opt)
	require.NoError(t, err)
	require.NoError(t, srv.Close())
}

// An all-zero ServerOptions.NoiseKey, what a key never filled in holds, is
// refused before the state directory is touched, whatever Noise does with
// the key: its noise is public. Before, a Noise that takes the key from
// elsewhere or ignores it (as this one does) started the run with the
// all-zero key recorded as the run's.
func TestZeroNoiseKeyRefused(t *testing.T) {
	r := newRun(t, 2, 4, 1, 3)
	dir := t.TempDir()
	opt := r.options(dir, nil)
	opt.Noise = func(start int, _ [32]byte) (mechanism.Mechanism, error) {
		return mechanism.New(r.f, r.d, r.std, mechanism.WithSeed(1), mechanism.WithStartRound(start))
	}
	var zero [32]byte
	opt.NoiseKey = &zero
	before := snapshot(t, dir)
	srv, err := NewServer(opt)
	if err == nil {
		srv.Close()
	}
	require.Error(t, err, "a run with the all-zero noise key started")
	assert.Contains(t, err.Error(), "NoiseKey")
	assert.NotContains(t, err.Error(), "\n")
	assert.Equal(t, before, snapshot(t, dir), "the refused start changed the state directory")

	one := zero
	one[31] = 1
	opt.NoiseKey = &one
	srv, err = NewServer(opt)
	require.NoError(t, err, "a nonzero key")
	require.NoError(t, srv.Close())
}
