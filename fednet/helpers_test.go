package fednet

import (
	"context"
	"log/slog"
	"net"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/dpmf/dpmf/dataset"
	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/internal/testutil"
	"github.com/dpmf/dpmf/mechanism"
	dpmodel "github.com/dpmf/dpmf/model"
	flv1 "github.com/dpmf/dpmf/proto/dpmf/fl/v1"
)

// run is a small private configuration: n learners, R rounds, tau steps,
// d features, synthetic data, correlated noise from the optimal
// factorization, seeded.
type run struct {
	n, R, tau, d int
	cfg          fedopt.Config
	data         *dataset.Dataset
	f            *factorize.Factorization
	std          float64
	seed         uint64
	fileKey      *[32]byte // the simulation's key, if not the seed's
}

func newRun(t *testing.T, n, R, tau, d int) *run {
	t.Helper()
	ds, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: d}.Dataset(n, R, tau, 3)
	if err != nil {
		t.Fatal(err)
	}
	w, err := factorize.Prefix(R)
	if err != nil {
		t.Fatal(err)
	}
	f, err := factorize.OptimalStrategy{}.Factorize(context.Background(), w, factorize.Participation{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := fedopt.Config{Algorithm: fedopt.Correlated, Eta: 0.05, EtaG: 1, Clip: 1}
	return &run{n: n, R: R, tau: tau, d: d, cfg: cfg, data: ds, f: f, std: 0.2, seed: 5}
}

func (r *run) shape() fedopt.Shape {
	return fedopt.Shape{Learners: r.n, Rounds: r.R, Tau: r.tau, Dim: r.d}
}

func (r *run) noise(start int, key [32]byte) (mechanism.Mechanism, error) {
	return mechanism.New(r.f, r.d, r.std, mechanism.WithKey(key), mechanism.WithStartRound(start))
}

// key is the run's noise key, from its seed.
func (r *run) key() *[32]byte {
	if r.fileKey != nil {
		return r.fileKey
	}
	k := mechanism.SeedKey(r.seed)
	return &k
}

// simulate returns x^0..x^R of the in-process simulation; learners in
// absent (by round) send nothing.
func (r *run) simulate(t *testing.T, absent func(i, round int) bool) [][]float64 {
	t.Helper()
	var m mechanism.Mechanism
	if r.f != nil {
		var err error
		if m, err = r.noise(0, *r.key()); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := fedopt.NewServer(r.cfg, r.shape(), m)
	if err != nil {
		t.Fatal(err)
	}
	ls := make([]*fedopt.Learner, r.n)
	for i := range ls {
		if ls[i], err = fedopt.NewLearner(dpmodel.Logistic{}, r.data.Stream(i), r.cfg, r.tau, r.d); err != nil {
			t.Fatal(err)
		}
	}
	xs := [][]float64{slices.Clone(srv.Model())}
	if absent == nil {
		err := fedopt.Simulate(context.Background(), srv, ls, fedopt.SimOptions{Observe: func(k int, x []float64) error {
			if k > 0 {
				xs = append(xs, slices.Clone(x))
			}
			return nil
		}})
		if err != nil {
			t.Fatal(err)
		}
		return xs
	}
	for !srv.Done() {
		k := srv.Round()
		ups := make([][]float64, r.n)
		for i, l := range ls {
			if absent(i, k) {
				continue
			}
			ups[i] = make([]float64, r.d)
			if err := l.Update(ups[i], k, srv.Model()); err != nil {
				t.Fatal(err)
			}
		}
		if err := srv.Release(ups); err != nil {
			t.Fatal(err)
		}
		xs = append(xs, slices.Clone(srv.Model()))
	}
	return xs
}

func (r *run) options(dir string, log *testutil.SyncBuffer) ServerOptions {
	var lg *slog.Logger
	if log != nil {
		lg = slog.New(slog.NewTextHandler(log, nil))
	}
	var (
		noise func(int, [32]byte) (mechanism.Mechanism, error)
		key   *[32]byte
	)
	if r.f != nil {
		noise, key = r.noise, r.key()
	}
	return ServerOptions{
		Config: r.cfg, Shape: r.shape(),
		Model: Model{Name: "logistic", Features: r.d},
		Noise: noise, NoiseKey: key, Dir: dir,
		RoundTimeout: 20 * time.Second, MaxWait: 5 * time.Second, Linger: 5 * time.Second,
		Log: lg,
	}
}

func (r *run) learnerData(rc *flv1.RunConfig, i int) (fedopt.Stream, error) {
	return r.data.Stream(i), nil
}

// served is a running server.
type served struct {
	srv  *Server
	addr string
	errc chan error
	stop func()
}

// serve starts a server with opt on a loopback port.
func serve(t *testing.T, opt ServerOptions, creds credentials.TransportCredentials) *served {
	t.Helper()
	return serveAt(t, opt, creds, "127.0.0.1:0")
}

// serveAt starts a server with opt on addr.
func serveAt(t *testing.T, opt ServerOptions, creds credentials.TransportCredentials, addr string) *served {
	t.Helper()
	srv, err := NewServer(opt)
	if err != nil {
		t.Fatal(err)
	}
	return serveServerAt(t, srv, creds, addr)
}

// serveServer serves srv on a loopback port.
func serveServer(t *testing.T, srv *Server) *served {
	t.Helper()
	return serveServerAt(t, srv, nil, "127.0.0.1:0")
}

// serveServerAt serves srv on addr.
func serveServerAt(t *testing.T, srv *Server, creds credentials.TransportCredentials, addr string) *served {
	t.Helper()
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if creds == nil {
		creds = insecure.NewCredentials()
	}
	g := grpc.NewServer(append(ServerOptionsGRPC(), grpc.Creds(creds))...)
	srv.Register(g)
	go g.Serve(lis)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	errc := make(chan error, 1)
	go func() { errc <- srv.Run(ctx) }()
	s := &served{srv: srv, addr: lis.Addr().String(), errc: errc}
	s.stop = func() { cancel(); g.Stop() }
	t.Cleanup(s.stop)
	return s
}

// readRounds reads x^0..x^R from a state directory.
func readRounds(t *testing.T, dir string, R int) [][]float64 {
	t.Helper()
	xs := make([][]float64, R+1)
	for r := range xs {
		rel, err := ReadRound(dir, r)
		if err != nil {
			t.Fatal(err)
		}
		xs[r] = rel.X
	}
	return xs
}

func requireSameModels(t *testing.T, got, want [][]float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d models, want %d", len(got), len(want))
	}
	for r := range want {
		if !testutil.SameBits(got[r], want[r]) {
			t.Fatalf("x^%d = %v, want %v bit for bit", r, got[r], want[r])
		}
	}
}
