package accountant_test

import (
	"context"
	"fmt"
	"math"

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
	// dpmf: mu = 0, want > 0
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

func ExamplePLD() {
	// The published PLD checks: three Gaussian mechanisms with sigma =
	// sqrt(3) (exactly 1-GDP), and three Poisson-subsampled Gaussians with
	// q = 0.2, sigma = 0.5 under add/remove, each at eps = 1.
	g, _ := accountant.GaussianPLD(math.Sqrt(3), accountant.PLDOptions{})
	g3, _ := g.SelfCompose(3)
	dg, _ := g3.Delta(1)
	exact, _ := accountant.Delta(1, 1)
	p, _ := accountant.SampledGaussianPLD(0.2, 0.5, accountant.AddRemove, accountant.PLDOptions{})
	p3, _ := p.SelfCompose(3)
	dp, _ := p3.Delta(1)
	fmt.Printf("Gaussian: delta = %.6f (exact %.6f)\n", dg, exact)
	fmt.Printf("Poisson:  delta = %.6f\n", dp)
	// Output:
	// Gaussian: delta = 0.126937 (exact 0.126937)
	// Poisson:  delta = 0.155933
}

func ExampleSampledGaussian() {
	// DP-SGD-style training: 1000 steps, each on a Poisson sample of 1% of
	// the records, noise multiplier 1.
	p, err := accountant.SampledGaussian(0.01, 1, 1000, accountant.AddRemove)
	if err != nil {
		fmt.Println(err)
		return
	}
	eps, _ := p.Epsilon(1e-5)
	fmt.Printf("eps = %.4f at delta = 1e-5\n", eps)
	for _, e := range []float64{1, 2, 4} {
		d, _ := p.Delta(e)
		fmt.Printf("delta(%v) = %.2g\n", e, d)
	}
	// Both sides: the true eps at delta = 1e-10 lies between them.
	b, _ := p.EpsilonBounds(1e-10)
	fmt.Printf("eps(1e-10) in [%.5f, %.5f]\n", b.Optimistic, b.Safe)
	// The floor no eps goes below: truncated tails and the floating-point
	// bound.
	fmt.Printf("floor %.0e\n", p.Floor())
	_, err = accountant.SampledGaussian(1.5, 1, 1000, accountant.AddRemove)
	fmt.Println(err)
	// Output:
	// eps = 1.8282 at delta = 1e-5
	// delta(1) = 0.0026
	// delta(2) = 2.7e-06
	// delta(4) = 5.4e-13
	// eps(1e-10) in [3.29044, 3.29045]
	// floor 8e-23
	// dpmf: q = 1.5, want a sampling probability in [0, 1]
}

func ExampleAmplifiedBandedSigma() {
	// A 16-banded factorization over 512 steps with cyclic Poisson sampling
	// at q = 0.05 is accounted as ceil(512/16) = 32 sampled Gaussian steps.
	k, _ := accountant.BandedCompositions(512, 16)
	sigma, err := accountant.AmplifiedBandedSigma(context.Background(), 0.05, 512, 16, 2, 1e-6, accountant.AddRemove)
	if err != nil {
		fmt.Println(err)
		return
	}
	// Without amplification (q = 1) the same 32 participations need more.
	full, _ := accountant.Sigma(2, 1e-6, accountant.Exact)
	fmt.Printf("%d compositions, sigma = %.3f (unamplified %.3f)\n", k, sigma, full*math.Sqrt(float64(k)))
	// Output:
	// 32 compositions, sigma = 1.162 (unamplified 12.617)
}

func ExampleSampledGaussian_replaceOne() {
	// The same run as ExampleSampledGaussian (noise std equal to the
	// clipping norm C), stated for replace-one neighbours: sigma is per unit
	// of the replace-one sensitivity 2C, so it is 1/2. The replace-one
	// accounting of a sampled step is an upper bound (see
	// SampledGaussianPLD); at q = 1 it is the Gaussian of sensitivity 2C.
	ar, _ := accountant.SampledGaussianEpsilon(0.01, 1, 1000, 1e-5, accountant.AddRemove)
	ro, _ := accountant.SampledGaussianEpsilon(0.01, 0.5, 1000, 1e-5, accountant.ReplaceOne)
	full, _ := accountant.SampledGaussianEpsilon(1, 0.5, 10, 1e-5, accountant.ReplaceOne)
	exact, _ := accountant.Epsilon(0.5, 1e-5, 10, accountant.Exact)
	fmt.Printf("add/remove eps = %.4f, replace-one eps <= %.4f\n", ar, ro)
	fmt.Printf("q = 1: replace-one eps = %.4f (exact Gaussian %.4f)\n", full, exact)
	// Output:
	// add/remove eps = 1.8282, replace-one eps <= 5.2907
	// q = 1: replace-one eps = 46.2112 (exact Gaussian 46.2112)
}
