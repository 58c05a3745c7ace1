package main

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/internal/cli"
)

// A separation B >= R lets a sample take part in one round only, so
// minsep:B is single participation over R rounds, whatever B and K: the
// replay must audit one round with the largest column norm (measured =
// declared), and the canary audit must plant canaries and claim the
// single-participation mu. A B near math.MaxInt overflowed the audit's
// pattern arithmetic: minsep:9223372036854775807 audited no round and
// passed vacuously (measured 0, canary mu 0), and with ",2" both audits
// panicked with an index out of range.
func TestMinSepHugeSeparation(t *testing.T) {
	base := []string{"-rounds", "8", "-learners", "2", "-tau", "1", "-dim", "2", "-json"}
	type replayRep struct {
		OK       bool    `json:"ok"`
		Declared float64 `json:"declared_sensitivity"`
		Measured float64 `json:"measured_distance"`
		Rounds   []int   `json:"audited_rounds"`
	}
	type canaryRep struct {
		Canaries int `json:"canaries"`
		All      struct {
			MuAnalytic float64 `json:"mu_analytic"`
		} `json:"all_iterates"`
		MuClaimed float64 `json:"mu_claimed"`
	}
	// The largest separations and counts an int holds (2^62, 2^63 - 2 and
	// 2^63 - 1 on a 64-bit platform).
	half, maxInt := strconv.Itoa(math.MaxInt/2+1), strconv.Itoa(math.MaxInt)
	for _, b := range []string{"8", "9", half, strconv.Itoa(math.MaxInt - 1), maxInt} {
		for _, k := range []string{"", ",1", ",2", "," + maxInt} {
			p := "minsep:" + b + k
			code, out, err := runCmd(t, append([]string{"replay", "-participation", p}, base...)...)
			var rep replayRep
			if err != nil || code != 0 || json.Unmarshal([]byte(out), &rep) != nil {
				t.Fatalf("replay %s: code %d, err %v, out %.300s", p, code, err, out)
			}
			// Single participation over the prefix workload's optimal C
			// (unit column norms): one round moves the release by
			// 2 B_g / n = 2 * 5 / 2 = 5.
			if !rep.OK || len(rep.Rounds) != 1 || rep.Declared != 5 || !(rep.Measured > 5*(1-1e-12)) {
				t.Errorf("replay %s: ok %v, rounds %v, declared %v, measured %v; want one round, declared 5 and measured 5", p, rep.OK, rep.Rounds, rep.Declared, rep.Measured)
			}
			code, out, err = runCmd(t, append([]string{"canary", "-participation", p}, base...)...)
			var can canaryRep
			if err != nil || code != 0 || json.Unmarshal([]byte(out), &can) != nil {
				t.Fatalf("canary %s: code %d, err %v, out %.300s", p, code, err, out)
			}
			// m = R n = 16 slots of one round each.
			if can.Canaries != 16 || can.All.MuAnalytic != can.MuClaimed || !(can.MuClaimed > 0) {
				t.Errorf("canary %s: %d canaries, analytic mu %v, claimed %v; want 16 canaries and the claimed mu", p, can.Canaries, can.All.MuAnalytic, can.MuClaimed)
			}
		}
	}
}

// The canary audit's learner-round slots n R must not overflow: with
// -learners 2^62 -rounds 4 (or 3037000500 each, whose product passes
// math.MaxInt) the slots are far more than 3, and the run must fail on
// what it really lacks (memory), not with "needs at least 3 learner-round
// slots", which the product wrapped to 0 or a negative number claimed.
// -rounds 2^62 is above factorize.MaxRounds: refused by its range first.
func TestCanarySlotsOverflow(t *testing.T) {
	// 2^62 (2^30 where int has 32 bits), and the least s with s^2 above
	// math.MaxInt: 3037000500 (46341).
	half := strconv.Itoa(math.MaxInt/2 + 1)
	s := strconv.Itoa(int(math.Sqrt(math.MaxInt)) + 1)
	for _, nr := range [][3]string{{half, "4", "need about"}, {s, s, "need about"}, {"4", half, "-rounds " + half + ": want 1 to "}} {
		args := []string{"canary", "-learners", nr[0], "-rounds", nr[1], "-tau", "1", "-dim", "2"}
		_, _, err := runCmd(t, args...)
		if err == nil || strings.Contains(err.Error(), "slots") || !strings.Contains(err.Error(), nr[2]) {
			t.Errorf("%q: error %v, want %q", args, err, nr[2])
		}
		_, _, err = runCmd(t, append(args, "-canaries", "5")...)
		if err == nil || strings.Contains(err.Error(), "slots") || !strings.Contains(err.Error(), nr[2]) {
			t.Errorf("%q -canaries 5: error %v, want %q", args, err, nr[2])
		}
	}
}

