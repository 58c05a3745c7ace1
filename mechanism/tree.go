package mechanism

import (
	"fmt"
	"math/bits"

	"github.com/dpmf/dpmf/factorize"
)

// tree streams the noise of binary-tree aggregation with the simple
// estimator ([factorize.Tree]) in O(log R) buffers.
//
// Round r releases the sum of the dyadic nodes in the binary digits of
// n = r+1, so its noise is row r of A^{-1} B Z: the noise of the node
// decomposition of n minus that of n-1. With t the number of trailing zeros
// of n, the two decompositions share the nodes of the bits above t; n adds
// the node [n - 2^t, n) at level t, and n-1 = r has in its place one node at
// each level l < t. So round r's vector is z(new node) - sum_{l<t} buf[l],
// where buf[l] holds the noise of the latest node at level l that is a left
// child (only left children, [2q 2^l, (2q+1) 2^l), are ever used). Each
// round draws one noise row. buf[L-1] at the top level L-1 is never read,
// so L-1 = floor(log2 R) buffers suffice.
type tree struct {
	// row[l][q] is the noise row of the left node [2q 2^l, (2q+1) 2^l).
	row [][]int
	buf [][]float64
	dim int
}

// newTree reads the node of every noise row from f.C and checks that f.B
// is the simple estimator.
func newTree(f *factorize.Factorization, dim int) (*tree, error) {
	r, m := f.B.Dims()
	levels := bits.Len(uint(r))
	t := &tree{row: make([][]int, levels), dim: dim}
	for l := range t.row {
		t.row[l] = make([]int, (r>>l+1)/2)
		for q := range t.row[l] {
			t.row[l][q] = -1
		}
	}
	for j := 0; j < m; j++ {
		start, n := -1, 0
		for c := 0; c < r; c++ {
			v := f.C.At(j, c)
			switch {
			case v == 1 && (start < 0 || start+n == c):
				if start < 0 {
					start = c
				}
				n++
			case v != 0:
				return nil, fmt.Errorf("mechanism: tree factorization: row %d of C is not a dyadic interval", j)
			}
		}
		l := bits.TrailingZeros(uint(n))
		if n == 0 || n != 1<<l || start%n != 0 || f.Available[j] != start+n-1 {
			return nil, fmt.Errorf("mechanism: tree factorization: row %d of C is not a dyadic interval", j)
		}
		if q := start >> l; q%2 == 0 {
			t.row[l][q/2] = j
		}
	}
	// Check B: row i selects exactly the left nodes of the binary digits
	// of i+1.
	for i := 0; i < r; i++ {
		want := make(map[int]bool)
		n := i + 1
		for l := 0; l < levels; l++ {
			if n>>l&1 == 1 {
				j := t.row[l][n>>(l+1)]
				if j < 0 {
					return nil, fmt.Errorf("mechanism: tree factorization: no noise row for the node of level %d used in round %d", l, i)
				}
				want[j] = true
			}
		}
		for j := 0; j < m; j++ {
			v := f.B.At(i, j)
			if (want[j] && v != 1) || (!want[j] && v != 0) {
				return nil, fmt.Errorf("mechanism: tree factorization: B[%d][%d] = %v, want the simple dyadic estimator (use WithDense for other estimators)", i, j, v)
			}
		}
	}
	t.buf = make([][]float64, levels-1)
	for l := range t.buf {
		t.buf[l] = make([]float64, dim)
	}
	return t, nil
}

func (t *tree) prepare(int) {}

func (t *tree) block(g *gen, r, lo int, dst []float64) {
	n := r + 1
	lev := bits.TrailingZeros(uint(n))
	g.fill(t.row[lev][n>>(lev+1)], lo, dst)
	if lev < len(t.buf) {
		copy(t.buf[lev][lo:lo+len(dst)], dst)
	}
	for l := 0; l < lev; l++ {
		b := t.buf[l][lo : lo+len(dst)]
		for i := range dst {
			dst[i] -= b[i]
		}
	}
}

// seek fills each buffer with the latest left node of its level that
// ends before round r: [2q 2^l, (2q+1) 2^l) with q = floor((r - 2^l) / 2^(l+1)).
func (t *tree) seek(s *stream, r int) {
	s.forBlocks(func(g *gen, lo, hi int) {
		for l := range t.buf {
			if r >= 1<<l {
				q := (r - 1<<l) >> (l + 1)
				g.fill(t.row[l][q], lo, t.buf[l][lo:hi])
			}
		}
	})
}

func (t *tree) stateBytes() int64 { return int64(len(t.buf)) * int64(t.dim) * 8 }

func (t *tree) String() string { return fmt.Sprintf("tree(buffers=%d)", len(t.buf)) }
