package linalg

import (
	"fmt"
	"math"

	"github.com/dpmf/dpmf/internal/par"
)

// InvSqrtWorkspace holds the buffers of [BidiagGram.InvSqrtDiagParallel]
// for one order n, so that repeated calls do not allocate (beyond the
// checkpoints of a call with more shifts than any before it).
type InvSqrtWorkspace struct {
	n      int
	g2, h2 []float64
	// fwd[g] and bwd[g] are the checkpoints of group g's recurrences:
	// nLanes values per block.
	fwd, bwd [][]float64
	// scratch holds two blocks of nLanes values per worker, and state the
	// recurrences' states (kept here: passed to the kernels through
	// function values, they would escape to the heap at every block).
	scratch [][]float64
	state   []*[2][nLanes]float64
	// part and lanes are the buffers of invSqrtDiagSmall, made when
	// first needed.
	part  []float64
	lanes [2][oldLanes][]float64
}

// InvSqrtLanes is the number of shifts [BidiagGram.InvSqrtDiagParallel]
// evaluates side by side: its cost is that of len(q.Shifts) rounded up to
// a multiple of InvSqrtLanes.
const InvSqrtLanes = nLanes

const (
	// nLanes is the number of shifts one sweep carries side by side (a
	// group): the recurrences are chains of dependent divisions, so
	// interleaving independent chains keeps the divider busy, and on
	// amd64 the sixteen lanes are four AVX registers.
	nLanes = 16
	// laneBlock is the number of entries of one block: the unit of the
	// checkpoints and of the parallel work of the second phase (two
	// blocks of nLanes values, 32 KiB, stay in the first-level cache).
	laneBlock = 128
	// blocksPerTask is the number of consecutive blocks one task of the
	// second phase takes.
	blocksPerTask = 16
)

// NewInvSqrtWorkspace returns buffers for order n (about 2 n float64, and
// 2 n / 8 bytes per group of sixteen shifts for the checkpoints). It
// panics if n is negative (a programmer error, see the package doc).
func NewInvSqrtWorkspace(n int) *InvSqrtWorkspace {
	if n < 0 {
		panic(fmt.Sprintf("linalg: inverse square root workspace of negative order %d", n))
	}
	return &InvSqrtWorkspace{n: n, g2: make([]float64, n), h2: make([]float64, n)}
}

// groups makes room for the checkpoints of g groups and the scratch of w
// workers.
func (ws *InvSqrtWorkspace) grow(g, w int) {
	nb := (ws.n + laneBlock - 1) / laneBlock
	for len(ws.fwd) < g {
		ws.fwd = append(ws.fwd, make([]float64, nb*nLanes))
		ws.bwd = append(ws.bwd, make([]float64, nb*nLanes))
	}
	for len(ws.scratch) < w {
		ws.scratch = append(ws.scratch, make([]float64, 2*laneBlock*nLanes))
		ws.state = append(ws.state, new([2][nLanes]float64))
	}
}

// Kernels on nLanes shifts side by side; AVX assembly where the CPU has
// it (invsqrt_lanes_amd64.s), with the same bits.
var (
	fwdLanes     = fwdLanesGo
	bwdLanes     = bwdLanesGo
	combineLanes = combineLanesGo
)

// InvSqrtDiagParallel writes into dst the diagonal of r(T) as
// [BidiagGram.InvSqrtDiag] does, on up to workers goroutines. Its result
// depends only on b and q, not on workers or on scheduling: every entry is
// computed by the same operations in the same order whichever goroutine
// computes it. It differs from InvSqrtDiag's by the order of the sum over
// shifts and by computing each term as w_j / (p_i + s_i) rather than
// w_j (1 / (p_i + s_i)) (every term is positive, so either has a relative
// error of at most len(q.Shifts) + 1 units in the last place).
//
// The shifts go in groups of sixteen (the last padded with zero weights,
// which add exact zeros), each group's two recurrences of
// [BidiagGram.ShiftedInverseDiag] carried side by side. The top-down
// recurrence (p) and the bottom-up one (s) are independent: a first phase
// runs each of them once over all n entries, one goroutine per group and
// direction, keeping only their values at the start of every block of 128
// entries; a second phase, parallel over blocks, runs both again within
// each block from those checkpoints (in the cache) and adds the terms. The
// memory is O(n) with a small constant, and no pass holds an n-by-16
// array: R = 10^7 stays within a few hundred MB.
//
// Below order 65,536 it runs the previous kernel (see smallInvSqrtOrder),
// whose result also does not depend on workers.
func (b BidiagGram) InvSqrtDiagParallel(q InvSqrtRational, dst []float64, ws *InvSqrtWorkspace, workers int) {
	b.check(len(dst))
	if ws == nil || ws.n != b.N() {
		panic(fmt.Sprintf("linalg: InvSqrtDiagParallel workspace for order %d, want %d", wsN(ws), b.N()))
	}
	n := b.N()
	// g2 and h2: independent entries, in parallel over fixed ranges.
	chunks := (n + 4095) / 4096
	par.Pool(chunks, min(max(1, workers), chunks), func(_, c int) bool {
		lo, hi := c*4096, min(n, (c+1)*4096)
		for i := lo; i < hi; i++ {
			ws.g2[i] = b.Diag[i] * b.Diag[i]
			ws.h2[i] = b.Sub[i] * b.Sub[i]
		}
		return true
	})
	ws.InvSqrtDiagSquares(q, dst, workers)
}

