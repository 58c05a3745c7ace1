package factorize

import (
	"context"
	"math"
	"math/bits"
	"slices"

	"gonum.org/v1/gonum/mat"
)

// StrategyTree is the name of [TreeStrategy].
const StrategyTree = "tree"

func init() {
	register(StrategyInfo{
		Name: StrategyTree, rank: 20, Doc: "binary-tree aggregation",
		Stream:        "log2 R",
		Workloads:     servesPrefix,
		serves:        func(_ Strategy, w *Workload, _ Participation) bool { return w.IsPrefix() },
		proto:         TreeStrategy{},
		lossOnly:      []ParticipationKind{KindSingle, KindMinSep},
		lossOnlyPtr:   func(p any) *bool { return &p.(*TreeStrategy).LossOnly },
		streamVectors: func(_ Strategy, r int) int { return max(0, bits.Len(uint(r))-1) },
		solveBytes: func(s Strategy, r int, _ Participation, _ bool) float64 {
			if s.(TreeStrategy).LossOnly {
				return 8 * 4 * float64(r) // the sensitivity's vectors of length R
			}
			// TreeRows in float64: 2 r wraps for r above MaxInt / 2.
			return 8 * 2 * float64(r) * max(0, 2*float64(r)-float64(bits.OnesCount(uint(r))))
		},
	})
}

// TreeStrategy is binary-tree aggregation for the prefix-sum workload (Dwork,
// Naor, Pitassi, Rothblum 2010; Chan, Shi, Song 2011), with the simple
// (not Honaker-weighted) estimator.
//
// C has one row per dyadic interval [k 2^l, (k+1) 2^l) that lies inside
// [0, R): the node's sum of the stream. Round r's prefix sum [0, r] is the
// sum of the nodes given by the binary digits of r+1, all of which end by
// round r, so B is causal. Every round lies in at most one node per level,
// and round 0 lies in one node of each of the L = floor(log2 R) + 1 levels, so
// the sensitivity is sqrt(L). Rows of C are ordered by the round at which the
// node completes, then by level.
//
// With LossOnly, the metrics come from the dyadic structure without B and
// C (O(R log R) time, O(R) memory): ||B||_F^2 = sum_t popcount(t+1), the
// largest row of B has max_t popcount(t+1) entries, and under
// min-separation the sensitivity is the dynamic-programming bound of
// [MinSepBound] evaluated in closed form (see treeMinSep), equal to the
// dense path's value.
type TreeStrategy struct {
	// LossOnly skips forming B and C: the result has only its metrics
	// (single participation and min-separation only).
	LossOnly bool
}

// Name returns "tree".
func (TreeStrategy) Name() string { return StrategyTree }

// Spec returns "tree".
func (s TreeStrategy) Spec() string { return specOf(s) }

// Factorize returns the factorization with metrics under p.
func (s TreeStrategy) Factorize(ctx context.Context, w *Workload, p Participation) (f *Factorization, err error) {
	defer keyed(s, &f, &err)
	if s.LossOnly {
		return checkedLossOnly(treeLossOnly(ctx, w, p))
	}
	return under(ctx, w, p, true, func() (*Factorization, error) { return newTree(w) })
}

// checkLossOnlyPrefix checks the arguments of a loss-only strategy for
// the prefix-sum workload only.
func checkLossOnlyPrefix(ctx context.Context, strategy string, w *Workload, p Participation) error {
	if err := checkContext(ctx); err != nil {
		return err
	}
	if err := requirePrefix(strategy, w); err != nil {
		return err
	}
	if err := p.Validate(w.R()); err != nil {
		return err
	}
	if p.Kind == KindEpochs && p.K > 1 {
		return &ParamError{Param: "participation", Value: p.String(), Want: "single or min-separation for a loss-only " + strategy}
	}
	return nil
}

// treeLossOnly returns the metrics-only tree factorization under p (see
// [TreeStrategy]).
func treeLossOnly(ctx context.Context, w *Workload, p Participation) (*Factorization, error) {
	if err := checkLossOnlyPrefix(ctx, StrategyTree, w, p); err != nil {
		return nil, err
	}
	r := w.R()
	// Row t of B has one entry per dyadic block of [0, t+1).
	frob, maxRow := 0, 0
	for t := 1; t <= r; t++ {
		n := bits.OnesCount(uint(t))
		frob += n
		maxRow = max(maxRow, n)
	}
	levels := bits.Len(uint(r)) // column 0 lies in one node per level
	gamma := math.Sqrt(float64(levels))
	sens := Sensitivity{Value: gamma, Exact: true, Rule: RuleColumnNorm}
	if k := p.Participations(r); p.Kind == KindMinSep && k > 1 {
		sens = treeMinSep(r, min(p.B, r), k)
	}
	return &Factorization{
		Strategy:  StrategyTree,
		Operator:  newTreeOp(r),
		Workload:  w,
		Available: treeAvailable(r),
		Metrics:   metricsFrom(r, gamma, p, sens, float64(frob), float64(maxRow)),
	}, nil
}

