package accountant

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseMethod(t *testing.T) {
	want := []string{"exact", "paper", "zcdp", "cks", "rdp", "rdp-mironov", "dwork-roth"}
	ms := Methods()
	if len(ms) != len(want) || ms[0] != Exact {
		t.Fatalf("Methods() = %v", ms)
	}
	for i, m := range ms {
		if m.String() != want[i] {
			t.Errorf("Method(%d).String() = %q, want %q", i, m, want[i])
		}
		got, err := ParseMethod(want[i])
		if err != nil || got != m {
			t.Errorf("ParseMethod(%q) = %v, %v", want[i], got, err)
		}
	}
	for _, bad := range []string{"", "Exact", "rdp ", "gauss"} {
		_, err := ParseMethod(bad)
		if err == nil || !strings.Contains(err.Error(), "exact, paper, zcdp, cks, rdp, rdp-mironov, dwork-roth") {
			t.Errorf("ParseMethod(%q): err = %v, want the list of names", bad, err)
		}
	}
	if s := Method(42).String(); s != "Method(42)" {
		t.Errorf("Method(42).String() = %q", s)
	}
	if _, err := Method(-1).MarshalText(); err == nil {
		t.Error("Method(-1).MarshalText succeeded")
	}
}

func TestRecord(t *testing.T) {
	// gamma = 1.2, B_g = 1, n = 10 learners: sensitivity 2 gamma B_g / n.
	const sens = 2 * 1.2 * 1.0 / 10
	r, err := NewRecord(3, 5, 1e-3, sens, Exact, SingleParticipation)
	if err != nil {
		t.Fatal(err)
	}
	// Published sigma at (5, 1e-3) is 0.68984233.
	if want := 0.68984233 * sens; r.NoiseStd < want*(1-1e-8) || r.NoiseStd > want*(1+1e-8) {
		t.Errorf("NoiseStd = %v, want %v", r.NoiseStd, want)
	}
	if err := r.Verify(); err != nil {
		t.Errorf("Verify of a calibrated record: %v", err)
	}
	// 1% less noise does not verify.
	short := r
	short.NoiseStd *= 0.99
	if err := short.Verify(); err == nil || !strings.Contains(err.Error(), "round 3") {
		t.Errorf("Verify with 1%% less noise: err = %v", err)
	}
	// A record of a looser method verifies too (more noise).
	if p, _ := NewRecord(0, 5, 1e-3, sens, Paper, SingleParticipation); p.Verify() != nil || p.NoiseStd <= r.NoiseStd {
		t.Errorf("paper record %+v does not verify or has less noise than exact", p)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back Record
	if err := json.Unmarshal(b, &back); err != nil || back != r {
		t.Errorf("JSON round trip: %s -> %+v, %v", b, back, err)
	}
	if !strings.Contains(string(b), `"method":"exact"`) || !strings.Contains(string(b), `"participation":"single"`) {
		t.Errorf("JSON %s lacks method or participation names", b)
	}
	if _, err := NewRecord(-1, 5, 1e-3, sens, Exact, SingleParticipation); err == nil {
		t.Error("negative round accepted")
	}
	if _, err := NewRecord(0, 5, 1e-3, sens, Exact, ""); err == nil {
		t.Error("empty participation accepted")
	}
	if err := (Record{Eps: 1, Delta: 1e-5, Sensitivity: 1}).Verify(); err == nil {
		t.Error("zero noise verified")
	}
}