// Squares returns the workspace's buffers for the squared entries of the
// bidiagonal G, g2[i] = Diag[i]^2 and h2[i] = Sub[i]^2, which
// [InvSqrtWorkspace.InvSqrtDiagSquares] reads: a caller that forms G can
// write them in the same pass.
func (ws *InvSqrtWorkspace) Squares() (g2, h2 []float64) { return ws.g2, ws.h2 }

// InvSqrtDiagSquares is [BidiagGram.InvSqrtDiagParallel] for the
// BidiagGram whose squared entries the workspace holds (see
// [InvSqrtWorkspace.Squares]): the same bits, without the pass that forms
// the squares. dst must have length at least the workspace's order.
func (ws *InvSqrtWorkspace) InvSqrtDiagSquares(q InvSqrtRational, dst []float64, workers int) {
	n := ws.n
	if len(dst) < n {
		panic(fmt.Sprintf("linalg: InvSqrtDiagSquares into %d entries, want %d", len(dst), n))
	}
	dst = dst[:n]
	if n == 0 {
		return
	}
	if n < smallInvSqrtOrder {
		ws.invSqrtDiagSmall(q, dst)
		return
	}
	workers = max(1, workers)
	ns := len(q.Shifts)
	groups := (ns + nLanes - 1) / nLanes
	shifts := make([][nLanes]float64, groups)
	weights := make([][nLanes]float64, groups)
	for j := range groups * nLanes {
		g, l := j/nLanes, j%nLanes
		if j < ns {
			shifts[g][l], weights[g][l] = q.Shifts[j], q.Weights[j]
		} else {
			shifts[g][l] = q.Shifts[ns-1]
		}
	}
	ws.grow(groups, workers)
	nb := (n + laneBlock - 1) / laneBlock
	g2, h2 := ws.g2, ws.h2

	// Phase 1: the checkpoints. Task 2g runs group g top-down, task 2g+1
	// bottom-up; both write only their own checkpoints.
	par.Pool(2*groups, min(workers, 2*groups), func(wk, task int) bool {
		g := task / 2
		s := &shifts[g]
		buf := ws.scratch[wk]
		t, u := &ws.state[wk][0], &ws.state[wk][1]
		if task%2 == 0 {
			cp := ws.fwd[g]
			*t = *s
			for blk := 0; blk < nb; blk++ {
				lo, hi := blk*laneBlock, min(n, (blk+1)*laneBlock)
				copy(cp[blk*nLanes:(blk+1)*nLanes], t[:])
				lo = max(lo, 1)
				if hi > lo {
					fwdLanes(g2[lo-1:hi-1], h2[lo:hi], s, t, buf)
				}
			}
			return true
		}
		cp := ws.bwd[g]
		for l := range u {
			u[l] = g2[n-1] + s[l]
		}
		for blk := nb - 1; blk >= 0; blk-- {
			lo, hi := blk*laneBlock, min(n-1, (blk+1)*laneBlock)
			copy(cp[blk*nLanes:(blk+1)*nLanes], u[:])
			if hi > lo {
				bwdLanes(g2[lo:hi], h2[lo+1:hi+1], s, u, buf)
			}
		}
		return true
	})

	// Phase 2: within each block, both recurrences again from their
	// checkpoints, and the sum over groups in their order.
	tasks := (nb + blocksPerTask - 1) / blocksPerTask
	// The workers take the tasks in order from a shared counter
	// ([par.Pool]); wk names the goroutine, for its scratch buffers.
	par.Pool(tasks, min(workers, tasks), func(wk, task int) bool {
		buf := ws.scratch[wk]
		pb, ub := buf[:laneBlock*nLanes], buf[laneBlock*nLanes:]
		t, u := &ws.state[wk][0], &ws.state[wk][1]
		for blk := task * blocksPerTask; blk < min(nb, (task+1)*blocksPerTask); blk++ {
			lo, hi := blk*laneBlock, min(n, (blk+1)*laneBlock)
			m := hi - lo
			out := dst[lo:hi]
			clear(out)
			for g := range groups {
				s := &shifts[g]
				copy(t[:], ws.fwd[g][blk*nLanes:])
				copy(u[:], ws.bwd[g][blk*nLanes:])
				start := lo
				if lo == 0 {
					clear(pb[:nLanes]) // p_0 = 0
					start = 1
				}
				if hi > start {
					fwdLanes(g2[start-1:hi-1], h2[start:hi], s, t, pb[(start-lo)*nLanes:])
				}
				end := hi
				if hi == n {
					end = n - 1 // s_{n-1} = g_{n-1}^2 + sigma
					copy(ub[(m-1)*nLanes:m*nLanes], u[:])
				}
				if end > lo {
					bwdLanes(g2[lo:end], h2[lo+1:end+1], s, u, ub)
				}
				combineLanes(pb, ub, &weights[g], out)
			}
		}
		return true
	})
}

