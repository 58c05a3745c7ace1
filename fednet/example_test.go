package fednet_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/dpmf/dpmf/dataset"
	"github.com/dpmf/dpmf/fednet"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/model"
	flv1 "github.com/dpmf/dpmf/proto/dpmf/fl/v1"
)

// A server and two learners over gRPC on loopback, without noise: the
// learners end with the model the in-process simulation releases.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	data, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: 3}.Dataset(2, 5, 2, 1)
	if err != nil {
		panic(err)
	}
	cfg := fedopt.Config{Algorithm: fedopt.NonPrivate, Eta: 0.1, EtaG: 1, Clip: 1}
	shape := fedopt.Shape{Learners: 2, Rounds: 5, Tau: 2, Dim: 3}

	dir, err := os.MkdirTemp("", "fednet-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	srv, err := fednet.NewServer(fednet.ServerOptions{
		Config: cfg, Shape: shape, Model: fednet.Model{Name: "logistic", Features: 3}, Dir: dir,
	})
	if err != nil {
		panic(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	g := grpc.NewServer(append(fednet.ServerOptionsGRPC(), grpc.Creds(insecure.NewCredentials()))...)
	srv.Register(g)
	go g.Serve(lis)
	defer g.Stop()
	go srv.Run(ctx)

	finals := make([][]float64, shape.Learners)
	var wg sync.WaitGroup
	for i := range finals {
		wg.Go(func() {
			x, err := fednet.RunLearner(ctx, fednet.LearnerOptions{
				Addr: lis.Addr().String(), ID: i, Creds: insecure.NewCredentials(),
				Data: func(*flv1.RunConfig) (fedopt.Stream, error) { return data.Stream(i), nil },
			})
			if err != nil {
				panic(err)
			}
			finals[i] = x
		})
	}
	wg.Wait()

	// The simulation of the same roles in one process.
	sim, _ := fedopt.NewServer(cfg, shape, nil)
	learners := make([]*fedopt.Learner, shape.Learners)
	for i := range learners {
		learners[i], _ = fedopt.NewLearner(model.Logistic{}, data.Stream(i), cfg, shape.Tau, shape.Dim)
	}
	_ = fedopt.Simulate(ctx, sim, learners, fedopt.SimOptions{})

	rel, _ := fednet.ReadRound(dir, shape.Rounds)
	fmt.Println("released rounds:", rel.Round, "updates in the last:", rel.Updates)
	fmt.Println("learners end with the simulation's model:", slices.Equal(finals[0], sim.Model()) && slices.Equal(finals[1], sim.Model()))
	// Output:
	// released rounds: 5 updates in the last: 2
	// learners end with the simulation's model: true
}
