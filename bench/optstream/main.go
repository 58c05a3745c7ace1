// Command optstream measures streaming the optimal factorization's noise
// through the mechanism API: the solve, the operator's state, the peak
// resident memory and the time per round, against drawing d Gaussians in
// the same run (the independent mechanism, which draws d Gaussians from the
// counter-based source and scales them, timed in alternation with the
// stream's rounds, and a bare ChaCha8 NormFloat64 loop). With -dense it measures the path the mechanism took before the
// optimal factorization kept its quasiseparable form: dense B and C, the
// dense noise operator M = C^{-1} (R x R) and the past noise rows kept.
//
//	go run ./bench/optstream -R 100000 -d 10000            # after: K state vectors
//	go run ./bench/optstream -R 20000 -d 10000 -dense -rounds 20   # before, from round R/2
//
// It prints one JSON object. Peak memory is the process's peak resident
// set (getrusage, Linux's VmHWM), read after the solve and at the end.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"time"

	"gonum.org/v1/gonum/floats"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/internal/docgen"
	"github.com/dpmf/dpmf/internal/procusage"
	"github.com/dpmf/dpmf/mechanism"
)

type result struct {
	R, D, Workers    int
	Path             string
	Operator         string
	States           int
	SolveSeconds     float64
	Gap              float64
	Loss, Sens       float64
	PeakAfterSolveMB float64
	StartRound       int
	TimedRounds      int
	// Seconds per round: the stream (mean and median), the independent
	// mechanism at the same d and workers, and a bare NormFloat64 loop.
	RoundMean, RoundMedian float64
	DrawMedian, BareMedian float64
	// RatioToDraw is RoundMedian / DrawMedian (medians: the machine may
	// be shared).
	RatioToDraw     float64
	StateMB, PeakMB float64
	TotalSeconds    float64
}

func main() {
	r := flag.Int("R", 100000, "rounds")
	d := flag.Int("d", 10000, "dimension of the noise vectors")
	dense := flag.Bool("dense", false, "stream through the dense operator (the path before), past rows kept")
	rounds := flag.Int("rounds", 0, "rounds to time (0: every round from -start)")
	start := flag.Int("start", -1, "first round timed (-1: 0, or R/2 with -dense)")
	workers := flag.Int("workers", runtime.GOMAXPROCS(0), "goroutines per round")
	flag.Parse()
	if err := run(*r, *d, *dense, *rounds, *start, *workers); err != nil {
		fmt.Fprintln(os.Stderr, "optstream:", err)
		os.Exit(1)
	}
}

func run(r, d int, dense bool, rounds, start, workers int) error {
	t0 := time.Now()
	w, err := factorize.Prefix(r)
	if err != nil {
		return err
	}
	f, err := factorize.OptimalStrategy{}.Factorize(context.Background(), w, factorize.SingleParticipation())
	if err != nil {
		return err
	}
	res := result{R: r, D: d, Workers: workers, Path: "operator", SolveSeconds: time.Since(t0).Seconds(),
		Gap: f.Gap, Loss: f.Metrics.Loss, Sens: f.Metrics.UnitSensitivity.Value, PeakAfterSolveMB: peakMB()}
	opts := []mechanism.Option{mechanism.WithSeed(1), mechanism.WithWorkers(workers)}
	if dense {
		res.Path = "dense (before)"
		opts = append(opts, mechanism.WithDense(), mechanism.WithMemory(mechanism.MemoryKeep))
	}
	if start < 0 {
		start = 0
		if dense {
			start = r / 2
		}
	}
	if rounds == 0 {
		rounds = r - start
	}
	res.StartRound, res.TimedRounds = start, rounds
	m, err := mechanism.New(f, d, 1, append(opts, mechanism.WithStartRound(start))...)
	if err != nil {
		return err
	}
	res.Operator = fmt.Sprint(m)
	if f.Operator != nil {
		res.States = f.Operator.Memory().States
	}
	dst := make([]float64, d)
	if dense && start > 0 {
		// The first round draws the kept rows of rounds before start.
		if err := m.Next(dst); err != nil {
			return err
		}
	}
	// Each timed round is paired with a round of the independent
	// mechanism (d Gaussians), so that both see the same load.
	draw, err := independent(d, workers)
	if err != nil {
		return err
	}
	times := make([]float64, 0, rounds)
	draws := make([]float64, 0, rounds)
	for i := 0; i < rounds && m.Round() < m.Rounds(); i++ {
		t := time.Now()
		if err := m.Next(dst); err != nil {
			return err
		}
		times = append(times, time.Since(t).Seconds())
		if draw.Round() == draw.Rounds() {
			if draw, err = independent(d, workers); err != nil {
				return err
			}
		}
		t = time.Now()
		if err := draw.Next(dst); err != nil {
			return err
		}
		draws = append(draws, time.Since(t).Seconds())
	}
	res.RoundMean, res.RoundMedian = floats.Sum(times)/float64(max(1, len(times))), docgen.Median(times)
	res.StateMB = float64(m.StateBytes()) / 1e6
	res.DrawMedian, res.BareMedian = docgen.Median(draws), bare(d, min(len(times), 200))
	res.RatioToDraw = res.RoundMedian / res.DrawMedian
	res.PeakMB = peakMB()
	res.TotalSeconds = time.Since(t0).Seconds()
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(res)
}

// independent returns an independent mechanism of 1000 rounds: d
// Gaussians from the counter-based source per round, scaled.
func independent(d, workers int) (mechanism.Mechanism, error) {
	w, err := factorize.Prefix(1000)
	if err != nil {
		return nil, err
	}
	id, err := factorize.IdentityStrategy{}.Factorize(context.Background(), w, factorize.SingleParticipation())
	if err != nil {
		return nil, err
	}
	return mechanism.New(id, d, 1, mechanism.WithSeed(2), mechanism.WithWorkers(workers))
}

// bare returns the median seconds of n loops of d NormFloat64 draws from
// one ChaCha8 stream.
func bare(d, n int) float64 {
	dst := make([]float64, d)
	rng := rand.New(rand.NewChaCha8([32]byte{1}))
	var b []float64
	for range max(n, 20) {
		t := time.Now()
		for i := range dst {
			dst[i] = rng.NormFloat64()
		}
		b = append(b, time.Since(t).Seconds())
	}
	return docgen.Median(b)
}

// peakMB returns the process's peak resident set in MB (getrusage's
// ru_maxrss, procusage.SelfRSS: Linux's VmHWM), or 0 where the platform
// does not report it.
func peakMB() float64 { return float64(procusage.SelfRSS()) / 1e6 }