func wsN(ws *InvSqrtWorkspace) int {
	if ws == nil {
		return -1
	}
	return ws.n
}

// fwdLanesGo runs the top-down recurrence of [BidiagGram.ShiftedInverseDiag]
// for nLanes shifts s over len(h2) entries, from t (the state t_{i-1}
// before the first entry i, updated): for entry j,
// x = h2[j] (t / (g2prev[j] + t)) is written to p[nLanes j + l] and
// t = s + x. g2prev[j] is the squared diagonal entry before entry j.
func fwdLanesGo(g2prev, h2 []float64, s, t *[nLanes]float64, p []float64) {
	p = p[:len(h2)*nLanes]
	g2prev = g2prev[:len(h2)]
	for j, h := range h2 {
		g := g2prev[j]
		row := p[j*nLanes : (j+1)*nLanes]
		for l := range nLanes {
			x := float64(h * (t[l] / (t[l] + g)))
			row[l] = x
			t[l] = s[l] + x
		}
	}
}

// bwdLanesGo runs the bottom-up recurrence of
// [BidiagGram.ShiftedInverseDiag] for nLanes shifts s over len(g2) entries,
// from the last one down, from u (the state after the entry past the last,
// updated): for entry j, u = s + g2[j] (u / (h2next[j] + u)) is written to
// uout[nLanes j + l]. h2next[j] is the squared subdiagonal entry after
// entry j.
func bwdLanesGo(g2, h2next []float64, s, u *[nLanes]float64, uout []float64) {
	uout = uout[:len(g2)*nLanes]
	h2next = h2next[:len(g2)]
	for j := len(g2) - 1; j >= 0; j-- {
		h, g := h2next[j], g2[j]
		row := uout[j*nLanes : (j+1)*nLanes]
		for l := range nLanes {
			x := float64(g * (u[l] / (u[l] + h)))
			u[l] = s[l] + x
			row[l] = u[l]
		}
	}
}

// combineLanesGo adds to out[j] the sum over the nLanes lanes of
// w / (p + u), in the order of the AVX registers: r_l the lane terms,
// a_k = (r_k + r_{4+k}) + (r_{8+k} + r_{12+k}), and then
// (a_0 + a_2) + (a_1 + a_3).
func combineLanesGo(p, u []float64, w *[nLanes]float64, out []float64) {
	p, u = p[:len(out)*nLanes], u[:len(out)*nLanes]
	for j := range out {
		var r [nLanes]float64
		for l := range nLanes {
			r[l] = w[l] / (p[j*nLanes+l] + u[j*nLanes+l])
		}
		var a [4]float64
		for k := range a {
			a[k] = (r[k] + r[4+k]) + (r[8+k] + r[12+k])
		}
		out[j] += (a[0] + a[2]) + (a[1] + a[3])
	}
}

// smallInvSqrtOrder is the order below which InvSqrtDiagParallel runs the
// previous kernel (four shifts side by side, groups of four dealt
// alternately to two sums added at the end, from order 2048 on on two
// goroutines where GOMAXPROCS allows), so
// that small problems keep their results bit for bit (the recorded guards
// of cmd/mfsolve and cmd/ofl); a variable so that the tests can move it.
var smallInvSqrtOrder = 1 << 16

