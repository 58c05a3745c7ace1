package audit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/dpmf/dpmf/fednet"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/internal/par"
	"github.com/dpmf/dpmf/mechanism"
	dpmodel "github.com/dpmf/dpmf/model"
	flv1 "github.com/dpmf/dpmf/proto/dpmf/fl/v1"
)

// adversaryModelName is the name a networked audit's server gives the
// adversarial model; its learners are handed the model itself
// (fednet.LearnerOptions.Model).
const adversaryModelName = "audit-adversary"

// netRun is one federation run over gRPC: a fednet server on a loopback
// port of 127.0.0.1 (insecure credentials) with state directory dir, and n
// fednet.RunLearner goroutines with model and streams.
type netRun struct {
	cfg    fedopt.Config
	shape  fedopt.Shape
	model  dpmodel.Model
	stream func(i int) fedopt.Stream
	// noise is the server's mechanism at round 0 with the run's key; key
	// is that key (fednet.ServerOptions.NoiseKey).
	noise func(key [32]byte) (mechanism.Mechanism, error)
	key   [32]byte
	dir   string
}

// run runs the federation to its last round; the released models are in
// the state directory (fednet.ReadRound).
func (nr *netRun) run(ctx context.Context) error {
	srv, err := fednet.NewServer(fednet.ServerOptions{
		Config: nr.cfg, Shape: nr.shape,
		Model: fednet.Model{Name: adversaryModelName, Features: nr.shape.Dim},
		Noise: func(start int, key [32]byte) (mechanism.Mechanism, error) {
			if start != 0 {
				return nil, fmt.Errorf("audit: the networked run resumed at round %d; its state directory must be fresh", start)
			}
			return nr.noise(key)
		},
		NoiseKey: &nr.key, Dir: nr.dir,
	})
	if err != nil {
		return err
	}
	defer srv.Close()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	g := grpc.NewServer(append(fednet.ServerOptionsGRPC(), grpc.Creds(insecure.NewCredentials()))...)
	srv.Register(g)
	go g.Serve(lis)
	defer g.Stop()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srvErr := make(chan error, 1)
	go func() {
		err := srv.Run(ctx)
		if err != nil {
			cancel() // the server stopped: do not leave the learners retrying
		}
		srvErr <- err
	}()
	errs := make([]error, nr.shape.Learners)
	par.Pool(len(errs), len(errs), func(_, i int) bool { // every learner at once
		_, errs[i] = fednet.RunLearner(ctx, fednet.LearnerOptions{
			Addr: lis.Addr().String(), ID: i, Creds: insecure.NewCredentials(), Model: nr.model,
			Data: func(*flv1.RunConfig) (fedopt.Stream, error) { return nr.stream(i), nil },
		})
		if errs[i] != nil {
			cancel() // one learner failed: stop the others and the server
		}
		return true
	})
	err = <-srvErr
	for i, e := range errs {
		if e != nil && !errors.Is(e, context.Canceled) {
			return fmt.Errorf("audit: networked learner %d: %w", i, e)
		}
	}
	if err != nil {
		return fmt.Errorf("audit: networked server: %w", err)
	}
	return errors.Join(errs...)
}

// released runs nr in a fresh temporary state directory (named after
// prefix, removed afterwards) and returns the released models x^0..x^R read
// back from it. streams returns the learners' streams given the function
// that reads the model released for round r, which anchors the followers.
func (nr *netRun) released(ctx context.Context, prefix string, streams func(release func(r int) []float64) func(i int) fedopt.Stream) ([][]float64, error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	defer os.RemoveAll(dir)
	rel := &releases{dir: dir, dim: nr.shape.Dim, r: -1}
	nr.dir, nr.stream = dir, streams(rel.model)
	if err := nr.run(ctx); err != nil {
		return nil, err
	}
	if err := rel.failed(); err != nil {
		return nil, err
	}
	xs := make([][]float64, nr.shape.Rounds+1)
	for r := range xs {
		x, err := fednet.ReadRound(dir, r)
		if err != nil {
			return nil, err
		}
		xs[r] = x.X
	}
	return xs, nil
}

// releases reads the released models of a networked run from its state
// directory, as any observer of the release would, one round at a time,
// for the followers' anchors: the model released for round r. Safe for
// concurrent use by the learners' streams.
type releases struct {
	dir string
	dim int

	mu  sync.Mutex
	r   int // the round x holds, -1 for none
	x   []float64
	err error // the first read that failed
}

// model returns x^r; after a failed read it records the error (see failed)
// and returns zeros, so that the run ends and the audit reports the error.
func (rs *releases) model(r int) []float64 {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.r == r {
		return rs.x
	}
	rel, err := fednet.ReadRound(rs.dir, r)
	if err == nil && len(rel.X) != rs.dim {
		err = fmt.Errorf("audit: %s holds round %d of dimension %d, want %d", rs.dir, r, len(rel.X), rs.dim)
	}
	if err != nil {
		rs.err = cmp.Or(rs.err, err) // the first failure
		rs.r, rs.x = -1, make([]float64, rs.dim)
		return rs.x
	}
	rs.r, rs.x = r, rel.X
	return rs.x
}

// failed returns the first read that failed, or nil.
func (rs *releases) failed() error {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.err
}

// replayNetwork runs data set D's federation nr over gRPC in a temporary
// state directory, with world's followers anchored at the models read
// back from it, and compares the released models x^0..x^R read back from
// it with want, those of the in-process run. It reports whether they are
// equal bit for bit and a detail; an error is a run that did not finish.
func replayNetwork(ctx context.Context, nr *netRun, world *replayData, want [][]float64) (bool, string, error) {
	xs, err := nr.released(ctx, "dpaudit-replay-", func(release func(int) []float64) func(int) fedopt.Stream {
		world.release = release
		return func(i int) fedopt.Stream { return replayStream{world, i} }
	})
	if err != nil {
		return false, "", err
	}
	for r, w := range want {
		if len(xs[r]) != len(w) {
			return false, fmt.Sprintf("x^%d of dimension %d over gRPC, %d in process", r, len(xs[r]), len(w)), nil
		}
		for k := range w {
			if math.Float64bits(xs[r][k]) != math.Float64bits(w[k]) {
				return false, fmt.Sprintf("x^%d_%d = %v over gRPC, %v in process", r, k, xs[r][k], w[k]), nil
			}
		}
	}
	return true, fmt.Sprintf("D's federation over gRPC (fednet server on 127.0.0.1, %d learners) released x^0..x^%d bit for bit as in process", nr.shape.Learners, len(want)-1), nil
}