// A participation that leaves fewer than 3 learner-round slots (epochs:R:
// every sample in every round, so n slots) cannot run the canary audit at
// all. The error named a -canaries the user may not have given and asked
// for "3 to 1"; it must name the participation and say that at least 3
// slots are needed, with or without -canaries.
func TestCanaryTooFewSlots(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		slots string
	}{
		{[]string{"-learners", "1", "-participation", "epochs:8"}, "leaves 1 learner-round slot"},
		{[]string{"-learners", "2", "-participation", "epochs:8"}, "leaves 2 learner-round slots"},
		{[]string{"-learners", "2", "-participation", "epochs:8", "-canaries", "3"}, "leaves 2 learner-round slots"},
	} {
		args := append([]string{"canary", "-rounds", "8", "-tau", "1", "-dim", "2"}, tc.args...)
		_, _, err := runCmd(t, args...)
		if err == nil || cli.ExitCode(err) != cli.ExitUsage || !strings.Contains(err.Error(), "-participation epochs:8") ||
			!strings.Contains(err.Error(), tc.slots) || !strings.Contains(err.Error(), "at least 3") || strings.Contains(err.Error(), "3 to ") {
			t.Errorf("%q: %v; want a usage error naming -participation epochs:8 that %s, want at least 3", args, err, tc.slots)
		}
	}
}

// At -eps 1e308 the claimed mu is about 1.4e154 and mu^2 overflows: the
// default number of canaries, 400 z^2 (1 + mu^2 / 8) / mu^2, was
// Inf / Inf = NaN, converted to a negative int and refused ("-canaries 0
// ... want 3 to 8"). Its limit for large mu is 50 z^2 (332 at 0.99),
// so the audit plants min(max(332, 1000), n R) = n R = 8 canaries. (With
// -json the report's +Inf values are strings: TestCanaryJSONNonFinite.)
func TestCanaryDefaultHugeMu(t *testing.T) {
	code, out, err := runCmd(t, "canary", "-rounds", "4", "-learners", "2", "-tau", "1", "-dim", "2", "-eps", "1e308", "-delta", "0.5")
	if err != nil || (code != 0 && code != exitViolation) || !strings.Contains(out, ": m=8 canaries,") {
		t.Fatalf("code %d, err %v, output %.200s; want m=8 canaries", code, err, out)
	}
}

// TestCanaryJSONNonFinite: at -eps 1e40 the noise (std 3.5e-20) is below
// the rounding of the released models, so the final model's canary scores
// separate with no spread: mu-hat = +Inf. The -json report failed after
// the audit ran ("json: unsupported value: +Inf"); it now holds the
// string "+Inf", and the interval is the limit of mu-hat -+ z se as the
// spread tends to 0, [+Inf, +Inf] for m = 8 at level 0.99 (z = 2.576 <
// sqrt(2 (m - 1)) = 3.742), not [NaN, +Inf]. A release without noise is
// a violation of any finite claim (exit status 3). The test was skipped
// on 386: there too the included canaries' scores are all equal, and so
// are the excluded ones', but their common value has other last bits
// (the noise scale's arithmetic), for which the least-squares fit's own
// rounding left a spread of an ulp (mu-hat 1.1e16, "consistent"). The fit
// is now made in double-word arithmetic, which finds a spread of exactly 0
// for any last bits (TestEstimateMuExactLineAnyBits).
func TestCanaryJSONNonFinite(t *testing.T) {
	args := []string{"canary", "-rounds", "4", "-learners", "2", "-tau", "1", "-dim", "2", "-eps", "1e40", "-delta", "0.5", "-canaries", "8"}
	code, out, err := runCmd(t, append(args, "-json")...)
	if err != nil || code != exitViolation {
		t.Fatalf("code %d, err %v, output %.300s; want exit %d", code, err, out, exitViolation)
	}
	var rep struct {
		Final struct {
			Mu    map[string]any `json:"mu"`
			EpsLo any            `json:"eps_of_mu_lo"`
		} `json:"final_model"`
		Violation bool `json:"violation"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v in %.300s", err, out)
	}
	mu := rep.Final.Mu
	if mu["mu_hat"] != "+Inf" || mu["mu_lo"] != "+Inf" || mu["mu_hi"] != "+Inf" || mu["score_std"] != 0.0 || rep.Final.EpsLo != "+Inf" || !rep.Violation {
		t.Errorf("final model's estimate %v, eps of the lower end %v, violation %v; want +Inf [+Inf, +Inf], spread 0, +Inf, true", mu, rep.Final.EpsLo, rep.Violation)
	}
	code, out, err = runCmd(t, args...)
	if err != nil || code != exitViolation || !strings.Contains(out, "mu-hat +Inf [+Inf, +Inf] at 0.99 (eps +Inf [+Inf, +Inf])") {
		t.Errorf("text report: code %d, err %v, output %s", code, err, out)
	}
}
