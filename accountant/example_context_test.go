package accountant_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dpmf/dpmf/accountant"
)

func ExampleSampledGaussianContext() {
	// ExampleSampledGaussian's 1000 steps at q = 0.01, sigma = 1, under a
	// deadline, as a service or a command that must answer in time would
	// build it (dpacct does, and stops on SIGINT the same way).
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := accountant.SampledGaussianContext(ctx, 0.01, 1, 1000, accountant.AddRemove)
	if err != nil {
		fmt.Println(err)
		return
	}
	eps, _ := p.Epsilon(1e-5)
	// The PLD is SampledGaussian's, bit for bit.
	plain, _ := accountant.SampledGaussian(0.01, 1, 1000, accountant.AddRemove)
	same, _ := plain.Epsilon(1e-5)
	fmt.Printf("eps = %.4f at delta = 1e-5, as SampledGaussian's: %v\n", eps, eps == same)

	// A context already done stops the build at once with its error.
	done, stop := context.WithCancel(context.Background())
	stop()
	_, err = accountant.SampledGaussianContext(done, 0.01, 1, 1000, accountant.AddRemove)
	fmt.Println(errors.Is(err, context.Canceled))
	// Output:
	// eps = 1.8282 at delta = 1e-5, as SampledGaussian's: true
	// true
}
