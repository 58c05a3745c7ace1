package accountant

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// chainNode is one PLD of a random chain of Compose and SelfCompose calls:
// its name (the calls that built it), and the events it composes, for
// the reference (the base events, with repetition).
type chainNode struct {
	name string
	p    *PLD
	evs  []*PLD
	mu2  float64 // Gaussian chains: the sum of 1 / sigma_j^2
}

// randomChain builds up to steps PLDs from the two events in pool by
// SelfCompose (counts 1 to 8) and Compose (of a PLD with itself, with
// another of its base, or with a twin built apart), calling f on each
// that has at most maxEvents events.
func randomChain(rng *rand.Rand, pool []chainNode, steps, maxEvents int, f func(n chainNode)) {
	for range steps {
		a := pool[rng.Intn(len(pool))]
		var n chainNode
		var err error
		if rng.Intn(3) == 0 {
			k := []int{1, 2, 3, 4, 6, 8}[rng.Intn(6)]
			n = chainNode{name: fmt.Sprintf("(%s).SelfCompose(%d)", a.name, k), mu2: a.mu2 * float64(k)}
			n.p, err = a.p.SelfCompose(k)
			for range k {
				n.evs = append(n.evs, a.evs...)
			}
		} else {
			b := pool[rng.Intn(len(pool))]
			n = chainNode{name: fmt.Sprintf("(%s).Compose(%s)", a.name, b.name), mu2: a.mu2 + b.mu2}
			n.p, err = a.p.Compose(b.p)
			n.evs = append(append([]*PLD{}, a.evs...), b.evs...)
		}
		if err != nil || len(n.evs) > maxEvents {
			continue
		}
		pool = append(pool, n)
		f(n)
	}
}

// directConvolve returns the composition of a and b by direct
// convolution of their masses (non-negative terms: a relative error of at
// most (len(a) + len(b)) u per entry), with the infinite mass of the pair
// (a's with all of b's, b's with a's finite masses).
func directConvolve(a, b *lossDist) *lossDist {
	r := &lossDist{lo: a.lo + b.lo, mass: make([]float64, len(a.mass)+len(b.mass)-1), logErr: math.Inf(-1)}
	for i, x := range a.mass {
		if x != 0 {
			for j, y := range b.mass {
				r.mass[i+j] += x * y
			}
		}
	}
	r.inf = a.inf*(sum(b.mass)+b.inf) + b.inf*sum(a.mass)
	return r
}

// directDelta returns delta(eps) at each of epss of the direct
// composition of the events' stored one-step masses, pessimistic and
// optimistic (the largest over the directions of each), read with rel and
// the error bound set to 0. The convolutions are formed once for all of
// epss.
func directDelta(evs []*PLD, epss []float64) (safe, opt []float64) {
	safe, opt = make([]float64, len(epss)), make([]float64, len(epss))
	for i := range 4 {
		var cur *lossDist
		for _, e := range evs {
			d := e.dist(i)
			switch {
			case d == noOpt:
				for k := range opt {
					opt[k] = 0 // a safe-only PLD: the optimistic side is 0
				}
				return safe, opt
			case cur == nil:
				c := *d
				cur = &c
			default:
				cur = directConvolve(cur, d)
			}
		}
		cur.rel, cur.logErr, cur.prop = 0, math.Inf(-1), nil
		c := newCurve(cur, evs[0].h, i < 2)
		for k, eps := range epss {
			v := c.value(eps)
			if i < 2 {
				safe[k] = math.Max(safe[k], v)
			} else {
				opt[k] = math.Max(opt[k], v)
			}
		}
	}
	return safe, opt
}

