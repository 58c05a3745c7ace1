package linalg

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"gonum.org/v1/gonum/blas"
	lapackgonum "gonum.org/v1/gonum/lapack/gonum"
)

// TestTridiagonalizer checks Q T Q^T = A and Q^T Q = I to rounding, for
// orders around the block and crossover sizes and every worker count, and
// that T agrees with gonum's DSYTRD on the same matrix (the same
// reflectors in exact arithmetic; the two round differently, and T's
// entries are not forward stable, hence the looser tolerance).
func TestTridiagonalizer(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 3, 31, 33, 129, 161, 300} {
		for _, workers := range []int{1, 2, 3} {
			a := make([]float64, n*n)
			for i := 0; i < n; i++ {
				for j := i; j < n; j++ {
					x := rng.NormFloat64()
					a[i*n+j], a[j*n+i] = x, x
				}
			}
			orig := append([]float64(nil), a...)
			d, e := make([]float64, n), make([]float64, max(n-1, 1))
			td := NewTridiagonalizer(n, workers)
			if err := td.Reduce(context.Background(), a, d, e); err != nil {
				t.Fatal(err)
			}

			// gonum on the same matrix.
			g := append([]float64(nil), orig...)
			gd, ge, gtau := make([]float64, n), make([]float64, max(n-1, 1)), make([]float64, max(n-1, 1))
			var impl lapackgonum.Implementation
			q := []float64{0}
			impl.Dsytrd(blas.Lower, n, g, max(n, 1), gd, ge, gtau, q, -1)
			work := make([]float64, max(int(q[0]), 1))
			impl.Dsytrd(blas.Lower, n, g, max(n, 1), gd, ge, gtau, work, len(work))
			scale := math.Sqrt(float64(n)) + 1
			for i := 0; i < n; i++ {
				if math.Abs(d[i]-gd[i]) > 1e-9*scale {
					t.Fatalf("n=%d workers=%d: d[%d] = %v, gonum %v", n, workers, i, d[i], gd[i])
				}
				if i+1 < n && math.Abs(e[i]-ge[i]) > 1e-9*scale {
					t.Fatalf("n=%d workers=%d: e[%d] = %v, gonum %v", n, workers, i, e[i], ge[i])
				}
			}
			// Q T Q^T = A and Q^T Q = I.
			for i := 0; i < n; i++ {
				for j := 0; j < n; j++ {
					s, o := 0.0, 0.0
					for k := 0; k < n; k++ {
						tk := d[k] * a[j*n+k]
						if k > 0 {
							tk += e[k-1] * a[j*n+k-1]
						}
						if k+1 < n {
							tk += e[k] * a[j*n+k+1]
						}
						s += a[i*n+k] * tk
						o += a[k*n+i] * a[k*n+j]
					}
					if math.Abs(s-orig[i*n+j]) > 1e-12*scale {
						t.Fatalf("n=%d workers=%d: (Q T Q^T)[%d][%d] = %v, A = %v", n, workers, i, j, s, orig[i*n+j])
					}
					if i == j {
						o--
					}
					if math.Abs(o) > 1e-13*scale {
						t.Fatalf("n=%d workers=%d: (Q^T Q - I)[%d][%d] = %v", n, workers, i, j, o)
					}
				}
			}
		}
	}
}

// TestTridiagonalizerCancel checks that a cancelled context stops the
// reduction with its error.
func TestTridiagonalizerCancel(t *testing.T) {
	n := 300
	a := make([]float64, n*n)
	for i := 0; i < n; i++ {
		a[i*n+i] = 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := NewTridiagonalizer(n, 2).Reduce(ctx, a, make([]float64, n), make([]float64, n))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Reduce with a cancelled context: %v, want context.Canceled", err)
	}
}

// orgtr, which moves the reflectors from a's rows to the columns DORGQR
// reads in one pass, applies each block reflector by two halves of
// columns and forms the next block's triangular factor beside this
// block's DORG2R (on the caller and the helper with GOMAXPROCS 2), forms
// the same Q, bit for bit, as gonum's DORGTR from the same reflectors.
func TestOrgtrSameBitsAsDorgtr(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{2, 33, 129, 300, 421} {
		for _, procs := range []int{1, 2} {
			a := make([]float64, n*n)
			for i := 0; i < n; i++ {
				for j := i; j < n; j++ {
					x := rng.NormFloat64()
					a[i*n+j], a[j*n+i] = x, x
				}
			}
			td := NewTridiagonalizer(n, 2)
			d, e := make([]float64, n), make([]float64, max(n-1, 1))
			if err := td.reduce(context.Background(), a, d, e); err != nil {
				t.Fatal(err)
			}
			// DORGTR's input: the reflectors (in a's rows) in the columns
			// below the subdiagonal.
			want := append([]float64(nil), a...)
			for i := 0; i+2 < n; i++ {
				for r := i + 2; r < n; r++ {
					want[r*n+i] = want[i*n+r]
				}
			}
			work := make([]float64, len(td.work))
			td.impl.Dorgtr(blas.Lower, n, want, n, append([]float64(nil), td.tau...), work, len(work))
			old := runtime.GOMAXPROCS(procs)
			if procs >= 2 {
				td.pair = startPair()
			}
			if err := td.orgtr(context.Background(), a); err != nil {
				t.Fatal(err)
			}
			if td.pair != nil {
				td.pair.stop()
				td.pair = nil
			}
			runtime.GOMAXPROCS(old)
			if !slices.Equal(math64bits(a), math64bits(want)) {
				t.Errorf("n = %d, GOMAXPROCS = %d: Q differs from DORGTR's", n, procs)
			}
		}
	}
}

