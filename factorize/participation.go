package factorize

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dpmf/dpmf/internal/param"
)

// ParticipationKind is the shape of a [Participation] pattern.
type ParticipationKind int

const (
	// KindSingle: each sample takes part in at most one round.
	KindSingle ParticipationKind = iota
	// KindEpochs: fixed epochs. The n rounds are k epochs of period
	// b = n / k, and a sample takes part in rounds i, i+b, ..., i+(k-1)b
	// for one i < b (one round per epoch, at the same place in each).
	KindEpochs
	// KindMinSep: b-min-separation. A sample takes part in at most k
	// rounds, any two of them at least b rounds apart.
	KindMinSep
)

// Participation says in which rounds one sample (one client's data) may
// contribute to the stream: the rows of G that one neighbouring change can
// alter. The sensitivity of C G depends on it (see [SensitivityOf]). The
// zero value is single participation.
//
// This is the Participation a user normally wants: sensitivities,
// strategies and metrics take it. Two other names hold the same pattern
// as a string, its [Participation.String] ("single", "epochs:4",
// "minsep:64,2"): plan.Plan's Participation field (a plan's JSON;
// plan.Plan.Pattern parses it back), and accountant.Participation, the
// label of a per-round accountant.Record, which the accountant never
// computes with.
//
// Fixed epochs are a special case of min-separation (k participations
// exactly b apart), so a min-separation sensitivity is never below the
// fixed-epoch one with the same k and b, up to the rounding of the sums
// that compute them (TestMinSepNotBelowEpochs).
type Participation struct {
	// Kind is single, epochs or min-separation.
	Kind ParticipationKind
	// K is the number of epochs (KindEpochs) or the largest number of
	// participations (KindMinSep; 0 means as many as fit, ceil(n / B)).
	K int
	// B is the minimum separation (KindMinSep). For KindEpochs the period
	// is n / K and B is ignored.
	B int
}

// SingleParticipation returns the single-participation pattern.
func SingleParticipation() Participation { return Participation{} }

// FixedEpochs returns the pattern of k epochs over the rounds: with n
// rounds, the period is n / k, which must be a whole number.
func FixedEpochs(k int) Participation { return Participation{Kind: KindEpochs, K: k} }

// MinSeparation returns the b-min-separation pattern with at most k
// participations (k = 0: as many as fit in the rounds).
func MinSeparation(b, k int) Participation { return Participation{Kind: KindMinSep, B: b, K: k} }

// ParseParticipation parses "single", "epochs:K" or "minsep:B[,K]" (the
// syntax of String and of mfsolve's -participation flag).
func ParseParticipation(s string) (Participation, error) {
	bad := func(why string) (Participation, error) {
		return Participation{}, &ParamError{Param: "participation", Value: param.Quote(s), Want: "single, epochs:K or minsep:B[,K] with integers K, B >= 1 (" + why + ")"}
	}
	name, arg, hasArg := strings.Cut(s, ":")
	switch name {
	case "single":
		if hasArg {
			return bad("single takes no argument")
		}
		return SingleParticipation(), nil
	case "epochs":
		k, err := strconv.Atoi(arg)
		if !hasArg || err != nil || k < 1 {
			return bad("bad number of epochs")
		}
		return FixedEpochs(k), nil
	case "minsep":
		bs, ks, hasK := strings.Cut(arg, ",")
		b, err := strconv.Atoi(bs)
		if !hasArg || err != nil || b < 1 {
			return bad("bad separation")
		}
		k := 0
		if hasK {
			if k, err = strconv.Atoi(ks); err != nil || k < 1 {
				return bad("bad number of participations")
			}
		}
		return MinSeparation(b, k), nil
	}
	return bad("unknown pattern")
}

// String returns "single", "epochs:K" or "minsep:B" / "minsep:B,K",
// which [ParseParticipation] reads back.
func (p Participation) String() string {
	switch p.Kind {
	case KindSingle:
		return "single"
	case KindEpochs:
		return fmt.Sprintf("epochs:%d", p.K)
	case KindMinSep:
		if p.K == 0 {
			return fmt.Sprintf("minsep:%d", p.B)
		}
		return fmt.Sprintf("minsep:%d,%d", p.B, p.K)
	}
	return fmt.Sprintf("Participation(%d)", int(p.Kind))
}

// Validate returns a *[ParamError] (Param "participation") if p is not a
// valid pattern over n rounds: epochs must divide n, the separation and
// counts must be positive. A number of rounds n < 1 is a *[ParamError]
// (Param "rounds") whatever the pattern: there are no rounds to take part
// in.
func (p Participation) Validate(n int) error {
	if n < 1 {
		return &ParamError{Param: "rounds", Value: n, Want: ">= 1 for a participation pattern"}
	}
	bad := func(want string) error {
		return &ParamError{Param: "participation", Value: p.String(), Want: want}
	}
	switch p.Kind {
	case KindSingle:
		return nil
	case KindEpochs:
		if p.K < 1 {
			return bad("epochs >= 1")
		}
		if n%p.K != 0 {
			return bad(fmt.Sprintf("a number of epochs that divides the rounds (%d rounds are not a whole number of %d epochs)", n, p.K))
		}
		return nil
	case KindMinSep:
		if p.B < 1 {
			return bad("a separation >= 1")
		}
		if p.K < 0 {
			return bad("participations >= 1 (or 0 for as many as fit)")
		}
		return nil
	}
	return bad("single, epochs or minsep")
}

// Participations returns the largest number of rounds one sample can take
// part in over n rounds: 1, K, or min(K, ceil(n / B)); 0 for n < 1 or a
// pattern that Validate refuses (a separation below 1 or negative
// counts), never a negative count.
func (p Participation) Participations(n int) int {
	switch {
	case n < 1:
		return 0
	case p.Kind != KindEpochs && p.Kind != KindMinSep:
		return 1
	case p.Validate(n) != nil:
		return 0
	case p.Kind == KindEpochs:
		return p.K
	}
	// ceil(n / B) without the overflow of n + B - 1, which made a
	// separation near MaxInt count 0 participations (and a sensitivity
	// of 0).
	fit := (n-1)/p.B + 1
	if p.K == 0 {
		return fit
	}
	return min(p.K, fit)
}
