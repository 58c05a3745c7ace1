package mechanism_test

import (
	"context"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/mechanism"
)

// docRow matches the strategy cell of docs/mechanisms.md's cost table:
// "BLT, k = 2 (`blt`, Buffers 2)", "banded, b = 16 (`banded`, default)",
// "dense, keep (`optimal`)".
var docRow = regexp.MustCompile("\\(`([a-z-]+)`(?:, (Buffers|Bands) ([0-9]+)|, default| with `WithDense`)?\\)")

// TestDocCostTable recomputes the deterministic columns of
// docs/mechanisms.md's table at R = 800 (loss, RMSE and MaxSE of each
// factorization; the state in bytes per coordinate that the mechanism holds
// after its last round, in the memory mode the row names) and compares them
// with the digits the table prints. The timings are not checked. About 4 s
// (the BLT and banded fits); skipped with -short (CI runs this package
// under -race -short).
func TestDocCostTable(t *testing.T) {
	if testing.Short() {
		t.Skip("fits every strategy of the table at R = 800")
	}
	b, err := os.ReadFile("../docs/mechanisms.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "\n## Cost and accuracy at d = 10⁶, R = 800\n")
	if !ok {
		t.Fatal("docs/mechanisms.md has no cost table")
	}
	ctx := context.Background()
	w, err := factorize.Prefix(800)
	if err != nil {
		t.Fatal(err)
	}
	cache := map[string]*factorize.Factorization{}
	rows := 0
	for _, line := range strings.Split(strings.TrimLeft(rest, "\n"), "\n") {
		if !strings.HasPrefix(line, "|") {
			if rows > 0 {
				break
			}
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		m := docRow.FindStringSubmatch(cells[0])
		if m == nil {
			continue // the header, the separator and the floor
		}
		n, _ := strconv.Atoi(m[3])
		var s factorize.Strategy
		switch m[1] {
		case "identity":
			s = factorize.IdentityStrategy{}
		case "tree":
			s = factorize.TreeStrategy{}
		case "sqrt", "sqrt-normalized":
			s = factorize.SqrtStrategy{Normalized: m[1] == "sqrt-normalized"}
		case "banded":
			s = factorize.BandedStrategy{Bands: n}
		case "blt":
			s = factorize.BLTStrategy{Buffers: n}
		case "semiseparable":
			s = factorize.SemisepStrategy{Buffers: n}
		case "optimal":
			s = factorize.OptimalStrategy{}
		default:
			t.Fatalf("row %q: unknown strategy %q", cells[0], m[1])
		}
		f := cache[factorize.CacheKey(s)]
		if f == nil {
			if f, err = s.Factorize(ctx, w, factorize.SingleParticipation()); err != nil {
				t.Fatalf("row %q: %v", cells[0], err)
			}
			cache[factorize.CacheKey(s)] = f
		}
		check := func(col string, doc string, got float64) {
			want, err := strconv.ParseFloat(doc, 64)
			if err != nil {
				t.Errorf("row %q: %s %q is not a number", cells[0], col, doc)
				return
			}
			dec := 0
			if _, frac, ok := strings.Cut(doc, "."); ok {
				dec = len(frac)
			}
			if math.Abs(got-want) > 0.5*math.Pow(10, -float64(dec))*(1+1e-9) {
				t.Errorf("row %q: the doc says %s %s, it is %v", cells[0], col, doc, got)
			}
		}
		check("loss", cells[1], f.Metrics.Loss)
		check("RMSE", cells[2], f.Metrics.RMSE)
		check("MaxSE", cells[3], f.Metrics.MaxSE)
		if _, err := strconv.Atoi(cells[4]); err == nil { // "as `sqrt`" is not checked
			var opts []mechanism.Option
			switch {
			case strings.Contains(cells[0], "keep"):
				opts = append(opts, mechanism.WithMemory(mechanism.MemoryKeep))
			case strings.Contains(cells[0], "regenerate"):
				opts = append(opts, mechanism.WithMemory(mechanism.MemoryRegenerate))
			}
			if strings.Contains(cells[0], "WithDense") {
				opts = append(opts, mechanism.WithDense())
			}
			// The state per coordinate at large d: the growth of
			// StateBytes from d = 4 to d = 8, which leaves out what does
			// not grow with d within one block of 4096 coordinates (keep
			// mode's slice headers, the same at both).
			state := func(d int) int64 {
				mech, err := mechanism.New(f, d, 1, append(opts, mechanism.WithSeed(1))...)
				if err != nil {
					t.Fatalf("row %q: %v", cells[0], err)
				}
				buf := make([]float64, d)
				for mech.Round() < mech.Rounds() {
					if err := mech.Next(buf); err != nil {
						t.Fatal(err)
					}
				}
				return mech.StateBytes()
			}
			check("state (B/coord)", cells[4], float64(state(8)-state(4))/4)
		}
		rows++
	}
	if rows != 17 {
		t.Errorf("checked %d rows, want the table's 17 (all but the floor)", rows)
	}
}
