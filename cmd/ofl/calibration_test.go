package main

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/dpmf/dpmf/internal/cli"
	"github.com/dpmf/dpmf/plan"
)

// ofl -json reports the noise std of the run's plan, as the library
// calibrates it (plan.Plan.Build of the same plan) and as the closed forms
// give it: the published analytic-Gaussian multiplier 1.99381245 at
// (2, 1e-5) (notes.md) times 2 B_g / n for the exact calibration (gamma 1:
// the optimal factorization has unit column norms), and the baseline's
// V^2 = 2 B_g^2 / rho with rho = (sqrt(eps + L) - sqrt(L))^2, L =
// log(1/delta), for the independent algorithm under the paper's
// calibration.
func TestJSONNoiseStdIsThePlans(t *testing.T) {
	const eps, delta, clip, n = 2.0, 1e-5, 0.7, 5
	L := math.Log(1 / delta)
	rho := math.Pow(math.Sqrt(eps+L)-math.Sqrt(L), 2)
	for _, c := range []struct {
		algo, cal string
		want      float64
	}{
		{"correlated", "exact", 1.99381245 * 2 * clip / n},
		{"independent", "paper", math.Sqrt(2 * clip * clip / rho)},
	} {
		r := runOfl(t, "-algo", c.algo, "-calibration", c.cal, "-rounds", "8", "-tau", "2", "-learners", "5", "-clip", "0.7",
			"-eps", "2", "-delta", "1e-5", "-dim", "3", "-reps", "1", "-seed", "1", "-json", "-quiet", "-out", t.TempDir())
		if r.code != cli.ExitOK {
			t.Fatalf("%s: exit %d: %s", c.algo, r.code, r.stderr)
		}
		var rep struct {
			NoiseStd float64 `json:"noise_std"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatal(err)
		}
		cal, _ := plan.ParseCalibration(c.cal)
		p := &plan.Plan{Rounds: 8, Algorithm: c.algo, Learners: n, Tau: 2, Clip: clip, Target: &plan.Target{Eps: eps, Delta: delta, Calibration: cal}}
		if _, err := p.Build(t.Context()); err != nil {
			t.Fatal(err)
		}
		if rep.NoiseStd != p.Privacy.NoiseStd || math.Abs(rep.NoiseStd-c.want) > 1e-8*c.want {
			t.Errorf("%s, %s: ofl's noise std %v, the library's %v, by hand %v", c.algo, c.cal, rep.NoiseStd, p.Privacy.NoiseStd, c.want)
		}
	}
}