// The reduction computes the same sums in the same order for any number
// of workers (the helper's halves of rows and indices are fixed by the
// order, the trailing update's Dgemm adds over k in order serially or by
// tiles), so 1, 2 and 3 workers give the same bits, at orders above the
// splits' thresholds (symvSplit, splitWork, two halves of 64-row pieces
// in the update) and at GOMAXPROCS 2, where the helper runs.
func TestTridiagonalizerSameBitsAnyWorkers(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	for _, n := range []int{300, 700} {
		orig := randomSym(n)
		var ref []uint64
		for _, workers := range []int{1, 2, 3} {
			a := append([]float64(nil), orig...)
			d, e := make([]float64, n), make([]float64, n-1)
			if err := NewTridiagonalizer(n, workers).Reduce(context.Background(), a, d, e); err != nil {
				t.Fatal(err)
			}
			bits := math64bits(slices.Concat(a, d, e))
			if workers == 1 {
				ref = bits
				continue
			}
			if i := slices.Compare(bits, ref); i != 0 {
				for k := range bits {
					if bits[k] != ref[k] {
						t.Fatalf("n = %d: %d workers differ from 1 at entry %d of [Q d e] (%v, %v)", n, workers, k,
							math.Float64frombits(bits[k]), math.Float64frombits(ref[k]))
					}
				}
			}
		}
	}
}

// countCtx is a context whose Err reports cancellation (or panics) from
// its k-th call on, so that a Reduce stops at a chosen panel or block.
type countCtx struct {
	context.Context
	calls, k int
	panics   bool
}

func (c *countCtx) Err() error {
	c.calls++
	if c.calls < c.k {
		return nil
	}
	if c.panics {
		panic("countCtx: stop")
	}
	return context.Canceled
}

// settleGoroutines waits up to 2 s for the number of goroutines to fall
// to want, and returns the last count.
func settleGoroutines(want int) int {
	got := runtime.NumGoroutine()
	for i := 0; i < 200 && got > want; i++ {
		time.Sleep(10 * time.Millisecond)
		got = runtime.NumGoroutine()
	}
	return got
}

// A Reduce cancelled (or panicking) in the reduction's panels or in Q's
// formation returns (or panics) with its helper goroutine stopped: the
// number of goroutines returns to what it was before. The Tridiagonalizer
// is then used again and gives the bits of a fresh one.
func TestTridiagonalizerCancelStopsHelper(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	const n = 700
	orig := randomSym(n)
	want := append([]float64(nil), orig...)
	d, e := make([]float64, n), make([]float64, n-1)
	if err := NewTridiagonalizer(n, 2).Reduce(context.Background(), want, d, e); err != nil {
		t.Fatal(err)
	}
	td := NewTridiagonalizer(n, 2)
	// The reduction checks ctx once per panel of 32 columns (18 at
	// n = 700), then Q's formation once per block of 32 columns.
	for _, k := range []int{1, 5, 18, 20, 30} {
		for _, panics := range []bool{false, true} {
			before := runtime.NumGoroutine()
			a := append([]float64(nil), orig...)
			ctx := &countCtx{Context: context.Background(), k: k, panics: panics}
			var err error
			var recovered any
			func() {
				defer func() { recovered = recover() }()
				err = td.Reduce(ctx, a, d, e)
			}()
			if panics && recovered == nil || !panics && !errors.Is(err, context.Canceled) {
				t.Fatalf("stopped at call %d (panics %v) of %d: error %v, panic %v", k, panics, ctx.calls, err, recovered)
			}
			if got := settleGoroutines(before); got > before {
				t.Fatalf("stopped at call %d (panics %v): %d goroutines, %d before", k, panics, got, before)
			}
		}
	}
	a := append([]float64(nil), orig...)
	if err := td.Reduce(context.Background(), a, d, e); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(math64bits(a), math64bits(want)) {
		t.Fatal("Q after cancelled runs differs from a fresh Tridiagonalizer's")
	}
}

func math64bits(x []float64) []uint64 {
	out := make([]uint64, len(x))
	for i, v := range x {
		out[i] = math.Float64bits(v)
	}
	return out
}
