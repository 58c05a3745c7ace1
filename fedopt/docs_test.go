package fedopt_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/plan"
)

// TestDocFig4NoiseStd keeps the noise std column of docs/fedopt.md's Fig. 4
// table (n = 10, B_g = 5, R = 800, optimal factorization for correlated
// noise) and its ||B||_F^2 = 6628 equal to what the calibration gives, to
// the digits the table prints.
func TestDocFig4NoiseStd(t *testing.T) {
	b, err := os.ReadFile("../docs/fedopt.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	_, rest, ok := strings.Cut(doc, "| Fig. 4 (tau = 10) | noise std V | loss error |\n")
	if !ok {
		t.Fatal("docs/fedopt.md has no Fig. 4 table")
	}
	ctx := context.Background()
	rows := 0
	for _, line := range strings.Split(rest, "\n") {
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(line, "| "), "|")
		label, std := strings.TrimSpace(cells[0]), strings.TrimSpace(cells[1])
		if strings.HasPrefix(label, "---") || label == "nonprivate" {
			continue
		}
		// "correlated, (5, 1e-3), exact"
		var algo, cal string
		var eps, delta float64
		if _, err := fmt.Sscanf(strings.NewReplacer(",", " ", "(", "", ")", "").Replace(label), "%s %g %g %s", &algo, &eps, &delta, &cal); err != nil {
			t.Fatalf("row %q: %v", label, err)
		}
		a, err := fedopt.ParseAlgorithm(algo)
		if err != nil {
			t.Fatal(err)
		}
		c, err := plan.ParseCalibration(cal)
		if err != nil {
			t.Fatal(err)
		}
		pl := &plan.Plan{Algorithm: a.String(), Rounds: 800, Learners: 10, Clip: 5, Target: &plan.Target{Eps: eps, Delta: delta, Calibration: c}}
		f, err := pl.Build(ctx)
		if err != nil {
			t.Fatalf("row %q: %v", label, err)
		}
		pr := pl.Privacy
		want, err := strconv.ParseFloat(std, 64)
		if err != nil {
			t.Fatal(err)
		}
		decimals := 0
		if _, frac, ok := strings.Cut(std, "."); ok {
			decimals = len(frac)
		}
		if math.Abs(pr.NoiseStd-want) > 0.5*math.Pow(10, -float64(decimals))+1e-12 {
			t.Errorf("row %q: the doc says noise std %s, the calibration gives %.4g", label, std, pr.NoiseStd)
		}
		if a == fedopt.Correlated && c == plan.Exact && eps == 5 {
			if s := fmt.Sprintf("||B||_F^2 = %.0f", f.Metrics.Loss); !strings.Contains(doc, s) {
				t.Errorf("docs/fedopt.md does not say %s", s)
			}
		}
		rows++
	}
	if rows != 6 {
		t.Errorf("checked %d rows, want the table's 6 private ones", rows)
	}
}
