package mechanism

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/dpmf/dpmf/factorize"
)

// guardFile holds noise matrices recorded before the streaming operators
// moved into package factorize (commit "mechanism: record the noise guard"),
// one per case of guardCases: a guard that the move did not change the
// noise. DPMF_WRITE_GUARD=1 records the cases it lacks (a new strategy's)
// and keeps the recorded ones; DPMF_WRITE_GUARD=all rewrites it (only ever
// with the old code).
// Exceptions: BLT's entries (prefix33/blt, minsep24/blt) are skipped: the
// fit of issue #20 item 4 changes BLT's parameters on purpose, and the
// records are never rewritten from the new code (factorize's tests check
// the new fit against a dense product instead). minsep24/banded is held to
// 2e-4: its sharper certificate (issue #20 item 3) stops the solver
// earlier.
const guardFile = "testdata/noise_guard.json"

type guardCase struct {
	name     string
	w        func() (*factorize.Workload, error)
	strategy factorize.Strategy
	p        factorize.Participation
	dim      int
	// tol is 0 where the noise must be the same bits, else the largest
	// relative difference allowed (where the arithmetic changed).
	tol float64
}

func guardCases() []guardCase {
	epochsTol := 0.0
	if !asmKernels {
		// Go's math.Exp is assembly on amd64 and differs in the last bit
		// from the pure-Go Exp elsewhere (386); with gonum's pure-Go BLAS
		// the fit differs by 3.5e-14 on 386 (1e-15 on amd64 -tags noasm).
		epochsTol = 1e-12
	}
	prefix := func(r int) func() (*factorize.Workload, error) {
		return func() (*factorize.Workload, error) { return factorize.Prefix(r) }
	}
	var cs []guardCase
	for _, name := range factorize.Strategies() {
		s, err := factorize.ParseStrategy(name)
		if err != nil {
			panic(err)
		}
		tol := 0.0
		switch name {
		case factorize.StrategyOptimal:
			tol = 1e-9 // quasiseparable instead of dense C
		case factorize.StrategySemisep:
			tol = 1e-9 // fused multiply-adds in the forward substitution (AVX2)
		case factorize.StrategyBandInv:
			tol = 1e-9 // C^{-1}'s coefficients as solved, not recovered from C
		}
		if !asmKernels && (name == factorize.StrategyBandedToeplitz || name == factorize.StrategyBandInv) {
			// Gonum's pure-Go BLAS sums in another order than its amd64
			// assembly the guard was recorded with, and these iterative
			// fits stop at other last bits: measured 8.4e-9 relative on
			// 386 and on amd64 with -tags noasm alike.
			tol = 1e-7
		}
		cs = append(cs, guardCase{"prefix33/" + name, prefix(33), s, factorize.SingleParticipation(), 5, tol})
	}
	for _, s := range []factorize.Strategy{factorize.BandedStrategy{}, factorize.BSRStrategy{}, factorize.BLTStrategy{Buffers: 2},
		factorize.BISRStrategy{}, factorize.BandInvStrategy{Bands: 4}, factorize.BandedToeplitzStrategy{}} {
		tol := 0.0
		switch {
		case s.Name() == factorize.StrategyBandInv:
			tol = 1e-9
		case s.Name() == factorize.StrategyBanded:
			// The certified banded solver stops at another iterate since
			// its certificate was sharpened (issue #20, item 3; both of
			// its phases end earlier): a gap of 1e-8 in the loss, second
			// order in C, holds each C only to about its square root, and
			// the two differ by up to twice that. Measured: 6.2e-5.
			tol = 2e-4
		}
		cs = append(cs, guardCase{"minsep24/" + s.Name(), prefix(24), s, factorize.MinSeparation(6, 2), 3, tol})
	}
	cs = append(cs,
		guardCase{"momentum20/optimal", func() (*factorize.Workload, error) { return factorize.Momentum(20, 0.9) }, factorize.OptimalStrategy{}, factorize.SingleParticipation(), 4, 1e-9},
		guardCase{"epochs24/optimal", prefix(24), factorize.OptimalStrategy{}, factorize.FixedEpochs(3), 4, epochsTol},
	)
	return cs
}

// TestNoiseGuard compares every strategy's noise, seed 7, with the values
// recorded before the move.
func TestNoiseGuard(t *testing.T) {
	ctx := context.Background()
	got := map[string][][]float64{}
	for _, c := range guardCases() {
		w, err := c.w()
		if err != nil {
			t.Fatal(err)
		}
		f, err := c.strategy.Factorize(ctx, w, c.p)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		m, err := New(f, c.dim, 1.5, WithSeed(7))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		z, err := NoiseMatrix(m)
		if err != nil {
			t.Fatal(err)
		}
		r, _ := z.Dims()
		rows := make([][]float64, r)
		for i := range rows {
			rows[i] = z.RawRowView(i)
		}
		got[c.name] = rows
	}
	data, err := os.ReadFile(filepath.FromSlash(guardFile))
	if err != nil {
		t.Fatal(err)
	}
	var want map[string][][]float64
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	if mode := os.Getenv("DPMF_WRITE_GUARD"); mode == "1" || mode == "all" {
		// 1 records the cases the file lacks (a new strategy) and keeps
		// every recorded one; all re-records everything (only ever with
		// the code from before a move).
		added := 0
		for name, rows := range got {
			if _, ok := want[name]; !ok || mode == "all" {
				want[name] = rows
				added++
			}
		}
		data, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.FromSlash(guardFile), data, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d cases recorded (DPMF_WRITE_GUARD=%s)", guardFile, added, mode)
		return
	}
	for _, c := range guardCases() {
		if c.strategy.Name() == factorize.StrategyBLT {
			continue // refitted on purpose (issue #20, item 4)
		}
		g, w := got[c.name], want[c.name]
		if len(g) != len(w) || len(w) == 0 {
			t.Errorf("%s: %d rounds, recorded %d", c.name, len(g), len(w))
			continue
		}
		worst, scale := 0.0, 0.0
		bits := true
		for i := range w {
			for j := range w[i] {
				worst = math.Max(worst, math.Abs(g[i][j]-w[i][j]))
				scale = math.Max(scale, math.Abs(w[i][j]))
				bits = bits && math.Float64bits(g[i][j]) == math.Float64bits(w[i][j])
			}
		}
		if c.tol == 0 && !bits {
			t.Errorf("%s: noise differs from the recorded bits (max difference %.3g)", c.name, worst)
		}
		if testing.Verbose() && c.tol > 0 {
			t.Logf("%s: max relative difference %.3g from the recorded noise", c.name, worst/scale)
		}
		if c.tol > 0 && worst > c.tol*scale {
			t.Errorf("%s: max relative difference %.3g from the recorded noise, want <= %g", c.name, worst/scale, c.tol)
		}
	}
}
