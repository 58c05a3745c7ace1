package fednet

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/fedopt"
	dpmodel "github.com/dpmf/dpmf/model"
	"github.com/dpmf/dpmf/plan"
)

// sameRunRecord reports whether two run.json records say the same: every
// field equal, the plans equal as compact JSON.
func sameRunRecord(a, b runRecord) bool {
	pa, pb := a.Plan, b.Plan
	a.Plan, b.Plan = nil, nil
	return a.Format == b.Format && a.Run == b.Run && a.id == b.id && a.Noise == b.Noise && a.KeySHA256 == b.KeySHA256 &&
		a.Derivation == b.Derivation && a.DirInode == b.DirInode && a.DirBirth == b.DirBirth && bytes.Equal(compact(pa), compact(pb))
}

// TestRunFileBitFlips flips each bit of a real run.json (of a secure run
// with noise, its key in noise.key, and colluders; of a plain run with a
// given key; of a run without noise; with -short one bit of each byte, in
// turn) and starts the server on it: every flip is refused with a
// one-line error, or reads as the same record (a flip the JSON decoder
// does not see: the case of a field name's letter, which encoding/json
// ignores), and the server then resumes on the file restored. Before, a
// flip in the name of dir_inode, dir_birth_ns or noise was accepted and
// dropped the field (and with the first two the directory's binding: a
// copy of the directory would then resume), as was a noise source other
// than none, file and given, or a letter's case in the run's identity.
// The four runs are independent (each its own directory, configuration
// and servers, no hook set): they run in parallel with one another
// (about 28,000 server starts in all, mostly waiting: 46 to 65 s of wall
// time for 7 to 9 s of CPU one after another on a loaded 2-core machine).
func TestRunFileBitFlips(t *testing.T) {
	for _, c := range []string{"secure, key in noise.key", "plain, key given", "no noise", "a calibrated plan"} {
		t.Run(c, func(t *testing.T) {
			t.Parallel()
			r := newRun(t, 4, 2, 1, 4)
			dir := t.TempDir()
			opt := r.options(dir, nil)
			switch c {
			case "secure, key in noise.key":
				secureRun(t, r)
				opt = secureOptions(r, dir, 3)
				opt.SecureAggregation.Colluders = 1
				opt.NoiseKey = nil
			case "no noise":
				opt.Config.Algorithm = fedopt.NonPrivate
				opt.Noise, opt.NoiseKey = nil, nil
			case "a calibrated plan":
				// As ofl server records it: the plan's privacy record
				// (noise multiplier, participation, clip) in run.json.
				opt = plannedOptions(t, dir)
			}
			flipRunFile(t, opt)
		})
	}
}

// flipRunFile starts a server with opt, then flips run.json's bits and
// restarts it on each flip.
func flipRunFile(t *testing.T, opt ServerOptions) {
	srv, err := NewServer(opt)
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	dir := opt.Dir
	path := filepath.Join(dir, runFile)
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := store{dir}.readRun()
	if err != nil {
		t.Fatal(err)
	}
	if want.DirInode == 0 {
		t.Fatalf("run.json records no directory inode")
	}
	t.Logf("run.json: %d bytes, noise %q, birth time %d", len(orig), want.Noise, want.DirBirth)
	refused, same := 0, 0
	for k := range orig {
		for b := range 8 {
			if testing.Short() && b != k%8 {
				continue
			}
			flipped := bytes.Clone(orig)
			flipped[k] ^= 1 << b
			if err := os.WriteFile(path, flipped, 0o644); err != nil {
				t.Fatal(err)
			}
			srv, err := NewServer(opt)
			if err != nil {
				if strings.Contains(err.Error(), "\n") {
					t.Errorf("byte %d (%q), bit %d: %q, want one line", k, orig[k], b, err)
				}
				refused++
				continue
			}
			srv.Close()
			got, err := store{dir}.readRun()
			if err != nil || !sameRunRecord(got, want) {
				got.Plan = nil
				t.Errorf("byte %d (%q in %q), bit %d: accepted, and read as another record: %+v (%v)", k, orig[k], orig[max(0, k-12):min(len(orig), k+12)], b, got, err)
				continue
			}
			same++
		}
	}
	t.Logf("%d flips refused, %d read as the same record", refused, same)
	if err := os.WriteFile(path, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	srv, err = NewServer(opt)
	if err != nil {
		t.Fatalf("the server on the restored run.json: %v", err)
	}
	srv.Close()
}

// plannedOptions are the options of a run of a calibrated plan (epochs
// participation, target eps 5) in dir, with the plan recorded as ofl
// server records it (ServerOptions.Plan).
func plannedOptions(t *testing.T, dir string) ServerOptions {
	const d, R = 3, 4
	p := &plan.Plan{Workload: plan.WorkloadPrefix, Participation: "epochs:2", Rounds: R, Algorithm: plan.AlgoCorrelated,
		Strategy: "optimal", Learners: 2, Tau: 1, Eta: 0.1, EtaG: 1, Clip: 1, Target: &plan.Target{Eps: 5, Delta: 1e-3}}
	p.Model = &plan.Model{Name: "logistic", Features: d}
	dim := (dpmodel.Logistic{}).NumParams(d)
	pr, noise := planNoise(t, p, dim)
	js, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return ServerOptions{Config: fedopt.Config{Algorithm: fedopt.Correlated, Eta: 0.1, EtaG: 1, Clip: 1, Privacy: pr},
		Shape: fedopt.Shape{Learners: 2, Rounds: R, Tau: 1, Dim: dim}, Model: Model{Name: "logistic", Features: d},
		Noise: noise, Dir: dir, Epochs: 2, Plan: js}
}
