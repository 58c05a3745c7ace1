package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/cpu"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/internal/docgen"
	"github.com/dpmf/dpmf/internal/procusage"
)

// The participation section of the report: the certified fixed-epoch and
// banded (min-separation) solvers at the sizes of the scale targets,
// each with a reference measured in the same run (the single-participation
// optimal loss at the same R, loss only), so that the ratio, not the wall
// time of a shared machine, carries the comparison.

// Markers around the section, so that -participation-only can replace it
// in an existing report.
const (
	partBegin = "<!-- participation: begin -->"
	partEnd   = "<!-- participation: end -->"
)

const (
	epochsK   = 8
	epochsTol = 1e-8
	bandedB   = 64
	partLimit = 60.0 // seconds, for the two targets
	// partCap is how long a participation run may take before it is
	// stopped and reported with the gap it reached.
	partCap = 300 * time.Second
)

// partRun is one measured participation computation and its reference.
type partRun struct {
	Name   string
	R      int
	Target bool // one of the targets (limit partLimit)
	// M and Ref are the run and its reference; M.CPU is set (the CPU time
	// of the stopped run) when the run was stopped.
	M, Ref measurement
	// Stopped is set when the run reached partCap before certifying; the
	// gap and iterations are then those reached.
	Stopped       bool
	StoppedGap    float64
	StoppedIter   int
	StoppedSecs   float64
	Err           string
	Tol           float64
	Participation string
}

// pass reports whether a target run met its limit.
func (p partRun) pass() bool {
	return p.Err == "" && !p.Stopped && p.M.Runs > 0 && p.M.Seconds <= partLimit && p.M.Out.Gap <= p.Tol
}

// runParticipation measures the participation section.
func runParticipation(ctx context.Context, reps int, log io.Writer) []partRun {
	var out []partRun
	for _, r := range []int{256, 1024, 2048} {
		out = append(out, measurePart(ctx, reps, log, partRun{
			Name: fmt.Sprintf("fixed epochs, k = %d, optimal (OptimalEpochs), loss only", epochsK), R: r, Target: r == 2048,
			Tol: epochsTol, Participation: factorize.FixedEpochs(epochsK).String(),
		}, func(ctx context.Context, w *factorize.Workload, progress func(factorize.Progress)) (*factorize.Factorization, error) {
			return factorize.OptimalEpochs(ctx, w, epochsK, factorize.Options{LossOnly: true, Tol: epochsTol, Progress: progress})
		}))
	}
	for _, r := range []int{1000, 2000, 10000} {
		out = append(out, measurePart(ctx, reps, log, partRun{
			Name: fmt.Sprintf("min-separation, b = %d, optimal banded (OptimalBanded), loss only", bandedB), R: r, Target: r == 10000,
			Tol: factorize.DefaultBandedTol, Participation: factorize.MinSeparation(bandedB, 0).String(),
		}, func(ctx context.Context, w *factorize.Workload, progress func(factorize.Progress)) (*factorize.Factorization, error) {
			return factorize.OptimalBanded(ctx, w, bandedB, 0, factorize.Options{LossOnly: true, Progress: progress})
		}))
	}
	return out
}

// measurePart measures one participation run (stopped at partCap) and its
// reference.
func measurePart(ctx context.Context, reps int, log io.Writer, p partRun, solve func(context.Context, *factorize.Workload, func(factorize.Progress)) (*factorize.Factorization, error)) partRun {
	w, err := factorize.Prefix(p.R)
	if err != nil {
		p.Err = oneLine(err)
		return p
	}
	logf(log, "participation: %s, R = %d", p.Name, p.R)
	var last factorize.Progress
	start := time.Now()
	p.M, err = measure(p.R, reps, func() (outcome, error) {
		cctx, cancel := context.WithTimeout(ctx, partCap)
		defer cancel()
		return outcomeOf(solve(cctx, w, func(pr factorize.Progress) { last = pr }))
	})
	if errors.Is(err, context.DeadlineExceeded) {
		p.Stopped, p.StoppedGap, p.StoppedIter, p.StoppedSecs = true, last.Gap, last.Iter, time.Since(start).Seconds()
	} else if err != nil {
		p.Err = oneLine(err)
		return p
	}
	p.M.Tol = p.Tol
	logf(log, "participation: reference, R = %d", p.R)
	p.Ref, err = measure(p.R, reps, optimalRun(ctx, w, factorize.Options{LossOnly: true, Tol: p.Tol}))
	if err != nil {
		p.Err = "reference: " + oneLine(err)
	}
	p.Ref.Tol = p.Tol
	return p
}

