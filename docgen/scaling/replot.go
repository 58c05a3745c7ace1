package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Headings of the report's tables that the figures are drawn from.
const (
	headDense    = "### Dense output: B and C formed"
	headLossOnly = "### Optimal loss only: structured path"
	headGeneral  = "### Optimal loss only: general (dense) path"
	headPlain    = "### Plain dense fixed point (reference)"
	headStream   = "### Streaming the optimum with K state vectors"
)

// parsedReport is what the figures need of a report: the times of the
// section "Time against R" (the results' strategies, dense, lossOnly,
// general and plain, with R and Seconds) and the rows of the streaming
// table.
type parsedReport struct {
	results
	stream []semisepRow
}

// parseSecs reads a time as secs writes it: "346 µs", "1.1 ms", "5.34 s".
func parseSecs(s string) (float64, error) {
	num, unit, ok := strings.Cut(strings.TrimSpace(s), " ")
	v, err := strconv.ParseFloat(num, 64)
	if !ok || err != nil {
		return 0, fmt.Errorf("time %q: want a number and a unit", s)
	}
	switch unit {
	case "µs":
		return v * 1e-6, nil
	case "ms":
		return v * 1e-3, nil
	case "s":
		return v, nil
	}
	return 0, fmt.Errorf("time %q: unknown unit %q", s, unit)
}

// parseReport reads the tables that the figures are drawn from out of a
// report that run wrote.
func parseReport(md string) (*parsedReport, error) {
	rep := &parsedReport{results: results{dense: map[string][]measurement{}}}
	// The solver tables, without a strategy column, by heading.
	solver := map[string]*[]measurement{headLossOnly: &rep.lossOnly, headGeneral: &rep.general, headPlain: &rep.plain}
	section := ""
	for n, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "#") {
			section = ""
			for _, h := range []string{headDense, headLossOnly, headGeneral, headPlain, headStream} {
				if strings.HasPrefix(line, h) {
					section = h
				}
			}
			continue
		}
		if section == "" || !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if strings.HasPrefix(cells[0], "---") || strings.HasPrefix(cells[0], ":") || cells[0] == "strategy" || cells[0] == "R" {
			continue // header
		}
		bad := func(err error) error { return fmt.Errorf("report line %d: %v", n+1, err) }
		if section == headStream {
			if len(cells) < 5 {
				return nil, bad(fmt.Errorf("want strategy, R, K, loss and excess"))
			}
			r, err1 := strconv.Atoi(cells[1])
			k, err2 := strconv.Atoi(cells[2])
			loss, err3 := strconv.ParseFloat(cells[3], 64)
			excess, err4 := strconv.ParseFloat(cells[4], 64)
			if err := errors.Join(err1, err2, err3, err4); err != nil {
				return nil, bad(err)
			}
			rep.stream = append(rep.stream, semisepRow{Strategy: cells[0], R: r, K: k, Loss: loss, Excess: excess})
			continue
		}
		// R and time, after the strategy in the dense table.
		rc := 0
		if section == headDense {
			rc = 1
		}
		if len(cells) < rc+2 {
			return nil, bad(fmt.Errorf("want %d cells with R and time, got %d", rc+2, len(cells)))
		}
		r, err1 := strconv.Atoi(cells[rc])
		t, err2 := parseSecs(cells[rc+1])
		if err := errors.Join(err1, err2); err != nil {
			return nil, bad(err)
		}
		m := measurement{R: r, Seconds: t}
		if section != headDense {
			*solver[section] = append(*solver[section], m)
			continue
		}
		if _, ok := rep.dense[cells[0]]; !ok {
			rep.strategies = append(rep.strategies, cells[0])
		}
		rep.dense[cells[0]] = append(rep.dense[cells[0]], m)
	}
	if len(rep.strategies) == 0 {
		return nil, fmt.Errorf("no table %q", headDense)
	}
	return rep, nil
}

// replot redraws the figures of the report at cfg.out from its tables,
// measuring nothing and leaving the report as it is: cfg.svg (time against
// R) and, if the report has the streaming table, <out>-streaming.png and
// .svg.
func replot(cfg config, log io.Writer) error {
	b, err := os.ReadFile(cfg.out)
	if err != nil {
		return err
	}
	rep, err := parseReport(string(b))
	if err != nil {
		return fmt.Errorf("%s: %w", cfg.out, err)
	}
	if err := rep.writeTimePlot(cfg.svg); err != nil {
		return err
	}
	logf(log, "redrew %s from %s", cfg.svg, cfg.out)
	if len(rep.stream) > 0 {
		base := strings.TrimSuffix(cfg.out, ".md") + "-streaming"
		if err := (&furtherResult{Rows: rep.stream}).plot(base); err != nil {
			return err
		}
		logf(log, "redrew %s.png and %s.svg from %s", base, base, cfg.out)
	}
	return nil
}
