package main

import (
	"encoding/json"
	"testing"
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
	for _, b := range []string{"8", "9", "4611686018427387904", "9223372036854775806", "9223372036854775807"} {
		for _, k := range []string{"", ",1", ",2", ",9223372036854775807"} {
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
