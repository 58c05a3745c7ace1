package fedopt

import (
	"math"
	"math/big"
	"strings"
	"testing"

	dpmodel "github.com/dpmf/dpmf/model"
)

// exactNorm returns the Euclidean norm of u computed in 256-bit arithmetic
// and rounded once: an independent check of the float64 norms of the code.
func exactNorm(u []float64) *big.Float {
	s := new(big.Float).SetPrec(256)
	for _, v := range u {
		x := new(big.Float).SetPrec(256).SetFloat64(v)
		s.Add(s, x.Mul(x, x))
	}
	return s.Sqrt(s)
}

// linearModel is the loss x.a: its gradient is the feature vector a,
// whatever x.
type linearModel struct{}

func (linearModel) NumParams(d int) int                    { return d }
func (linearModel) Loss(x, a []float64, y float64) float64 { return 0 }
func (linearModel) Grad(dst, x, a []float64, y float64)    { copy(dst, a) }

// constStream gives every local step the same client.
type constStream struct{ a []float64 }

func (s constStream) Sample(r, t int) ([]float64, float64) { return s.a, 1 }

// TestUpdateLongRoundAccepted: an honest learner's update is accepted by
// the server whatever tau. Each of tau = 4e7 gradients (1) is clipped to
// B_g = 0.7594487574511783, exactly representable, so the clipped
// gradients sum to tau B_g exactly; but their float64 sum rounds up by a
// relative 1.03e-9 (measured in 256-bit arithmetic below), past the
// server's margin of 1e-9 (UpdateBound), and the server refused the update
// before the learner removed the rounding. The update must be within that
// margin of tau B_g in exact arithmetic and accepted by CheckUpdate.
func TestUpdateLongRoundAccepted(t *testing.T) {
	const tau, clip = 40_000_000, 0.7594487574511783
	cfg := Config{Algorithm: Independent, Eta: 1, EtaG: 1, Clip: clip}
	l, err := NewLearner(linearModel{}, constStream{[]float64{1}}, cfg, tau, 1)
	if err != nil {
		t.Fatal(err)
	}
	u := make([]float64, 1)
	if err := l.Update(u, 0, []float64{0}); err != nil {
		t.Fatal(err)
	}
	exact := new(big.Float).SetPrec(256).Mul(big.NewFloat(clip), big.NewFloat(tau))
	rel, _ := new(big.Float).Quo(new(big.Float).Sub(exactNorm(u), exact), exact).Float64()
	if rel > 1e-9 {
		t.Errorf("update %v exceeds tau B_g = %v by a relative %g, want at most 1e-9", u, exact, rel)
	}
	// The server's step 2^-3 keeps its largest move eta~ B_g = tau 2^-3
	// B_g within float64 (Config.CheckSteps); the bound is tau B_g still.
	srv, err := NewServer(Config{Algorithm: NonPrivate, Eta: 0x1p-3, EtaG: 1, Clip: clip}, Shape{Learners: 1, Rounds: 1, Tau: tau, Dim: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.CheckUpdate(u); err != nil {
		t.Errorf("honest update refused: %v", err)
	}
}

// hostileStream cycles through clients with NaN, infinite, huge and
// subnormal features and labels.
type hostileStream struct{}

var hostileClients = []struct {
	a []float64
	y float64
}{
	{[]float64{math.NaN(), 1}, 1}, {[]float64{math.Inf(1), 1}, -1}, {[]float64{math.Inf(-1), math.Inf(1)}, 1},
	{[]float64{1e308, 1e308}, math.NaN()}, {[]float64{5e-324, 5e-324}, math.Inf(1)}, {[]float64{1, 1}, math.Inf(-1)},
	{[]float64{1e308, -1e308}, 1}, {[]float64{0, 0}, 1e308}, {[]float64{-1e308, -1e308}, -1},
}

func (hostileStream) Sample(r, t int) ([]float64, float64) {
	c := hostileClients[(3*r+t)%len(hostileClients)]
	return c.a, c.y
}

// TestLearnerHostileData: whatever the clients hold (NaN, +-Inf, 1e308,
// subnormal features or labels), whatever the model the learner starts
// from (huge entries) and however large the local step (iterates that
// overflow), every algorithm's update is finite with norm at most tau B_g
// (plus the server's margin), measured in 256-bit arithmetic, and the
// server accepts it.
func TestLearnerHostileData(t *testing.T) {
	const tau, clip, dim = 9, 0.5, 2
	bound := new(big.Float).SetPrec(256).Mul(big.NewFloat(clip*(1+1e-9)), big.NewFloat(tau))
	for _, algo := range Algorithms() {
		for _, eta := range []float64{0.1, 1e300, math.MaxFloat64} {
			cfg := Config{Algorithm: algo, Eta: eta, EtaG: 1, Clip: clip}
			l, err := NewLearner(dpmodel.Logistic{L2: 1e-3}, hostileStream{}, cfg, tau, dim)
			if err != nil {
				t.Fatal(err)
			}
			srv, err := NewServer(Config{Algorithm: NonPrivate, Eta: 1, EtaG: 1, Clip: clip}, Shape{Learners: 1, Rounds: 1, Tau: tau, Dim: dim}, nil)
			if err != nil {
				t.Fatal(err)
			}
			u := make([]float64, dim)
			for r := range 3 {
				for _, x := range [][]float64{{0, 0}, {1, -1}, {1e308, -1e308}, {-math.MaxFloat64, 5e-324}} {
					if err := l.Update(u, r, x); err != nil {
						t.Fatal(err)
					}
					if math.IsNaN(u[0]) || math.IsNaN(u[1]) || exactNorm(u).Cmp(bound) > 0 {
						t.Errorf("%v, eta %v, round %d from %v: update %v, want finite of norm <= %v", algo, eta, r, x, u, bound)
					}
					if err := srv.CheckUpdate(u); err != nil {
						t.Errorf("%v, eta %v, round %d from %v: %v", algo, eta, r, x, err)
					}
				}
			}
		}
	}
}

// fixedNoise is a mechanism whose round-r vector is (r+1) v: a known noise
// to check the server adds it.
type fixedNoise struct {
	v         []float64
	r, rounds int
}

func (m *fixedNoise) Next(dst []float64) error {
	for k := range dst {
		dst[k] = float64(m.r+1) * m.v[k]
	}
	m.r++
	return nil
}
func (m *fixedNoise) Round() int        { return m.r }
func (m *fixedNoise) Rounds() int       { return m.rounds }
func (m *fixedNoise) Dim() int          { return len(m.v) }
func (m *fixedNoise) Std() float64      { return 1 }
func (m *fixedNoise) StateBytes() int64 { return 0 }

// TestPrivateServerRefusesNonFinite: a private server (Algorithm 1) given
// an update with a NaN or infinite entry, or one above tau B_g, refuses the
// round before it draws noise and releases nothing (round and model
// unchanged); given finite updates it releases, by hand,
// x^1 = x^0 - eta~ ((u_1 + u_2) / (n tau) + noise), with the noise added.
func TestPrivateServerRefusesNonFinite(t *testing.T) {
	const n, tau, clip = 2, 2, 1.0
	cfg := Config{Algorithm: Correlated, Eta: 0.5, EtaG: 1, Clip: clip}
	noise := &fixedNoise{v: []float64{0.25, -0.5}, rounds: 2}
	srv, err := NewServer(cfg, Shape{Learners: n, Rounds: 2, Tau: tau, Dim: 2}, noise)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]float64{{math.NaN(), 0}, {0, math.Inf(1)}, {math.Inf(-1), 0}, {1.5, 1.5}} {
		if err := srv.Release([][]float64{{1, 0}, bad}); err == nil || !strings.Contains(err.Error(), "learner 1") {
			t.Errorf("Release with update %v: %v, want an error naming learner 1", bad, err)
		}
		if x := srv.Model(); srv.Round() != 0 || noise.r != 0 || x[0] != 0 || x[1] != 0 {
			t.Errorf("after the refused update %v: round %d, noise round %d, model %v, want 0, 0, [0 0]", bad, srv.Round(), noise.r, x)
		}
	}
	if err := srv.Release([][]float64{{1, 0}, {0, 2}}); err != nil {
		t.Fatal(err)
	}
	// eta~ = 0.5 * 1 * 2 = 1; g = (1, 2) / 4; x^1 = -(0.25 + 0.25, 0.5 - 0.5).
	if x := srv.Model(); x[0] != -0.5 || x[1] != 0 {
		t.Errorf("x^1 = %v, want [-0.5 0]", x)
	}
}

// TestUpdateOverflowingBoundAccepted: where tau B_g overflows float64
// (B_g = MaxFloat64/2, tau = 4), an honest learner's sum of clipped
// gradients (each MaxFloat64/2, a sum past MaxFloat64) must still be sent
// within the server's bound, MaxFloat64 (UpdateBound), and so within
// tau B_g exactly. The learner used to clip the sum to fl(tau B_g) =
// +Inf, which leaves it unchanged (an infinite entry), and the server
// refused it.
func TestUpdateOverflowingBoundAccepted(t *testing.T) {
	const tau, clip = 4, math.MaxFloat64 / 2
	cfg := Config{Algorithm: Independent, Eta: 1, EtaG: 1, Clip: clip}
	l, err := NewLearner(linearModel{}, constStream{[]float64{math.MaxFloat64}}, cfg, tau, 1)
	if err != nil {
		t.Fatal(err)
	}
	u := make([]float64, 1)
	if err := l.Update(u, 0, []float64{0}); err != nil {
		t.Fatal(err)
	}
	// The server's step 2^-3 keeps its largest move eta~ B_g = tau 2^-3
	// B_g within float64 (Config.CheckSteps); the bound is tau B_g still.
	srv, err := NewServer(Config{Algorithm: NonPrivate, Eta: 0x1p-3, EtaG: 1, Clip: clip}, Shape{Learners: 1, Rounds: 1, Tau: tau, Dim: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.CheckUpdate(u); err != nil {
		t.Errorf("honest update %v refused: %v", u, err)
	}
}