// smallParallelOrder is the order from which the previous kernel runs its
// two sums concurrently (below it a goroutine costs more than it saves);
// the result does not depend on it.
const smallParallelOrder = 2048

// oldLanes is the number of shifts the previous kernel carries side by
// side.
const oldLanes = 4

// invSqrtDiagSmall is the previous kernel; see smallInvSqrtOrder.
func (ws *InvSqrtWorkspace) invSqrtDiagSmall(q InvSqrtRational, dst []float64) {
	n := ws.n
	if ws.part == nil {
		ws.part = make([]float64, n)
		for c := range ws.lanes {
			for l := range ws.lanes[c] {
				ws.lanes[c][l] = make([]float64, n)
			}
		}
	}
	clear(dst)
	clear(ws.part)
	ns := len(q.Shifts)
	groups := (ns + oldLanes - 1) / oldLanes
	shifts := make([]float64, groups*oldLanes)
	weights := make([]float64, groups*oldLanes)
	copy(shifts, q.Shifts)
	copy(weights, q.Weights)
	for j := ns; j < len(shifts); j++ {
		shifts[j] = q.Shifts[ns-1]
	}
	// The two sums are independent (each its own output and lanes): on
	// two goroutines where GOMAXPROCS allows and n is large enough to pay.
	sum := func(c int, out []float64) {
		for gi := c; gi < groups; gi += 2 {
			j := gi * oldLanes
			addInvDiagLanes(ws.g2, ws.h2, shifts[j:j+oldLanes], weights[j:j+oldLanes], out, ws.lanes[c][:])
		}
	}
	work := 0.0 // below smallParallelOrder, one after the other
	if n >= smallParallelOrder {
		work = math.Inf(1)
	}
	par.Both(work, func() { sum(0, dst) }, func() { sum(1, ws.part) })
	for i, x := range ws.part {
		dst[i] += x
	}
}

// addInvDiagLanes adds sum_l weights[l] diag((T + shifts[l] I)^{-1}) to out
// (in the order of l for every entry) for four shifts, with the
// recurrences of [BidiagGram.ShiftedInverseDiag] on g2 = Diag^2 and
// h2 = Sub^2 carried side by side. p holds one work slice per shift.
func addInvDiagLanes(g2, h2, shifts, weights, out []float64, p [][]float64) {
	n := len(g2)
	if n == 0 {
		return
	}
	s0, s1, s2, s3 := shifts[0], shifts[1], shifts[2], shifts[3]
	w0, w1, w2, w3 := weights[0], weights[1], weights[2], weights[3]
	p0, p1, p2, p3 := p[0][:n], p[1][:n], p[2][:n], p[3][:n]
	p0[0], p1[0], p2[0], p3[0] = 0, 0, 0, 0
	t0, t1, t2, t3 := s0, s1, s2, s3
	g := g2[0]
	d0, d1, d2, d3 := g+t0, g+t1, g+t2, g+t3
	for i := 1; i < n; i++ {
		h, g := h2[i], g2[i]
		x0 := h * (t0 / d0)
		x1 := h * (t1 / d1)
		x2 := h * (t2 / d2)
		x3 := h * (t3 / d3)
		p0[i], p1[i], p2[i], p3[i] = x0, x1, x2, x3
		t0, t1, t2, t3 = s0+x0, s1+x1, s2+x2, s3+x3
		d0, d1, d2, d3 = g+t0, g+t1, g+t2, g+t3
	}
	g = g2[n-1]
	u0, u1, u2, u3 := g+s0, g+s1, g+s2, g+s3
	acc := out[n-1]
	acc += w0 * (1 / (p0[n-1] + u0))
	acc += w1 * (1 / (p1[n-1] + u1))
	acc += w2 * (1 / (p2[n-1] + u2))
	acc += w3 * (1 / (p3[n-1] + u3))
	out[n-1] = acc
	for i := n - 2; i >= 0; i-- {
		h, g := h2[i+1], g2[i]
		e0, e1, e2, e3 := h+u0, h+u1, h+u2, h+u3
		u0 = s0 + g*(u0/e0)
		u1 = s1 + g*(u1/e1)
		u2 = s2 + g*(u2/e2)
		u3 = s3 + g*(u3/e3)
		acc := out[i]
		acc += w0 * (1 / (p0[i] + u0))
		acc += w1 * (1 / (p1[i] + u1))
		acc += w2 * (1 / (p2[i] + u2))
		acc += w3 * (1 / (p3[i] + u3))
		out[i] = acc
	}
}
