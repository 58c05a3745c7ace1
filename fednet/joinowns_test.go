package fednet

import (
	"context"
	"testing"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/mechanism"
	dpmodel "github.com/dpmf/dpmf/model"
	"github.com/dpmf/dpmf/plan"
	flv1 "github.com/dpmf/dpmf/proto/dpmf/fl/v1"
)

// TestJoinAnnouncesWhatWasChecked: NewServer checked the privacy record
// and the quantizer it was given (ServerOptions.Config), and Join then
// read the caller's structs for what it tells the learners: the record's
// participation, against which a learner checks how often its data
// serves a client (checkDataEpochs), and the quantizer's scale bits, with
// which it quantizes its update. A caller that changed either after
// NewServer (the record relabelled epochs:2, the scale bits lowered) made
// Join announce values the server never checked: learners with data that
// replays each client twice then joined a run calibrated for single
// participation (the identity's sensitivity under epochs:2 is sqrt(2), by
// hand, against the record's 1), and quantized with other scale bits than
// the server dequantizes with. Join must announce what was checked.
func TestJoinAnnouncesWhatWasChecked(t *testing.T) {
	ctx := context.Background()
	t.Run("participation", func(t *testing.T) {
		const d, R = 3, 4
		dim := (dpmodel.Logistic{}).NumParams(d)
		p := &plan.Plan{Workload: plan.WorkloadPrefix, Rounds: R, Algorithm: plan.AlgoCorrelated,
			Strategy: "identity", Learners: 2, Tau: 1, Eta: 0.1, EtaG: 1, Clip: 1, Target: &plan.Target{Eps: 5, Delta: 1e-3}}
		pr, noise := planNoise(t, p, dim)
		cfg := fedopt.Config{Algorithm: fedopt.Correlated, Eta: 0.1, EtaG: 1, Clip: 1, Privacy: pr}
		key := mechanism.SeedKey(1)
		srv, err := NewServer(ServerOptions{Config: cfg, Shape: fedopt.Shape{Learners: 2, Rounds: R, Tau: 1, Dim: dim},
			Model: Model{Name: "logistic", Features: d}, Noise: noise, NoiseKey: &key, Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		pr.ParticipationPattern, pr.Participation = factorize.FixedEpochs(2), "epochs:2"
		resp, err := srv.Join(ctx, &flv1.JoinRequest{ProtocolVersion: Protocol, Learner: 0})
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.GetConfig().GetParticipation(); got != "single" {
			t.Errorf("Join announces participation %q after the caller's record was changed, want single (the record the server checked)", got)
		}
	})
	t.Run("scale bits", func(t *testing.T) {
		r := newRun(t, 4, 2, 1, 4)
		secureRun(t, r)
		k := r.cfg.Quantizer.ScaleBits
		srv, err := NewServer(secureOptions(r, t.TempDir(), 3))
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		r.cfg.Quantizer.ScaleBits = k - 8
		resp, err := srv.Join(ctx, &flv1.JoinRequest{ProtocolVersion: Protocol, Learner: 0})
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.GetConfig().GetSecureAggregation().GetScaleBits(); int(got) != k {
			t.Errorf("Join announces %d scale bits after the caller's quantizer was changed, want %d (the quantizer the server checked)", got, k)
		}
	})
}