// treeAvailable returns the rounds at which the tree's noise rows are
// available: the end of each node, in [TreeStrategy]'s row order.
func treeAvailable(r int) []int {
	av := make([]int, 0, TreeRows(r))
	for e := 0; e < r; e++ {
		for l := 0; l <= bits.TrailingZeros(uint(e+1)); l++ {
			av = append(av, e)
		}
	}
	return av
}

// treeMinSep returns the sensitivity of the tree's C on r rounds under
// b-min-separation with k >= 2 participations (b <= r, k at most the
// ceil(r/b) that fit): what [MinSepSensitivity] gives for X = C^T C, in
// O(r log r + r k) without X. X_ij is the number of complete dyadic nodes
// (those inside [0, r)) that hold both i and j; the nodes holding i are
// nested intervals N_0 = {i} ⊂ N_1 ⊂ ..., complete up to some level. If
// the largest node has at most b rounds, X is banded within b and the
// sensitivity is exact ([MinSepBanded]); otherwise it is the bound of
// [MinSepBound], sum over a pattern of v_i with v_i = X_ii plus the best
// k-1 picks of row i at least b from i and from each other. The picks
// left of i are best taken at i - b, i - 2b, ... (the q-th pick is at most
// i - q b, and every node holding a farther round holds the nearer ones),
// likewise on the right, so row i's picks gain sum_m min(a, L_m) +
// min(c, R_m) over the complete levels m >= 1, with L_m (R_m) the number
// of rounds i - q b (i + q b) in N_m and a + c <= k - 1: the largest k-1
// of the two non-increasing marginal gains #{m: L_m >= q}, #{m: R_m >= q}.
func treeMinSep(r, b, k int) Sensitivity {
	levels := bits.Len(uint(r))
	v := make([]float64, r)
	ls := make([]int, 0, levels)
	rs := make([]int, 0, levels)
	for i := 0; i < r; i++ {
		ls, rs = ls[:0], rs[:0]
		for m := 1; m < levels; m++ {
			start := i >> m << m
			end := start + 1<<m // exclusive
			if end > r {
				break // larger nodes are incomplete too
			}
			ls = append(ls, (i-start)/b)
			rs = append(rs, (end-1-i)/b)
		}
		diag := len(ls) + 1
		// Both counts are non-decreasing in m (the nodes are nested):
		// reversed, they are the gains' non-increasing order.
		slices.Reverse(ls)
		slices.Reverse(rs)
		// Picks of gain g: #{q: gain_L(q) >= g} = ls[g-1]; take the
		// largest gains first.
		left, gain := k-1, 0
		for g := len(ls); g >= 1 && left > 0; g-- {
			n := ls[g-1] + rs[g-1]
			if g < len(ls) {
				n -= ls[g] + rs[g]
			}
			t := min(left, n)
			gain += t * g
			left -= t
		}
		v[i] = float64(diag + gain)
	}
	exact := 1<<(levels-1) <= b // the largest node, 2^(levels-1) rounds
	rule := RuleMinSepBound
	if exact {
		rule = RuleMinSepBanded
	}
	return Sensitivity{Value: math.Sqrt(bestSeparated(v, b, k)), Exact: exact, Rule: rule}
}

// TreeRows returns the number of rows of the tree's C (its noise rows,
// m) at R = r: one per dyadic interval [k 2^l, (k+1) 2^l) inside [0, r),
// sum_l floor(r / 2^l) = 2r - popcount(r); 0 for r < 1. r up to
// [MaxRounds] (2r must not overflow an int).
func TreeRows(r int) int { return max(0, 2*r-bits.OnesCount(uint(r))) }

// newTree returns the tree factorization of w (see [TreeStrategy]).
func newTree(w *Workload) (*Factorization, error) {
	if err := requirePrefix(StrategyTree, w); err != nil {
		return nil, err
	}
	r := w.R()
	av := treeAvailable(r)
	m := len(av)
	op := newTreeOp(r)
	c := mat.NewDense(m, r, nil)
	j := 0
	for e := 0; e < r; e++ {
		// The nodes that end at round e, in treeAvailable's row order:
		// level l = 0, 1, ..., tz(e+1), the node [e+1-2^l, e].
		for l := 0; l <= bits.TrailingZeros(uint(e+1)); l++ {
			for t := e + 1 - 1<<l; t <= e; t++ {
				c.Set(j, t, 1)
			}
			j++
		}
	}
	b := mat.NewDense(r, m, nil)
	for t := 0; t < r; t++ {
		// Decompose [0, t] = [0, t+1) into dyadic blocks, largest first:
		// each starts at a multiple of twice its length, a left node.
		n, start := t+1, 0
		for n > 0 {
			l := bits.Len(uint(n)) - 1
			b.Set(t, op.row[l][start>>(l+1)], 1)
			start += 1 << l
			n -= 1 << l
		}
	}
	return &Factorization{
		Strategy:  StrategyTree,
		Operator:  op,
		Workload:  w,
		B:         b,
		C:         c,
		Available: av,
		Metrics:   mustMetrics(b, c),
	}, nil
}
