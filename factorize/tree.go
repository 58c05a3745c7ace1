package factorize

import (
	"context"
	"math/bits"
	"sort"

	"gonum.org/v1/gonum/mat"
)

// StrategyTree is the name of [TreeStrategy].
const StrategyTree = "tree"

func init() {
	register(StrategyInfo{
		Name: StrategyTree, rank: 20, Doc: "binary-tree aggregation",
		Stream:        "log2 R",
		proto:         TreeStrategy{},
		streamVectors: func(_ Strategy, r int) int { return max(0, bits.Len(uint(r))-1) },
		solveBytes:    func(_ Strategy, r int, _ bool) float64 { return factorBytes(r, treeRows(r)) },
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
type TreeStrategy struct{}

// Name returns "tree".
func (TreeStrategy) Name() string { return StrategyTree }

// Spec returns "tree".
func (s TreeStrategy) Spec() string { return specOf(s) }

// Factorize returns the factorization with metrics under p.
func (TreeStrategy) Factorize(ctx context.Context, w *Workload, p Participation) (*Factorization, error) {
	return under(ctx, w, p, func() (*Factorization, error) { return newTree(w) })
}

// treeRows returns the number of rows of the tree's C at R = r: one per
// dyadic interval.
func treeRows(r int) int {
	m := 0
	for size := 1; size <= r; size *= 2 {
		m += r / size
	}
	return m
}

// newTree returns the tree factorization of w (see [TreeStrategy]).
func newTree(w *Workload) (*Factorization, error) {
	if err := requirePrefix(StrategyTree, w); err != nil {
		return nil, err
	}
	r := w.R()
	type node struct{ start, end, level int } // [start, end] inclusive
	var nodes []node
	for l := 0; 1<<l <= r; l++ {
		size := 1 << l
		for s := 0; s+size <= r; s += size {
			nodes = append(nodes, node{s, s + size - 1, l})
		}
	}
	sort.Slice(nodes, func(i, j int) bool {
		if nodes[i].end != nodes[j].end {
			return nodes[i].end < nodes[j].end
		}
		return nodes[i].level < nodes[j].level
	})
	m := len(nodes)
	index := make(map[[2]int]int, m) // (start, level) -> row
	c := mat.NewDense(m, r, nil)
	av := make([]int, m)
	for j, nd := range nodes {
		index[[2]int{nd.start, nd.level}] = j
		av[j] = nd.end
		for t := nd.start; t <= nd.end; t++ {
			c.Set(j, t, 1)
		}
	}
	b := mat.NewDense(r, m, nil)
	for t := 0; t < r; t++ {
		// Decompose [0, t] = [0, t+1) into dyadic blocks, largest first.
		n, start := t+1, 0
		for n > 0 {
			l := bits.Len(uint(n)) - 1
			b.Set(t, index[[2]int{start, l}], 1)
			start += 1 << l
			n -= 1 << l
		}
	}
	return &Factorization{
		Strategy:  StrategyTree,
		Operator:  newTreeOp(r),
		Workload:  w,
		B:         b,
		C:         c,
		Available: av,
		Metrics:   mustMetrics(b, c),
	}, nil
}
