package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"testing"

	"github.com/dpmf/dpmf/internal/cli"
)

// runOflCrypto runs ofl in-process with the seeds of a real run: drawn from
// crypto/rand when -seed is not given.
func runOflCrypto(t *testing.T, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, env{stdout: &out, stderr: &errb, randomSeed: cryptoSeed})
	if code != cli.ExitOK {
		t.Fatalf("ofl %q: exit %d: %s", args, code, errb.String())
	}
	return result{code, out.String(), errb.String()}
}

// oflJSON is the part of ofl's -json report that the seed determines.
type oflJSON struct {
	Seed      uint64   `json:"seed"`
	SeedDrawn *bool    `json:"seed_drawn"`
	LossError float64  `json:"final_loss_error_mean"`
	LossStd   float64  `json:"final_loss_error_std"`
	Regret    *float64 `json:"final_regret_mean"`
	Accuracy  float64  `json:"final_accuracy_mean"`
	NoiseStd  float64  `json:"noise_std"`
}

// seedText finds "seed=N (rerun with -seed N)" in a summary line; both
// numbers must agree.
var seedText = regexp.MustCompile(`seed=(\d+) \(rerun with -seed (\d+)\) `)

// A run without -seed says which seed it drew, in the summary line and in
// -json, and rerunning with that seed repeats its numbers; a run with
// -seed does not call the seed drawn.
func TestDrawnSeedIsPrintedAndRepeats(t *testing.T) {
	cfg := []string{"-learners", "3", "-tau", "2", "-rounds", "30", "-dim", "5", "-reps", "2", "-eval-every", "10", "-eps", "5"}

	// Text: the line names the seed and how to rerun.
	text := runOflCrypto(t, cfg...)
	m := seedText.FindStringSubmatch(text.stdout)
	if m == nil || m[1] != m[2] {
		t.Fatalf("summary %q: want seed=N (rerun with -seed N)", text.stdout)
	}
	seed, err := strconv.ParseUint(m[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	// The rerun in -json mode reports that seed, not drawn, with the same
	// numbers as the text line.
	var again oflJSON
	js := runOflCrypto(t, append(cfg, "-seed", m[1], "-json")...)
	if err := json.Unmarshal([]byte(js.stdout), &again); err != nil {
		t.Fatal(err)
	}
	if again.Seed != seed || again.SeedDrawn == nil || *again.SeedDrawn {
		t.Errorf("rerun: seed %d, seed_drawn %v; want %d, false", again.Seed, again.SeedDrawn, seed)
	}
	for _, want := range []string{
		fmt.Sprintf(" final_loss_error=%.6g+-%.2g ", again.LossError, again.LossStd),
		fmt.Sprintf(" final_regret=%.6g", *again.Regret),
		fmt.Sprintf(" accuracy=%.4f ", again.Accuracy),
		fmt.Sprintf(" noise_std=%.6g ", again.NoiseStd),
	} {
		if !bytes.Contains([]byte(text.stdout), []byte(want)) {
			t.Errorf("the run with seed %d gave %q; its rerun gives %q", seed, text.stdout, want)
		}
	}

	// JSON: "seed" with "seed_drawn": true; the rerun repeats every number
	// bit for bit, and its text line shows no rerun advice.
	var first, second oflJSON
	js = runOflCrypto(t, append(cfg, "-json")...)
	if err := json.Unmarshal([]byte(js.stdout), &first); err != nil {
		t.Fatal(err)
	}
	if first.SeedDrawn == nil || !*first.SeedDrawn {
		t.Errorf("-json without -seed: seed_drawn %v, want true", first.SeedDrawn)
	}
	js = runOflCrypto(t, append(cfg, "-json", "-seed", strconv.FormatUint(first.Seed, 10))...)
	if err := json.Unmarshal([]byte(js.stdout), &second); err != nil {
		t.Fatal(err)
	}
	*first.SeedDrawn = false
	if fmt.Sprint(first.Seed, *first.SeedDrawn, first.LossError, first.LossStd, *first.Regret, first.Accuracy, first.NoiseStd) !=
		fmt.Sprint(second.Seed, *second.SeedDrawn, second.LossError, second.LossStd, *second.Regret, second.Accuracy, second.NoiseStd) {
		t.Errorf("rerun with -seed %d: %+v, first run %+v", first.Seed, second, first)
	}
	text = runOflCrypto(t, append(cfg, "-seed", strconv.FormatUint(first.Seed, 10))...)
	if want := fmt.Sprintf(" seed=%d seconds=", first.Seed); !bytes.Contains([]byte(text.stdout), []byte(want)) || seedText.MatchString(text.stdout) {
		t.Errorf("with -seed: %q, want %q and no rerun advice", text.stdout, want)
	}
}
