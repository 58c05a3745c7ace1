package fednet

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// wantPlanDigest is the digest round 0's file records for plan, computed
// here from the documented definition (docs/distributed.md, State): the
// SHA-256 of "dpmf/fednet/plan/v1", a zero byte and the plan as
// encoding/json writes a raw message (compact, HTML characters escaped).
func wantPlanDigest(t *testing.T, plan []byte) [sha256.Size]byte {
	t.Helper()
	var c bytes.Buffer
	if err := json.Compact(&c, plan); err != nil {
		t.Fatal(err)
	}
	var esc bytes.Buffer
	json.HTMLEscape(&esc, c.Bytes())
	return sha256.Sum256(append([]byte("dpmf/fednet/plan/v1\x00"), esc.Bytes()...))
}

// A plan changed in run.json of a finished run (every bit of the plan's
// text flipped in turn, and an edit that keeps it valid JSON) is refused
// by ReadPlan, the reader without a plan of its own to compare with, in
// one line that says what to do; and by a restart given the edited plan
// (before, such an edit resumed under the edited plan). The run as written
// reads back, and round 0's file records the plan's digest computed
// independently.
func TestPlanFlipRefusedByReadPlan(t *testing.T) {
	dir := t.TempDir()
	opt := plannedOptions(t, dir)
	srv, err := NewServer(opt)
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	path := filepath.Join(dir, runFile)
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadPlan(dir)
	if err != nil {
		t.Fatalf("ReadPlan of the run as written: %v", err)
	}
	h, err := store{dir}.readHeader(0)
	if err != nil {
		t.Fatal(err)
	}
	if want := wantPlanDigest(t, got); h.prev != want {
		t.Fatalf("round 0 records %x, want the plan's digest %x", h.prev, want)
	}
	at := bytes.Index(orig, []byte(`"plan": {`)) + len(`"plan": `)
	outer := bytes.LastIndexByte(orig, '}') // run.json's own; the plan is its last field
	end := at + bytes.LastIndexByte(orig[at:outer], '}') + 1
	if at < len(`"plan": `) || !json.Valid(orig[at:end]) {
		t.Fatalf("no plan found in %s", orig)
	}
	refused := 0
	for k := at; k < end; k++ {
		for b := range 8 {
			if testing.Short() && b != k%8 {
				continue
			}
			flipped := bytes.Clone(orig)
			flipped[k] ^= 1 << b
			if err := os.WriteFile(path, flipped, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := ReadPlan(dir)
			if err == nil {
				t.Fatalf("byte %d bit %d (%q -> %q) of run.json: the plan read back", k, b, orig[k], flipped[k])
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("byte %d bit %d: not one line: %v", k, b, err)
			}
			refused++
		}
	}
	t.Logf("%d flips of the plan refused", refused)
	// An edit that keeps the plan valid JSON: more rounds.
	edited := bytes.Replace(orig, []byte(`"rounds": 4`), []byte(`"rounds": 5`), 1)
	if bytes.Equal(edited, orig) {
		t.Fatalf("run.json has no rounds 4: %s", orig)
	}
	if err := os.WriteFile(path, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = ReadPlan(dir)
	if err == nil || !strings.Contains(err.Error(), "its plan is not the plan run") || !strings.Contains(err.Error(), "put back the run's own run.json") {
		t.Fatalf("an edited plan: %v, want refused as changed, saying what to do", err)
	}
	var rec runRecord
	if err := json.Unmarshal(edited, &rec); err != nil {
		t.Fatal(err)
	}
	if err := reopenWithPlan(dir, opt, rec.Plan); err == nil || !strings.Contains(err.Error(), "its plan is not the plan run") {
		t.Fatalf("a restart given the edited plan: %v, want refused", err)
	}
	if err := os.WriteFile(path, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadPlan(dir); err != nil {
		t.Fatalf("run.json put back: %v", err)
	}
}

// reopenWithPlan opens dir's state as a server given plan would.
func reopenWithPlan(dir string, opt ServerOptions, plan []byte) error {
	st, err := openState(dir, stateOptions{plan: plan, x0: make([]float64, 4), noise: opt.Noise != nil, key: opt.NoiseKey})
	if err == nil {
		st.lock.Close()
	}
	return err
}

// legacyState makes dir a directory of state format 2 as an older dpmf
// wrote it: round 0's chain starts from zeros and run.json says format 2.
func legacyState(t *testing.T, dir string) {
	t.Helper()
	newTestState(t, dir, true, 0)
	s := store{dir}
	rec, err := s.readRun()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(s.path(roundName(0))); err != nil {
		t.Fatal(err)
	}
	sum, err := s.writeRound(rec.id, [sha256.Size]byte{}, Released{Round: 0, X: testOptions(true).x0})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.writeMark(mark{run: rec.id, round: 0, sum: sum}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(s.path(runFile))
	if err != nil {
		t.Fatal(err)
	}
	legacy := bytes.Replace(data, []byte(`"format": 3,`), []byte(`"format": 2,`), 1)
	if bytes.Equal(legacy, data) {
		t.Fatalf("run.json has no format 3: %s", data)
	}
	if err := os.WriteFile(s.path(runFile), legacy, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A directory of state format 2 (no plan digest) is read and resumed as
// before, stays format 2, and its plan is returned as recorded (an edit
// there is what format 2 cannot tell); a format-3 run.json whose format is
// changed to 2 is refused, since round 0 records a digest.
func TestPlanDigestLegacyState(t *testing.T) {
	dir := t.TempDir()
	legacyState(t, dir)
	st, err := openState(dir, testOptions(true))
	if err != nil {
		t.Fatalf("a format-2 directory: %v", err)
	}
	for r := 1; r <= 2; r++ {
		if err := st.release(Released{Round: r, Updates: 2, X: testModel(r)}); err != nil {
			t.Fatal(err)
		}
	}
	st.lock.Close()
	if err := reopen(dir, true); err != nil {
		t.Fatalf("a format-2 run resumed again: %v", err)
	}
	rec, err := store{dir}.readRun()
	if err != nil || rec.Format != legacyFormat {
		t.Fatalf("run.json after resumes: format %d (%v), want %d", rec.Format, err, legacyFormat)
	}
	if p, err := ReadPlan(dir); err != nil || !bytes.Equal(compact(p), compact(testPlan)) {
		t.Fatalf("ReadPlan of a format-2 run: %s, %v", p, err)
	}

	dir = t.TempDir()
	newTestState(t, dir, true, 2)
	path := filepath.Join(dir, runFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, bytes.Replace(data, []byte(`"format": 3,`), []byte(`"format": 2,`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	for what, err := range map[string]error{"ReadPlan": func() error { _, err := ReadPlan(dir); return err }(), "a restart": reopen(dir, true)} {
		if err == nil || !strings.Contains(err.Error(), "records state format 2, but") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s of a format-3 run whose run.json says format 2: %v, want refused in one line", what, err)
		}
	}
}
