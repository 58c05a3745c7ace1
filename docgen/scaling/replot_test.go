package main

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/factorize"
)

func TestParseSecs(t *testing.T) {
	for s, want := range map[string]float64{"346 µs": 346e-6, "1.1 ms": 1.1e-3, "5.34 s": 5.34, "254 s": 254} {
		if got, err := parseSecs(s); err != nil || math.Abs(got-want) > 1e-12*want {
			t.Errorf("parseSecs(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "1.1", "1 min", "x ms"} {
		if _, err := parseSecs(s); err == nil {
			t.Errorf("parseSecs(%q): no error", s)
		}
	}
}

// A report written by markdown parses back to the series it was drawn from
// (times to the precision the report prints them), and the streaming table
// to its rows.
func TestParseReportRoundTrip(t *testing.T) {
	opt := factorize.StrategyOptimal
	ms := func(secs ...float64) []measurement {
		var out []measurement
		for i, s := range secs {
			out = append(out, measurement{R: 100 << i, Runs: 3, Seconds: s, Out: outcome{Loss: 10, Iters: 3, Gap: 1e-11}})
		}
		return out
	}
	res := &results{
		strategies: []string{"identity", opt},
		dense:      map[string][]measurement{"identity": ms(346e-6, 1.1e-3, 4.1e-3), opt: ms(2e-3, 6.13e-3, 0.042, 0.823)},
		lossOnly:   ms(3.8e-3, 4.1e-3),
		general:    ms(0.0292, 0.1985, 1.13, 5.7),
		plain:      ms(2.46, 25.22, 254),
	}
	md := res.markdown("scaling.svg") + "\n" + headStream + "\n\n| strategy | R | K (buffers) | loss | excess over the optimum | time (median) |\n|---|---:|---:|---:|---:|---:|\n" +
		"| semiseparable | 800 | 2 | 8680.698201 | 3.10e-01 | 10.6 ms |\n| blt | 10000 | 8 | 139079.0419 | 3.23e-02 | 6.19 s |\n\nK = 8 within 1%: **PASS**.\n"
	rep, err := parseReport(md)
	if err != nil {
		t.Fatal(err)
	}
	got := (&results{strategies: rep.strategies, dense: rep.dense, lossOnly: rep.lossOnly, general: rep.general, plain: rep.plain}).plotSeries()
	want := res.plotSeries()
	if len(got) != len(want) {
		t.Fatalf("%d series, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Name != want[i].Name || got[i].Dashes != want[i].Dashes || len(got[i].X) != len(want[i].X) {
			t.Errorf("series %d: %s (%d points), want %s (%d points)", i, got[i].Name, len(got[i].X), want[i].Name, len(want[i].X))
			continue
		}
		for k := range want[i].X {
			if got[i].X[k] != want[i].X[k] || math.Abs(got[i].Y[k]-want[i].Y[k]) > 0.01*want[i].Y[k] {
				t.Errorf("series %s, point %d: (%v, %v), want (%v, %v)", want[i].Name, k, got[i].X[k], got[i].Y[k], want[i].X[k], want[i].Y[k])
			}
		}
	}
	wantRows := []semisepRow{{Strategy: "semiseparable", R: 800, K: 2, Loss: 8680.698201, Excess: 0.31}, {Strategy: "blt", R: 10000, K: 8, Loss: 139079.0419, Excess: 0.0323}}
	if len(rep.stream) != len(wantRows) {
		t.Fatalf("streaming rows %+v, want %+v", rep.stream, wantRows)
	}
	for i, w := range wantRows {
		if g := rep.stream[i]; g != w {
			t.Errorf("streaming row %d: %+v, want %+v", i, g, w)
		}
	}
	if _, err := parseReport("# nothing here\n"); err == nil {
		t.Error("a report without tables: no error")
	}
	if _, err := parseReport(headDense + "\n\n| identity | 100 | 3 parsecs |\n"); err == nil {
		t.Error("a bad time: no error")
	}
}

// -replot redraws both figures from the report's tables and leaves the
// report as it was.
func TestReplot(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "scaling.md")
	md := headDense + "\n\n| strategy | R | time |\n|---|---:|---:|\n| tree | 100 | 313 µs |\n| tree | 200 | 1.0 ms |\n\n" +
		headStream + "\n\n| strategy | R | K (buffers) | loss | excess over the optimum | time (median) |\n|---|---:|---:|---:|---:|---:|\n" +
		"| semiseparable | 800 | 2 | 8680.698201 | 3.10e-01 | 10.6 ms |\n| semiseparable | 800 | 4 | 6670.028727 | 6.32e-03 | 10.2 ms |\n"
	if err := os.WriteFile(out, []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := parseFlags([]string{"-replot", "-out", out}, io.Discard)
	if err != nil || !cfg.replot {
		t.Fatalf("parseFlags: %+v, %v", cfg, err)
	}
	if err := run(t.Context(), cfg, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"scaling.svg", "scaling-streaming.svg", "scaling-streaming.png"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, ".svg") {
			dec := xml.NewDecoder(bytes.NewReader(b))
			for {
				if _, err := dec.Token(); err == io.EOF {
					break
				} else if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
			}
		}
	}
	if b, _ := os.ReadFile(out); string(b) != md {
		t.Error("-replot changed the report")
	}
}
