package audit

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dpmf/dpmf/fedopt"
)

// A cancelled audit stops within a fraction of a second and returns the
// context's error, even inside one round: with tau = 2e9 local steps a
// single learner update takes minutes (dpaudit replay -tau 2000000000 ran
// on for over 2 minutes after SIGTERM).
func TestAuditsStopWhenCancelled(t *testing.T) {
	p := Plan{Learners: 2, Rounds: 10, Tau: 2_000_000_000, Dim: 3, Seed: 1}
	s := mustSetup(t, p)
	for _, c := range []struct {
		name string
		run  func(ctx context.Context) error
	}{
		{"replay", func(ctx context.Context) error { _, err := Replay(ctx, s); return err }},
		{"canary", func(ctx context.Context) error {
			_, err := Canary(ctx, s, CanaryOptions{Canaries: 3})
			return err
		}},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		start := time.Now()
		err := c.run(ctx)
		took := time.Since(start)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: err = %v, want context.DeadlineExceeded", c.name, err)
		}
		if took > 2*time.Second {
			t.Errorf("%s: returned %v after the start, want within a fraction of a second of the 100ms deadline", c.name, took)
		}
	}
}

// A context cancelled before the audit gives its error, not a report.
func TestAuditsCancelledBefore(t *testing.T) {
	s := mustSetup(t, smallPlan("optimal", 1))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if rep, err := Replay(ctx, s); !errors.Is(err, context.Canceled) || rep != nil {
		t.Errorf("replay: %v, %v, want no report and context.Canceled", rep, err)
	}
	if rep, err := Canary(ctx, s, CanaryOptions{Canaries: 3}); !errors.Is(err, context.Canceled) || rep != nil {
		t.Errorf("canary: %v, %v, want no report and context.Canceled", rep, err)
	}
}

// Validate refuses, naming the field, every zero that WithDefaults would
// replace with a default, and accepts the plan with defaults.
func TestPlanValidate(t *testing.T) {
	full := Plan{}.WithDefaults()
	if err := full.Validate(); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
	for _, c := range []struct {
		field string
		zero  func(p *Plan)
	}{
		{"Learners", func(p *Plan) { p.Learners = 0 }},
		{"Rounds", func(p *Plan) { p.Rounds = 0 }},
		{"Tau", func(p *Plan) { p.Tau = 0 }},
		{"Dim", func(p *Plan) { p.Dim = 0 }},
		{"Eta", func(p *Plan) { p.Eta = 0 }},
		{"EtaG", func(p *Plan) { p.EtaG = 0 }},
		{"Clip", func(p *Plan) { p.Clip = 0 }},
		{"Eps", func(p *Plan) { p.Eps = 0 }},
		{"Delta", func(p *Plan) { p.Delta = 0 }},
		{"Dropout", func(p *Plan) { p.Dropout = -0.5 }},
		{"Algorithm", func(p *Plan) { p.Algorithm = fedopt.NonPrivate }},
	} {
		p := full
		c.zero(&p)
		err := p.Validate()
		var pe *ParamError
		if !errors.As(err, &pe) || pe.Param != c.field || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: err = %v, want a one-line *ParamError naming %s", c.field, err, c.field)
		}
	}
	// The zeros WithDefaults leaves alone are values, not mistakes.
	p := full
	p.Dropout, p.Seed = 0, 0
	if err := p.Validate(); err != nil {
		t.Errorf("Dropout 0, Seed 0: %v, want accepted", err)
	}
}
