package audit

import (
	"context"
	"slices"
	"testing"
)

// Setup.Progress is called once per round of the federation, with the
// rounds done 1, 2, ..., R and the total R, by Replay and by Canary (in
// process, and over gRPC once the networked run has ended).
func TestProgress(t *testing.T) {
	p := smallPlan("tree", 1)
	want := make([]int, p.Rounds)
	for i := range want {
		want[i] = i + 1
	}
	for _, c := range []struct {
		name string
		run  func(s *Setup) error
	}{
		{"replay", func(s *Setup) error { _, err := Replay(context.Background(), s); return err }},
		{"canary", func(s *Setup) error {
			_, err := Canary(context.Background(), s, CanaryOptions{Canaries: 5})
			return err
		}},
		{"canary over gRPC", func(s *Setup) error {
			_, err := Canary(context.Background(), s, CanaryOptions{Canaries: 5, Network: true})
			return err
		}},
	} {
		s := mustSetup(t, p)
		var done []int
		s.Progress = func(d, total int) {
			if total != p.Rounds {
				t.Errorf("%s: total %d, want %d", c.name, total, p.Rounds)
			}
			done = append(done, d)
		}
		if err := c.run(s); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !slices.Equal(done, want) {
			t.Errorf("%s: progress %v, want %v", c.name, done, want)
		}
	}
}
