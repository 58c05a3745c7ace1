// Command secagg measures what secure aggregation costs a networked round:
// a fednet server and n learners on loopback, first with plain aggregation
// (float64 updates), then with secure aggregation (package secagg: five
// phases, quantized and masked updates), for each n and d asked. It
// prints a markdown table of the per-round wall time and bytes on the
// wire (medians over the rounds after the first) and their ratios
// secure / plain.
//
//	go run ./bench/secagg -n 10 -d 1000000
//	go run ./bench/secagg -n 10,50 -d 10000,1000000 -rounds 4
//
// Bytes are counted on the server's side of every connection (a
// net.Listener wrapper: everything read and written, TLS off, gRPC
// framing included). A round's time runs from one release to the next
// as the server sees it, so it includes the learners' local steps (a
// logistic loss on one fixed sample per learner: cheap, the same in both
// modes) and the durable writes of the state directory. The run is not
// private (no noise: it costs the same in both modes); the clipping bound
// is 1 and the threshold floor(2n/3)+1, every learner survives.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/dpmf/dpmf/fednet"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/internal/docgen"
	flv1 "github.com/dpmf/dpmf/proto/dpmf/fl/v1"
	"github.com/dpmf/dpmf/secagg"
)

var verbose = flag.Bool("v", false, "log the server's phase closes and releases to stderr")

// countingListener counts in n the bytes of the connections it accepts.
type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{Conn: conn, n: l.n}, nil
}

type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func (c countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// sample is a learner's stream: one fixed sample for every client.
type sample struct {
	a []float64
	y float64
}

func (s sample) Sample(r, t int) ([]float64, float64) { return s.a, s.y }

// result is one measured run.
type result struct {
	seconds, bytes []float64 // per round after the first
}

// measure runs R rounds of n learners of dimension d and returns the
// per-round times and bytes.
func measure(n, d, R int, secure bool) (result, error) {
	// The server's state directory and the learners' (created by them).
	tmp, err := os.MkdirTemp("", "secagg-bench-")
	if err != nil {
		return result{}, err
	}
	defer os.RemoveAll(tmp)
	dir, ldir := filepath.Join(tmp, "server"), filepath.Join(tmp, "learners")
	cfg := fedopt.Config{Algorithm: fedopt.NonPrivate, Eta: 0.05, EtaG: 1, Clip: 1}
	shape := fedopt.Shape{Learners: n, Rounds: R, Tau: 1, Dim: d}
	opt := fednet.ServerOptions{Config: cfg, Shape: shape, Model: fednet.Model{Name: "logistic", Features: d},
		Dir: dir, RoundTimeout: 10 * time.Minute, MaxWait: 30 * time.Second, Linger: time.Second,
		CallTimeout: 5 * time.Minute}
	if *verbose {
		opt.Log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if secure {
		q, err := secagg.NewQuantizer(n, 1, cfg.Clip)
		if err != nil {
			return result{}, err
		}
		opt.Config.Quantizer = &q
		opt.SecureAggregation = &fednet.SecureAggregation{}
	}
	srv, err := fednet.NewServer(opt)
	if err != nil {
		return result{}, err
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return result{}, err
	}
	var wire atomic.Int64 // bytes on the wire
	g := grpc.NewServer(append(fednet.ServerOptionsGRPC(), grpc.Creds(insecure.NewCredentials()))...)
	srv.Register(g)
	go g.Serve(countingListener{Listener: lis, n: &wire})
	defer g.Stop()
	ctx := context.Background()
	runErr := make(chan error, 1)
	go func() { runErr <- srv.Run(ctx) }()

	// Watch the releases: the time and byte count at each.
	var times []time.Time
	var counts []int64
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		last := -1
		for {
			r, _ := srv.Round()
			if r != last {
				times, counts = append(times, time.Now()), append(counts, wire.Load())
				last = r
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	rng := rand.New(rand.NewPCG(uint64(n), uint64(d)))
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		a := make([]float64, d)
		for k := range a {
			a[k] = rng.NormFloat64()
		}
		s := sample{a: a, y: float64(2*(i%2) - 1)}
		wg.Go(func() {
			_, errs[i] = fednet.RunLearner(ctx, fednet.LearnerOptions{Addr: lis.Addr().String(), ID: i,
				Creds:       insecure.NewCredentials(),
				Data:        func(*flv1.RunConfig) (fedopt.Stream, error) { return s, nil },
				CallTimeout: 5 * time.Minute, WaitTimeout: time.Minute, StateDir: filepath.Join(ldir, fmt.Sprint(i))})
		})
	}
	wg.Wait()
	if err := <-runErr; err != nil {
		return result{}, err
	}
	close(stop)
	<-watched
	for i, err := range errs {
		if err != nil {
			return result{}, fmt.Errorf("learner %d: %w", i, err)
		}
	}
	var res result
	// times[0] is round 0 (at start); skip the first round, which
	// includes the joins.
	for k := 2; k < len(times); k++ {
		res.seconds = append(res.seconds, times[k].Sub(times[k-1]).Seconds())
		res.bytes = append(res.bytes, float64(counts[k]-counts[k-1]))
	}
	if len(res.seconds) == 0 {
		return res, fmt.Errorf("no round measured (%d releases seen)", len(times))
	}
	return res, nil
}

func main() {
	ns := flag.String("n", "10,50", "learners (comma-separated)")
	ds := flag.String("d", "10000,1000000", "model dimensions (comma-separated)")
	rounds := flag.Int("rounds", 4, "rounds per run (the first is not timed)")
	flag.Parse()
	log.SetFlags(0)
	nv, err := docgen.ParseInts("n", *ns)
	if err != nil {
		log.Fatal(err)
	}
	dv, err := docgen.ParseInts("d", *ds)
	if err != nil {
		log.Fatal(err)
	}
	if *rounds < 2 {
		log.Fatalf("-rounds %d: want >= 2 (the first round is not timed)", *rounds)
	}
	fmt.Printf("rounds %d (medians over rounds 2..%d), loopback, GOMAXPROCS from the environment\n\n", *rounds, *rounds)
	fmt.Println("| n | d | plain s/round | secure s/round | time ratio | plain MB/round | secure MB/round | bytes ratio |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, n := range nv {
		for _, d := range dv {
			plain, err := measure(n, d, *rounds, false)
			if err != nil {
				log.Fatalf("n = %d, d = %d, plain: %v", n, d, err)
			}
			sec, err := measure(n, d, *rounds, true)
			if err != nil {
				log.Fatalf("n = %d, d = %d, secure: %v", n, d, err)
			}
			pt, st := docgen.Median(plain.seconds), docgen.Median(sec.seconds)
			pb, sb := docgen.Median(plain.bytes), docgen.Median(sec.bytes)
			fmt.Printf("| %d | %d | %.3f | %.3f | %.2f | %.2f | %.2f | %.3f |\n", n, d, pt, st, st/pt, pb/1e6, sb/1e6, sb/pb)
		}
	}
}