// TestComposeChainsBracketTruth attacks the composition of computed
// masses (Compose of PLDs of different tilts, of single events at a
// positive tilt with their lowest error index, of compositions of one
// base, and SelfCompose of all of these) with random chains, against two
// references that share no code with it but the final read of a curve:
//
//   - Gaussians of sigma in [0.4, 24] at intervals 1e-3 to 5e-2: the
//     truth is mu-GDP with mu^2 the sum of 1 / sigma_j^2 (refDelta, in
//     math/big), which DeltaBounds must contain and EpsilonBounds bracket
//     (to a relative 1e-9);
//   - sampled Gaussians (q from 1e-5 to 1, sigma 0.5 to 5, both
//     relations, intervals 0.02 and 0.05, tail masses 1e-30 to 1e-8): the
//     direct convolution of the stored one-step masses of every event in
//     the chain, whose delta the safe side must not fall below and the
//     optimistic side not exceed (by more than a relative 1e-7, far above
//     the direct sums' rounding and the one-step masses' rel).
//
// It runs seeds 1 to 12 (Gaussian) and 1 to 20 (sampled), -short 3 and
// 2; sampled seeds 1 to 40 passed at
// the review of the pldcompose, replace3 and 8213da3 merges.
func TestComposeChainsBracketTruth(t *testing.T) {
	t.Parallel()
	seeds := 12
	if testing.Short() {
		seeds = 3
	}
	for seed := 1; seed <= seeds; seed++ {
		rng := rand.New(rand.NewSource(int64(seed)))
		h := []float64{1e-3, 3e-3, 1e-2, 5e-2}[rng.Intn(4)]
		o := PLDOptions{Interval: h, TailMass: []float64{0, 1e-20, 1e-8, 1e-30}[rng.Intn(4)]}
		var pool []chainNode
		for range 2 {
			s := 0.4 * math.Exp(rng.Float64()*math.Log(60))
			p, err := GaussianPLD(s, o)
			if err != nil {
				t.Fatal(err)
			}
			pool = append(pool, chainNode{name: fmt.Sprintf("G(%.4g)", s), p: p, evs: []*PLD{p}, mu2: 1 / (s * s)})
		}
		randomChain(rng, pool, 6, 1<<20, func(n chainNode) {
			mu := math.Sqrt(n.mu2)
			if mu > 20 {
				return
			}
			for _, eps := range []float64{0, 0.3, 1, 2, 4, 8, 16, 32} {
				if eps/mu+mu/2 > 40 {
					continue // delta far below 1e-300
				}
				b, err := n.p.DeltaBounds(eps)
				if err != nil {
					t.Fatal(err)
				}
				exact, _ := refDelta(eps, mu).Float64()
				if !(b.Optimistic <= exact*(1+1e-9) && exact <= b.Safe*(1+1e-9)) {
					t.Errorf("seed %d, interval %v: %s (mu %.6g): delta(%v) in [%.12g, %.12g] misses the exact %.12g", seed, h, n.name, mu, eps, b.Optimistic, b.Safe, exact)
				}
			}
			for _, delta := range []float64{1e-2, 1e-5, 1e-10, 1e-14} {
				b, err := n.p.EpsilonBounds(delta)
				if err != nil {
					t.Fatal(err)
				}
				if !math.IsInf(b.Safe, 1) && b.Safe/mu+mu/2 <= 40 {
					if ds, _ := refDelta(b.Safe, mu).Float64(); !(ds <= delta*(1+1e-9)) {
						t.Errorf("seed %d, interval %v: %s (mu %.6g): eps(%v) <= %.12g, where the exact delta is %.6g", seed, h, n.name, mu, delta, b.Safe, ds)
					}
				}
				if b.Optimistic > 0 {
					if do, _ := refDelta(b.Optimistic, mu).Float64(); !(do >= delta*(1-1e-9)) {
						t.Errorf("seed %d, interval %v: %s (mu %.6g): eps(%v) >= %.12g, where the exact delta is %.6g", seed, h, n.name, mu, delta, b.Optimistic, do)
					}
				}
			}
		})
	}

	seeds = 20
	if testing.Short() {
		seeds = 2
	}
	for seed := 1; seed <= seeds; seed++ {
		rng := rand.New(rand.NewSource(int64(seed)))
		h := []float64{0.02, 0.05}[rng.Intn(2)]
		o := PLDOptions{Interval: h, TailMass: []float64{0, 1e-20, 1e-8, 1e-30}[rng.Intn(4)]}
		var pool []chainNode
		for range 2 {
			q := []float64{1, 0.5, 0.1, 0.01, 1e-3, 1e-5}[rng.Intn(6)]
			s := []float64{0.5, 0.8, 1, 2, 5}[rng.Intn(5)]
			rel := []Relation{AddRemove, AddRemove, ReplaceOne}[rng.Intn(3)]
			p, err := SampledGaussianPLD(q, s, rel, o)
			if err != nil {
				t.Fatal(err)
			}
			// The reference convolves what Compose composes: for a
			// replace-one step, the pair composed at tilt 0 that its PLD
			// records as its base joined below its tilted masses
			// (p.one(); SelfCompose composes the base, another
			// computation of the same discrete pair).
			pool = append(pool, chainNode{name: fmt.Sprintf("S(%v, %v, %v)", q, s, rel), p: p, evs: []*PLD{p.one()}})
		}
		randomChain(rng, pool, 6, 12, func(n chainNode) {
			epss := []float64{0, 0.1, 0.5, 1, 2, 3, 4, 6, 8, 12, 16, 24}
			safe, opt := directDelta(n.evs, epss)
			for k, eps := range epss {
				b, err := n.p.DeltaBounds(eps)
				if err != nil {
					t.Fatal(err)
				}
				if !(b.Safe >= safe[k]*(1-1e-10)) || !(b.Optimistic <= opt[k]*(1+1e-10)) {
					t.Errorf("seed %d, interval %v, tail %v: %s: delta(%v) in [%.12g, %.12g], direct convolution [%.12g, %.12g]", seed, h, o.TailMass, n.name, eps, b.Optimistic, b.Safe, opt[k], safe[k])
				}
			}
		})
	}
}
