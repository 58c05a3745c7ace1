package fednet

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/fedopt"
	dpmodel "github.com/dpmf/dpmf/model"
	"github.com/dpmf/dpmf/plan"
)

// A run described by its plan: run.json records the plan's JSON as it is
// and ReadPlan gives it back (it parses to the same plan); a plan that is
// not the run's (another learner count, step, clipping bound or noise
// std) and a restart with another plan are refused.
func TestServerPlan(t *testing.T) {
	const d = 3
	cfg := fedopt.Config{Algorithm: fedopt.NonPrivate, Eta: 0.1, EtaG: 1}
	shape := fedopt.Shape{Learners: 2, Rounds: 3, Tau: 1, Dim: (dpmodel.Logistic{}).NumParams(d)}
	p := &plan.Plan{Workload: plan.WorkloadPrefix, Participation: "single", Rounds: 3, Algorithm: plan.AlgoNonPrivate, Learners: 2, Tau: 1, Eta: 0.1, EtaG: 1,
		Model: &plan.Model{Name: "logistic", Features: d, L2: 1e-4}}
	js, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	opt := ServerOptions{Config: cfg, Shape: shape, Model: Model{Name: "logistic", L2: 1e-4, Features: d}, Dir: dir, Plan: js}
	srv, err := NewServer(opt)
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	got, err := ReadPlan(dir)
	if err != nil {
		t.Fatal(err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(compact.Bytes(), js) {
		t.Errorf("run.json's plan %s, want %s", got, js)
	}
	q, err := plan.Parse(got)
	if err != nil || q.Learners != 2 || q.Model.L2 != 1e-4 {
		t.Errorf("read back %+v, %v", q, err)
	}
	// The same plan resumes.
	if srv, err = NewServer(opt); err != nil {
		t.Fatalf("restart with the same plan: %v", err)
	}
	srv.Close()
	other := *p
	other.Eta = 0.2
	otherJS, _ := other.Marshal()
	for _, c := range []struct {
		name string
		edit func(o *ServerOptions)
		want string
	}{
		{"learners", func(o *ServerOptions) { o.Shape.Learners = 3 }, "learners 2, the run 3"},
		{"eta", func(o *ServerOptions) { o.Config.Eta = 0.2 }, "eta 0.1, the run 0.2"},
		{"clip", func(o *ServerOptions) { o.Config.Clip = 1 }, "clip 0, the run 1"},
		{"l2", func(o *ServerOptions) { o.Model.L2 = 0 }, "l2 0.0001, the run 0"},
		{"noise std", func(o *ServerOptions) { o.Config.Privacy = &fedopt.Privacy{} }, ""},
		{"not JSON", func(o *ServerOptions) { o.Plan = json.RawMessage("{") }, "the run's plan"},
		{"another plan on restart", func(o *ServerOptions) { o.Plan = otherJS; o.Config.Eta = 0.2 }, "describes another run"},
	} {
		o := opt
		c.edit(&o)
		_, err := NewServer(o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
}
