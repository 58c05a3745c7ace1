package fedopt

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/dpmf/dpmf/secagg"
)

// Config holds the parameters of one run of the online federated optimiser.
type Config struct {
	// Algorithm is the server update.
	Algorithm Algorithm
	// Eta is the local step size eta and EtaG the global step size eta_g of
	// Algorithm 1; the server step is eta~ = Eta EtaG Tau.
	Eta, EtaG float64
	// EtaInd is the server step of the Independent baseline and of
	// BaselineCorrelated; 0 means Eta EtaG. Its direction sums tau gradients per learner, so with the
	// default its noise-free update is x^r minus eta~ times the mean
	// clipped gradient at x^r: Algorithm 1's step without local drift.
	EtaInd float64
	// Clip is B_g: every per-sample gradient is scaled to norm at most Clip
	// before it is used. The private algorithms need a finite Clip > 0 (it
	// is what bounds the sensitivity); 0 means no clipping and is allowed
	// only for NonPrivate.
	Clip float64
	// EvalEvery is the stride of rounds at which the loss error and the
	// accuracy over all data are evaluated (rounds 0, E, 2E, ..., and always
	// R); 0 means 1. The regret is accumulated every round regardless.
	EvalEvery int
	// ParallelLearners computes the learners of each round in goroutines.
	// The results are identical bit for bit either way.
	ParallelLearners bool
	// X0 is the initial model; nil means zero.
	X0 []float64
	// Privacy, if not nil, is the calibration the noise mechanism was made
	// with ([PrivacyOf] of the run's calibrated plan). [Config.Validate]
	// checks its algorithm, clipping bound and quantization against the run's,
	// [NewServer] its learners, rounds, tau, the mechanism's standard
	// deviation and factorization, and [NewLearner] and [Simulate] the
	// learners' data's epochs; [Server.Record] reports it at each round
	// (package experiment's Run records it for every evaluated round).
	Privacy *Privacy
	// OnRound, if not nil, is called after every round with the number of
	// rounds completed. It is called from the goroutine running the run.
	OnRound func(done int)
	// Quantizer, if not nil, makes the aggregation that of secure
	// aggregation: every update is quantized to the ring Z_{2^64}
	// ([QuantizeUpdate]), the server sums them there and dequantizes the
	// sum ([Server.Release], [Server.ReleaseRingSum]). nil: plain float64
	// aggregation. It needs a finite Clip > 0, and a private run's Privacy
	// must be calibrated with its quantization term.
	Quantizer *secagg.Quantizer
}

// ServerStep returns the step the server takes along the noisy direction:
// eta~ = Eta EtaG tau for Algorithm 1, EtaInd (or Eta EtaG) for Independent
// and BaselineCorrelated.
func (c Config) ServerStep(tau int) float64 {
	if !c.Algorithm.LocalSteps() {
		if c.EtaInd != 0 {
			return c.EtaInd
		}
		return c.Eta * c.EtaG
	}
	return c.Eta * c.EtaG * float64(tau)
}

// Validate returns a *[ParamError] naming the first invalid parameter:
// "algorithm", "eta", "eta_g", "eta_ind", "clip", "eval-every", "privacy",
// "quantizer" or "x0[k]".
func (c Config) Validate() error {
	pos := func(name string, v float64) error {
		if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
			return &ParamError{Param: name, Value: v, Want: "a finite number > 0"}
		}
		return nil
	}
	if !slices.Contains(Algorithms(), c.Algorithm) {
		return &ParamError{Param: "algorithm", Value: c.Algorithm, Want: "correlated, independent, nonprivate or baseline-correlated (Algorithms)"}
	}
	if err := cmp.Or(pos("eta", c.Eta), pos("eta_g", c.EtaG)); err != nil {
		return err
	}
	if c.EtaInd != 0 {
		if err := pos("eta_ind", c.EtaInd); err != nil {
			return err
		}
	}
	if c.Clip != 0 || c.Algorithm.Private() || c.Quantizer != nil {
		if err := pos("clip", c.Clip); err != nil {
			if c.Algorithm.Private() {
				err.(*ParamError).Want += fmt.Sprintf(" (the %v algorithm needs clipping for its privacy guarantee)", c.Algorithm)
			} else if c.Quantizer != nil {
				err.(*ParamError).Want += " (secure aggregation quantizes updates of norm at most tau clip)"
			}
			return err
		}
	}
	if c.EvalEvery < 0 {
		return &ParamError{Param: "eval-every", Value: c.EvalEvery, Want: ">= 0"}
	}
	switch p := c.Privacy; {
	case p == nil:
	case !c.Algorithm.Private() || p.Algorithm != c.Algorithm || p.Clip != c.Clip:
		return &ParamError{Param: "privacy", Value: fmt.Sprintf("a calibration for %v with B_g = %v", p.Algorithm, p.Clip), Want: fmt.Sprintf("one for the run's %v with B_g = %v", c.Algorithm, c.Clip)}
	case !(p.QuantizationTerm > 0) && c.Quantizer != nil:
		return &ParamError{Param: "privacy", Value: "a calibration without a quantization term", Want: "one of a plan with secure aggregation (the run quantizes its updates)"}
	case p.QuantizationTerm > 0 && c.Quantizer == nil:
		return &ParamError{Param: "quantizer", Value: "nil", Want: fmt.Sprintf("the secure aggregation's quantizer (the privacy record has quantization term %v)", p.QuantizationTerm)}
	}
	if k := firstNonFinite(c.X0); k >= 0 {
		return &ParamError{Param: fmt.Sprintf("x0[%d]", k), Value: c.X0[k], Want: "a finite number"}
	}
	return nil
}

