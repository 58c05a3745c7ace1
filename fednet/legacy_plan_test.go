package fednet

import (
	"strings"
	"testing"
)

// TestComparePlansLegacyDigest checks how comparePlans tells the plans
// apart: equal plans are one run; a run.json written before plans
// recorded the operator's digest, equal to this start's plan without it,
// is told apart from another run (the server refuses it with its own
// message: the digest binds the run to the C its noise streams, which
// another build's solver may move); anything else is another run.
func TestComparePlansLegacyDigest(t *testing.T) {
	d1 := strings.Repeat("ab", 32)
	d2 := strings.Repeat("cd", 32)
	plan := func(rounds, digest string) []byte {
		p := `{"format":1,"rounds":` + rounds + `,"privacy":{"eps":5,"noise_std":3.4`
		if digest != "" {
			p += `,"operator_sha256":"` + digest + `"`
		}
		return []byte(p + `}}`)
	}
	for _, c := range []struct {
		name              string
		recorded, current []byte
		same, legacy      bool
	}{
		{"equal", plan("4", d1), plan("4", d1), true, false},
		{"equal, indented", []byte("{\n  \"format\": 1,\n  \"rounds\": 4,\n  \"privacy\": {\"eps\": 5, \"noise_std\": 3.4, \"operator_sha256\": \"" + d1 + "\"}\n}"), plan("4", d1), true, false},
		{"recorded before digests", plan("4", ""), plan("4", d1), false, true},
		{"recorded before digests, other rounds", plan("4", ""), plan("5", d1), false, false},
		{"another digest", plan("4", d2), plan("4", d1), false, false},
		{"digest recorded, none now", plan("4", d1), plan("4", ""), false, false},
		{"a string holding the key's text", []byte(`{"format":1,"rounds":4,"note":"x\",\"operator_sha256\":\"` + d1 + `\"","privacy":{"eps":5,"noise_std":3.4}}`), []byte(`{"format":1,"rounds":4,"note":"x","privacy":{"eps":5,"noise_std":3.4}}`), false, false},
	} {
		if same, legacy := comparePlans(c.recorded, c.current); same != c.same || legacy != c.legacy {
			t.Errorf("%s: comparePlans = %v, %v, want %v, %v", c.name, same, legacy, c.same, c.legacy)
		}
	}
}

// TestLegacyRecord checks how a restart tells a run.json whose privacy
// record does not name the settings it was calibrated under (a dpmf
// before plan.Record's participation) from another run: the server
// refuses it with its own message (this build cannot check that record),
// and anything else is another run.
func TestLegacyRecord(t *testing.T) {
	const old = `{"format":1,"rounds":4,"privacy":{"eps":5,"noise_std":3.4}}`
	const now = `{"format":1,"rounds":4,"privacy":{"eps":5,"noise_std":3.4,"participation":"single","rounds":4}}`
	for _, c := range []struct {
		name              string
		recorded, current string
		legacy            bool
	}{
		{"record without its settings", old, now, true},
		{"the same, other rounds", `{"format":1,"rounds":5,"privacy":{"eps":5}}`, now, true},
		{"both with their settings", now, now, false},
		{"both without (a run of the same build)", old, old, false},
		{"no record recorded", `{"format":1,"rounds":4}`, now, false},
		{"no record now", old, `{"format":1,"rounds":4}`, false},
		{"not JSON", `{`, now, false},
		{"participation of the plan only", `{"format":1,"participation":"single","privacy":{"eps":5}}`, now, true},
	} {
		if got := legacyRecord([]byte(c.recorded), []byte(c.current)); got != c.legacy {
			t.Errorf("%s: legacyRecord = %v, want %v", c.name, got, c.legacy)
		}
	}
}
