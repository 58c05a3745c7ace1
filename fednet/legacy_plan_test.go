package fednet

import (
	"strings"
	"testing"
)

// TestSamePlanLegacyDigest checks the one difference samePlan forgives: a
// run.json written before plans recorded the operator's digest resumes
// under the same plan with the digest, and nothing else differs.
func TestSamePlanLegacyDigest(t *testing.T) {
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
		want              bool
	}{
		{"equal", plan("4", d1), plan("4", d1), true},
		{"equal, indented", []byte("{\n  \"format\": 1,\n  \"rounds\": 4,\n  \"privacy\": {\"eps\": 5, \"noise_std\": 3.4, \"operator_sha256\": \"" + d1 + "\"}\n}"), plan("4", d1), true},
		{"recorded before digests", plan("4", ""), plan("4", d1), true},
		{"recorded before digests, other rounds", plan("4", ""), plan("5", d1), false},
		{"another digest", plan("4", d2), plan("4", d1), false},
		{"digest recorded, none now", plan("4", d1), plan("4", ""), false},
		{"a string holding the key's text", []byte(`{"format":1,"rounds":4,"note":"x\",\"operator_sha256\":\"` + d1 + `\"","privacy":{"eps":5,"noise_std":3.4}}`), []byte(`{"format":1,"rounds":4,"note":"x","privacy":{"eps":5,"noise_std":3.4}}`), false},
	} {
		if got := samePlan(c.recorded, c.current); got != c.want {
			t.Errorf("%s: samePlan = %v, want %v", c.name, got, c.want)
		}
	}
}
