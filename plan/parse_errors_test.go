package plan

import (
	"strings"
	"testing"

	"github.com/dpmf/dpmf/accountant"
	"github.com/dpmf/dpmf/factorize"
)

// Every name parser of accountant, factorize and plan answers a bad input
// with one line that quotes the input and lists what is accepted: for
// short inputs the whole input, quoted; for long ones (an input of 100 KB
// gave an error of 100 KB, and a strategy setting's value one of 200 KB,
// quoted twice) its first 64 bytes, quoted, and its length. An unknown
// strategy name quoted only the name ("nope" for "nope:1").
func TestParseErrorsOneLine(t *testing.T) {
	long := strings.Repeat("x", 100000)
	parsers := map[string]func(string) error{
		"ParseMethod":        func(s string) error { _, err := accountant.ParseMethod(s); return err },
		"ParseRelation":      func(s string) error { _, err := accountant.ParseRelation(s); return err },
		"ParseParticipation": func(s string) error { _, err := factorize.ParseParticipation(s); return err },
		"ParseStrategy":      func(s string) error { _, err := factorize.ParseStrategy(s); return err },
		"ParseCalibration":   func(s string) error { _, err := ParseCalibration(s); return err },
	}
	inputs := []string{"", "bogus", "x\ny", "nope:1", long, "banded:bands=" + long, "banded:" + long + "=1", "minsep:" + long, "epochs:" + long}
	for name, parse := range parsers {
		for _, in := range inputs {
			err := parse(in)
			if err == nil {
				t.Errorf("%s(%.20q...): no error", name, in)
				continue
			}
			msg := err.Error()
			want := `"` + in + `"`
			if in == "x\ny" {
				want = `"x\ny"`
			} else if len(in) > 64 {
				want = `"` + in[:64] + `"... (` // the first 64 bytes and the length
			}
			if strings.Contains(msg, "\n") || len(msg) > 400 || !strings.Contains(msg, want) || !strings.Contains(msg, "want") {
				t.Errorf("%s(%.20q... of %d bytes) = %.300q (%d bytes), want one line under 400 bytes quoting %.80s and saying what it wants", name, in, len(in), msg, len(msg), want)
			}
		}
	}
}

// Parse's errors for input that is no JSON object at all say what it
// wants: before, an empty input was "plan: EOF", a cut one "plan:
// unexpected EOF" and an array Go's type name ("plan.Plan").
func TestParseNotAnObject(t *testing.T) {
	for _, in := range []string{"", "  \n", "{", `{"rounds": 3`, "[]", "3", `"plan"`} {
		_, err := Parse([]byte(in))
		if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "want a plan's JSON object") {
			t.Errorf("Parse(%q) = %v, want one line that says it wants a plan's JSON object", in, err)
		}
	}
}

// Validate names the one field that is out of range, with its value: a
// negative clip was "clip, eta, eta_g and eta_ind -1 0 0 0, want >= 0",
// and a negative tau "learners and tau 10 and -1".
func TestValidateNamesTheField(t *testing.T) {
	base := func() *Plan {
		return &Plan{Algorithm: AlgoCorrelated, Rounds: 8, Learners: 2, Tau: 1, Clip: 1, Eta: 0.1, EtaG: 1,
			Target: &Target{Eps: 1, Delta: 1e-5}}
	}
	if err := base().Validate(); err != nil {
		t.Fatalf("base plan: %v", err)
	}
	for _, c := range []struct {
		name string
		set  func(*Plan)
	}{
		{"learners -1", func(p *Plan) { p.Learners = -1 }},
		{"tau -2", func(p *Plan) { p.Tau = -2 }},
		{"clip -1", func(p *Plan) { p.Clip = -1 }},
		{"eta -0.5", func(p *Plan) { p.Eta = -0.5 }},
		{"eta_g -3", func(p *Plan) { p.EtaG = -3 }},
		{"eta_ind -0.25", func(p *Plan) { p.EtaInd = -0.25 }},
	} {
		p := base()
		c.set(p)
		err := p.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), "plan: "+c.name+", want ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: Validate() = %v, want one line starting %q", c.name, err, "plan: "+c.name+", want ")
		}
	}
}
