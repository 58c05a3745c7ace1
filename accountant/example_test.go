package accountant_test

import (
	"fmt"

	"github.com/dpmf/dpmf/accountant"
)

func ExampleSigma() {
	for _, m := range []accountant.Method{accountant.Exact, accountant.CKS, accountant.Paper} {
		sigma, err := accountant.Sigma(1, 1e-5, m)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%-6v sigma = %.6f\n", m, sigma)
	}
	// Output:
	// exact  sigma = 3.730632
	// cks    sigma = 4.045130
	// paper  sigma = 4.901617
}

func ExampleEpsilon() {
	// 100 releases, each with noise multiplier 1, compose exactly to
	// mu = 10.
	eps, err := accountant.Epsilon(1, 1e-5, 100, accountant.Exact)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("eps = %.6f\n", eps)
	// Output:
	// eps = 91.817290
}

func ExampleNoiseStd() {
	// dpmf's online FL: n = 10 learners, clipping B_g = 1, factorization
	// column norm gamma = 1. The exact sensitivity is 2 gamma B_g / n; the
	// paper's conservative calibration uses 2 gamma B_g.
	const n, bg, gamma = 10, 1.0, 1.0
	v, _ := accountant.NoiseStd(5, 1e-3, 2*gamma*bg/n, accountant.Exact)
	p, _ := accountant.NoiseStd(5, 1e-3, 2*gamma*bg, accountant.Paper)
	fmt.Printf("dpmf V = %.4f, paper V = %.4f\n", v, p)
	// Output:
	// dpmf V = 0.1380, paper V = 1.7351
}

func ExampleDelta() {
	d, _ := accountant.Delta(1, 1/3.73063163)
	fmt.Printf("delta = %.4g\n", d)
	_, err := accountant.Delta(1, 0)
	fmt.Println(err)
	// Output:
	// delta = 1e-05
	// accountant: mu = 0, want > 0
}

func ExampleParseMethod() {
	m, err := accountant.ParseMethod("dwork-roth")
	fmt.Println(m, err)
	_, err = accountant.Sigma(2, 1e-5, m)
	fmt.Println(err != nil)
	// Output:
	// dwork-roth <nil>
	// true
}