// MaxStepProduct is the largest value [Config.CheckSteps] accepts for a
// run's step product S tau max(B_g, 1), S = max(eta, eta eta_g, eta_ind):
// math.MaxFloat64. The optimiser multiplies a gradient of norm up to B_g
// (1 without clipping, per unit of gradient) by eta in each local step
// and the round's direction by the server step, so beyond it a round's
// noise-free move, or the server step itself, overflows.
const MaxStepProduct = math.MaxFloat64

// CheckSteps returns a *[ParamError] when the step sizes are too large for
// tau local steps: the product S tau max(Clip, 1), with S the largest of
// Eta, Eta EtaG and EtaInd, exceeds [MaxStepProduct]. It names the largest
// of "eta", "eta_g" and "eta_ind". Each factor can be finite (Validate's
// check) while their product overflows: eta = 1e308 with tau = 10 makes the
// server step +Inf, and a local step eta B_g +Inf, so every model would be
// Inf or NaN. [NewServer] calls it.
func (c Config) CheckSteps(tau int) error {
	g := max(c.Clip, 1)
	if math.IsNaN(g) || tau < 1 {
		return nil // Validate's and Shape's errors
	}
	s := max(c.Eta, c.EtaInd)
	if c.EtaG > 1 {
		// eta eta_g <= MaxStepProduct when the whole product is.
		s = max(s, mulAscending(c.Eta, c.EtaG))
	}
	if p := mulAscending(s, float64(tau), g); p <= MaxStepProduct {
		return nil
	}
	name, v := "eta", c.Eta
	if c.EtaG > v {
		name, v = "eta_g", c.EtaG
	}
	if c.EtaInd > v {
		name, v = "eta_ind", c.EtaInd
	}
	return &ParamError{Param: name, Value: v, Want: fmt.Sprintf("steps with max(eta, eta eta_g, eta_ind) tau max(B_g, 1) at most %g (eta %v, eta_g %v, eta_ind %v, tau %d, B_g %v): a round's largest noise-free move must be a finite float64", MaxStepProduct, c.Eta, c.EtaG, c.EtaInd, tau, c.Clip)}
}

// mulAscending returns the product of the non-negative xs, multiplied
// smallest first, so that it is +Inf only when the exact product exceeds
// MaxFloat64 (up to rounding): the partial products before the last
// factor below 1 cannot overflow, and after it they grow to the product.
func mulAscending(xs ...float64) float64 {
	slices.Sort(xs)
	p := 1.0
	for _, x := range xs {
		p *= x
	}
	return p
}

// own returns c with its own copies of Privacy and Quantizer, so that a
// change of the caller's changes nothing in the holder of the copy.
func (c Config) own() Config {
	if c.Privacy != nil {
		pr := *c.Privacy
		c.Privacy = &pr
	}
	if c.Quantizer != nil {
		q := *c.Quantizer
		c.Quantizer = &q
	}
	return c
}

// firstNonFinite returns the index of the first entry of v that is NaN or
// infinite, or -1.
func firstNonFinite(v []float64) int {
	return slices.IndexFunc(v, func(x float64) bool { return math.IsNaN(x) || math.IsInf(x, 0) })
}
