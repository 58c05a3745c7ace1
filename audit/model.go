package audit

import (
	"math"

	"github.com/dpmf/dpmf/model"
)

// Sample kinds of the adversarial data (features[0]).
const (
	kindBlank      = 0 // zero gradient
	kindPush       = 1 // gradient sign * 2 B_g e_k, clipped to sign * B_g e_k
	kindFollow     = 2 // gradient 2 B_g sign(anchor - z_k) e_k, clipped to norm B_g
	kindBackground = 3 // gradient = features[4:], a fixed vector
)

// adversary is the audit's per-sample loss. A sample's features are
// (kind, k, sign, anchor, background...):
//
//	push        f(z) = 2 B_g sign z_k                  gradient 2 B_g sign e_k
//	follow      f(z) = -2 B_g |anchor - z_k|            gradient 2 B_g sign(anchor - z_k) e_k
//	background  f(z) = <b, z>                           gradient b
//	blank       f(z) = 0
//
// Push and follow gradients have norm 2 B_g, so clipping scales them by
// exactly 1/2 (a power of two: no rounding) to norm B_g. A follower whose
// anchor is the round's released model x^r_k points where the learner's
// trajectory has moved along coordinate k, so one push sample at the first
// local step decides the direction of every later step of its learner:
// replacing it moves the learner's mean clipped gradient by exactly 2 B_g,
// the worst case of the sensitivity analysis.
type adversary struct {
	mag float64 // 2 B_g
}

var _ model.Model = adversary{}

// NumParams implements model.Model: the parameters are the features' space.
func (adversary) NumParams(d int) int { return d }

// Loss implements model.Model.
func (m adversary) Loss(x, a []float64, _ float64) float64 {
	k := int(a[1])
	switch a[0] {
	case kindPush:
		return m.mag * a[2] * x[k]
	case kindFollow:
		return -m.mag * math.Abs(a[3]-x[k])
	case kindBackground:
		return dot(a[4:], x[:len(a)-4])
	}
	return 0
}

// Grad implements model.Model.
func (m adversary) Grad(dst, x, a []float64, _ float64) {
	clear(dst)
	k := int(a[1])
	switch a[0] {
	case kindPush:
		dst[k] = m.mag * a[2]
	case kindFollow:
		switch d := a[3] - x[k]; {
		case d > 0:
			dst[k] = m.mag
		case d < 0:
			dst[k] = -m.mag
		}
	case kindBackground:
		copy(dst, a[4:])
	}
}

// sample returns the features of a sample.
func sample(kind, k int, sign, anchor float64) []float64 {
	return []float64{float64(kind), float64(k), sign, anchor}
}