// participationMarkdown renders the section, markers included.
func participationMarkdown(runs []partRun, cmdLine string, when time.Time) string {
	var d doc
	d.line(partBegin)
	d.para("## Participation: fixed epochs and min-separation")
	d.para("Measured by `%s` on %s UTC (this section alone is rewritten by `go run ./docgen/scaling -out docs/scaling.md -participation-only`).", cmdLine, when.UTC().Format("2006-01-02 15:04"))
	d.para("The certified solvers for multiple participations (docs/solver.md): `factorize.OptimalEpochs`, the multi-epoch optimum of Choquette-Choo et al. (2023) with k = %d epochs (period R / %d), and `factorize.OptimalBanded`, the optimal factor with b = %d bands and unit columns for b-min-separation (DP-BandMF of Choquette-Choo, Dvijotham, Pillutla et al. 2023). McKenna (2024, \"Scaling up the banded matrix factorization mechanism for differentially private ML\", arXiv:2405.15913) writes that scalability limitations prevent DP-BandMF from handling training runs of more than 10^4 iterations (or models of more than 10^7 parameters), and presents techniques that scale it past both; the banded target below, R = 10,000, sits at that scale. Each row also times, in the same run, the single-participation optimum (`factorize.Optimal`, loss only) at the same R and the same gap target as a reference for the machine's speed at that moment; the ratio is participation time / reference time. Wall time decides the result; CPU time (user + system of this process, getrusage) is given beside it because the machine is shared: with a load far above its 2 CPUs, a single-threaded solver gets a fraction of a CPU, and the wall time overstates what it costs on a quiet machine. A run that is not certified within %s is stopped and reported with the gap it reached.", epochsK, epochsK, bandedB, partCap)
	d.table("| computation | participation | R | target gap | limit | wall time (median) | CPU time (median) | runs | iterations | evaluations | certified gap | loss (upper bound) | reference: wall, CPU | ratio (wall, CPU) | result |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, r := range runs {
		limit, result := "", ""
		if r.Target {
			limit, result = fmt.Sprintf("%.0f s", partLimit), passFail(r.pass())
		}
		switch {
		case r.Err != "":
			d.line("| %s | %s | %d | %.0e | %s | error: %s | | | | | | | | | %s |", r.Name, r.Participation, r.R, r.Tol, limit, r.Err, result)
		case r.Stopped:
			d.line("| %s | %s | %d | %.0e | %s | stopped at %s | %s | 1 | %d | | %.1e (not certified) | | %s, %s | | %s |", r.Name, r.Participation, r.R, r.Tol, limit, secs(r.StoppedSecs), cpuCell(r.M.CPU), r.StoppedIter, r.StoppedGap, secs(r.Ref.Seconds), cpuCell(r.Ref.CPU), result)
		default:
			cpuRatio := unknownUsage
			if procusage.Known {
				cpuRatio = fmt.Sprintf("%.1f", r.M.CPU/r.Ref.CPU)
			}
			d.line("| %s | %s | %d | %.0e | %s | %s | %s | %d | %d | %d | %.1e | %.10g | %s, %s | %.1f, %s | %s |", r.Name, r.Participation, r.R, r.Tol, limit, secs(r.M.Seconds), cpuCell(r.M.CPU), r.M.Runs, r.M.Out.Iters, r.M.Out.Roots, r.M.Out.Gap, r.M.Out.Loss, secs(r.Ref.Seconds), cpuCell(r.Ref.CPU), r.M.Seconds/r.Ref.Seconds, cpuRatio, result)
		}
	}
	d.line("")
	d.line("An iteration of `OptimalEpochs` evaluates the class blocks of X(Lambda) through about 40 to 60 band selected inversions of order R with 2k off-diagonals (O(R k^2) each); one of `OptimalBanded` is about one evaluation, a band LDL^T and selected inversion with their shift derivative, of order R with b off-diagonals (O(R b^2)), plus O(R b^2) for the gradient in C's entries in its first phase. Its gap is the smaller of a first-order (Lagrangian) and a second-order bound, which reaches 1e-8 where the first-order one is near 1e-6 (docs/solver.md). The inner products of the band kernels and of the L-BFGS recursion run in AVX2 assembly with fused multiply-adds where the CPU has them (`linalg.Dot`, and the multi-dot and multi-axpy kernels of the compact L-BFGS direction over its float32 pairs, `optim.Memory32`; Go elsewhere); this machine: %s. The same measurements as Go benchmarks: `go test -run '^$' -bench 'OptimalEpochs|OptimalBanded' ./bench/`.", cpuVector())
	d.line(partEnd)
	return d.String()
}

// cpuVector says whether the band kernels run in assembly here.
func cpuVector() string {
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		return "AVX2 and FMA, assembly"
	}
	return "no AVX2 and FMA, Go"
}

// replaceSection rewrites the part of the report at path between the
// markers begin and end with section (markers included), or appends it when
// the report has none; flag names the option in errors.
func replaceSection(path, section, begin, end, flag string) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("%s: %v (generate the full report first)", flag, err)
	}
	s := string(old)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	switch {
	case i < 0 && j < 0:
		s = strings.TrimRight(s, "\n") + "\n\n" + section
	case i >= 0 && j > i:
		s = s[:i] + section + strings.TrimPrefix(s[j+len(end):], "\n")
	default:
		return fmt.Errorf("%s: %s has unmatched markers %s, %s", flag, path, begin, end)
	}
	return docgen.WriteFile(path, []byte(s))
}
