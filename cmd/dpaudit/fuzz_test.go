package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dpmf/dpmf/internal/cli"
)

// FuzzAudit runs small audits (R <= 16 rounds, n <= 4 learners, one local
// step, d = 2) with arbitrary -participation and -strategy text, replay or
// canary. Whatever the text, the command must not panic or hang; it either
// refuses with one error line (a usage error for a bad flag value) or
// runs, and a replay that runs measures at most the declared sensitivity
// (to rounding) over at least one audited round: a pattern with no round
// audits nothing and would pass vacuously. A canary run that passes plants
// at least 3 canaries. The seeds run in every plain go test.
func FuzzAudit(f *testing.F) {
	for _, s := range []struct {
		canary   bool
		r, n     uint8
		part     string
		strategy string
	}{
		{false, 8, 2, "single", "optimal"},
		{false, 8, 2, "minsep:9223372036854775807,2", "optimal"},
		{true, 8, 2, "minsep:9223372036854775807,2", "optimal"},
		{false, 8, 2, "minsep:9223372036854775807", "banded:bands=3"},
		{true, 8, 2, "minsep:9223372036854775806", "blt"},
		{false, 12, 3, "epochs:3", "bsr:bands=2"},
		{true, 12, 3, "epochs:4", "tree"},
		{false, 9, 2, "minsep:2,9223372036854775807", "banded-toeplitz"},
		{false, 10, 2, "minsep:3", "optimal:path=dense"},
		{true, 6, 1, "epochs:6", "sqrt-normalized"},
		{false, 1, 1, "single", "identity"},
	} {
		f.Add(s.canary, s.r, s.n, s.part, s.strategy)
	}
	f.Fuzz(func(t *testing.T, canary bool, r, n uint8, part, strategy string) {
		cmd := "replay"
		if canary {
			cmd = "canary"
		}
		args := []string{cmd, "-rounds", strconv.Itoa(1 + int(r)%16), "-learners", strconv.Itoa(1 + int(n)%4),
			"-tau", "1", "-dim", "2", "-participation", part, "-strategy", strategy, "-json"}
		var out, errb bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		code, err := run(ctx, args, &out, &errb)
		if ctx.Err() != nil {
			t.Fatalf("%q: still running after 20 s (R <= 16)", args)
		}
		if err != nil {
			if msg := cli.OneLine(err.Error()); msg == "" || strings.ContainsAny(msg, "\n\r") {
				t.Fatalf("%q: error %q, want one line (as main prints it)", args, msg)
			}
			if c := cli.ExitCode(err); c != 1 && c != 2 {
				t.Fatalf("%q: exit status %d for %v", args, c, err)
			}
			return
		}
		if code != 0 && code != 3 {
			t.Fatalf("%q: exit %d without an error", args, code)
		}
		if canary {
			var rep struct {
				Canaries int `json:"canaries"`
			}
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil || rep.Canaries < 3 {
				t.Fatalf("%q: canaries %d, %v", args, rep.Canaries, err)
			}
			return
		}
		var rep struct {
			Declared float64 `json:"declared_sensitivity"`
			Measured float64 `json:"measured_distance"`
			Rounds   []int   `json:"audited_rounds"`
		}
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatalf("%q: %v in %.300s", args, err, out.String())
		}
		if len(rep.Rounds) == 0 || !(rep.Measured > 0) || rep.Measured > rep.Declared*(1+1e-9) {
			t.Fatalf("%q: audited rounds %v, measured %v, declared %v", args, rep.Rounds, rep.Measured, rep.Declared)
		}
	})
}
