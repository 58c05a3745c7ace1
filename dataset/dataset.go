package dataset

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
)

// Dataset is the stream of client samples of an online federated run with
// n learners, R rounds and tau local steps: learner i's client at local step
// t of round r is sample (i, r, t), so each learner serves R tau clients and
// the data set holds N = n R tau samples.
//
// Samples are stored round by round: sample (i, r, t) is row (r n + i) tau + t
// of Features (row-major, Dim columns), so the n tau samples of a round are
// contiguous (see [Dataset.Round]).
type Dataset struct {
	// Name describes the data (for example "synthetic(0.1,0.1)" or a file).
	Name string
	// Learners (n), Rounds (R), Tau and Dim (d) give the shape.
	Learners, Rounds, Tau, Dim int
	// Features holds N rows of Dim features.
	Features []float64
	// Labels holds N labels.
	Labels []float64

	// epochs is k for a data set whose rounds replay k times the rounds
	// of another ([Dataset.Epochs]); 0 or 1: every sample is dealt once.
	epochs int
}

// NewDataset returns an empty (zero) data set of the given shape, or an
// error if a size is not positive or the data set would be too large.
func NewDataset(name string, learners, rounds, tau, dim int) (*Dataset, error) {
	for _, p := range []struct {
		name string
		v    int
	}{{"learners", learners}, {"rounds", rounds}, {"tau", tau}, {"dimension", dim}} {
		if p.v < 1 {
			return nil, &ParamError{Param: p.name, Value: p.v, Want: ">= 1"}
		}
	}
	n := float64(learners) * float64(rounds) * float64(tau)
	if tooLarge(n*float64(dim), n) {
		return nil, fmt.Errorf("dataset: %d x %d x %d samples of dimension %d is too large (more than %s numbers)", learners, rounds, tau, dim, maxNumbersText())
	}
	N := learners * rounds * tau
	return &Dataset{
		Name:     name,
		Learners: learners, Rounds: rounds, Tau: tau, Dim: dim,
		Features: make([]float64, N*dim),
		Labels:   make([]float64, N),
	}, nil
}

// tooLarge reports whether a data set of feats feature values and labels
// labels is beyond what NewDataset and Epochs make: more than 2^31 feature
// values, or, on a 32-bit platform, slices whose bytes an int does not
// count (there the allocation panicked: makeslice: len out of range, or
// the length itself overflowed).
func tooLarge(feats, labels float64) bool {
	return feats > 1<<31 || 8*(feats+labels) > math.MaxInt
}

// maxNumbersText is the limit of [tooLarge] as errors write it.
func maxNumbersText() string {
	if math.MaxInt > 1<<40 {
		return "2^31"
	}
	return "2^28 on a 32-bit platform"
}

// Len returns N = n R tau.
func (d *Dataset) Len() int { return d.Learners * d.Rounds * d.Tau }

// Index returns the row of sample (learner i, round r, step t).
func (d *Dataset) Index(i, r, t int) int { return (r*d.Learners+i)*d.Tau + t }

// Sample returns the features (a view) and label of sample (i, r, t).
func (d *Dataset) Sample(i, r, t int) ([]float64, float64) {
	j := d.Index(i, r, t)
	return d.Features[j*d.Dim : (j+1)*d.Dim : (j+1)*d.Dim], d.Labels[j]
}

// Round returns the n tau samples of round r.
func (d *Dataset) Round(r int) Samples {
	m := d.Learners * d.Tau
	return Samples{X: d.Features[r*m*d.Dim : (r+1)*m*d.Dim], Y: d.Labels[r*m : (r+1)*m], Dim: d.Dim}
}

// All returns all N samples.
func (d *Dataset) All() Samples {
	return Samples{X: d.Features, Y: d.Labels, Dim: d.Dim}
}

// Validate returns an error if the shape and the slices disagree or a value
// is NaN or infinite.
func (d *Dataset) Validate() error {
	switch {
	case d == nil:
		return &ParamError{Param: "data", Want: "a Dataset from NewDataset, Table.Deal or Synthetic.Dataset"}
	case d.Learners < 1 || d.Rounds < 1 || d.Tau < 1 || d.Dim < 1:
		return fmt.Errorf("dataset: data set %q has shape n = %d, R = %d, tau = %d, d = %d, want all >= 1", d.Name, d.Learners, d.Rounds, d.Tau, d.Dim)
	case len(d.Labels) != d.Len() || len(d.Features) != d.Len()*d.Dim:
		return fmt.Errorf("dataset: data set %q has %d labels and %d features, want %d and %d", d.Name, len(d.Labels), len(d.Features), d.Len(), d.Len()*d.Dim)
	}
	notFinite := func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }
	if j := slices.IndexFunc(d.Features, notFinite); j >= 0 {
		return fmt.Errorf("dataset: data set %q: feature %d of sample %d is %v, want a finite number", d.Name, j%d.Dim, j/d.Dim, d.Features[j])
	}
	if j := slices.IndexFunc(d.Labels, notFinite); j >= 0 {
		return fmt.Errorf("dataset: data set %q: label of sample %d is %v, want a finite number", d.Name, j, d.Labels[j])
	}
	return nil
}

// Epochs returns the data set that replays d's rounds k times: round
// e R + r (R = d.Rounds, 0 <= e < k) has the samples of d's round r, so
// each client takes part in k rounds, R apart: k fixed epochs of period R,
// the participation factorize.FixedEpochs(k) over the k R rounds. The
// samples are copied; k = 1 returns a copy of d. The result's learner
// streams report the k epochs ([Stream.Epochs]; d's own epochs times k when
// d was itself replayed), so that a run can refuse a privacy record whose
// participation assumes fewer (package fedopt does).
func (d *Dataset) Epochs(k int) (*Dataset, error) {
	if k < 1 {
		return nil, fmt.Errorf("dataset: epochs = %d, want >= 1", k)
	}
	if tooLarge(float64(k)*float64(len(d.Features)), float64(k)*float64(len(d.Labels))) {
		return nil, fmt.Errorf("dataset: %d epochs of %d rounds of dimension %d is too large (more than %s numbers)", k, d.Rounds, d.Dim, maxNumbersText())
	}
	out := &Dataset{
		Name:     d.Name,
		Learners: d.Learners, Rounds: k * d.Rounds, Tau: d.Tau, Dim: d.Dim,
		Features: slices.Repeat(d.Features, k),
		Labels:   slices.Repeat(d.Labels, k),
		epochs:   k * max(d.epochs, 1),
	}
	if k > 1 {
		out.Name = fmt.Sprintf("%s x %d epochs", d.Name, k)
	}
	return out, nil
}

// Stream is learner i's stream of clients of a Dataset; it implements
// fedopt.Stream.
type Stream struct {
	d *Dataset
	i int
}

// Sample returns sample (i, r, t).
func (s Stream) Sample(r, t int) ([]float64, float64) { return s.d.Sample(s.i, r, t) }

// Epochs returns how the data set deals each of its samples: k times,
// period rounds apart. A data set of [Dataset.Epochs](k) replays its
// first period = Rounds / k rounds k times; one dealt once has k = 1 and
// period = Rounds.
func (s Stream) Epochs() (k, period int) {
	k = max(s.d.epochs, 1)
	return k, s.d.Rounds / k
}

// Shape returns the stream's learner i, and the learners, rounds and
// clients per round (tau) the data set was dealt for: Sample(r, t) is
// learner i's own client only for i < learners, r < rounds and t < tau
// (past them it reads another learner's or round's client, or nothing), so
// that a run can refuse data of another shape, or one learner's clients in
// two learners' places (package fedopt does).
func (s Stream) Shape() (learner, learners, rounds, tau int) {
	return s.i, s.d.Learners, s.d.Rounds, s.d.Tau
}

// DataSHA256 returns the digest of the data set the stream is dealt from,
// [Dataset.SHA256]: two streams report the same digest when their data
// sets deal the same samples to the same learners and rounds, so that a
// learner restarted in the middle of a run can tell whether it deals its
// clients as before (package fednet records it).
func (s Stream) DataSHA256() string { return s.d.SHA256() }

// Stream returns learner i's stream of clients: sample (i, r, t).
func (d *Dataset) Stream(i int) Stream { return Stream{d, i} }

// digestDomain opens the bytes [Dataset.SHA256] hashes.
const digestDomain = "dpmf dataset v1\x00"

// SHA256 returns the SHA-256 of the data set, in lower-case hexadecimal:
// of the bytes "dpmf dataset v1" and a zero byte, then Learners, Rounds,
// Tau and Dim as 8-byte little-endian integers, then Features (row by
// row, as it holds them) and Labels, each value as the 8 little-endian
// bytes of its IEEE 754 bits. Name is not part of it. Two data sets have
// the same digest when they deal the same samples, in the same order, to
// the same learners and rounds.
func (d *Dataset) SHA256() string {
	h := sha256.New()
	buf := make([]byte, 0, 8<<10)
	buf = append(buf, digestDomain...)
	for _, v := range []int{d.Learners, d.Rounds, d.Tau, d.Dim} {
		buf = binary.LittleEndian.AppendUint64(buf, uint64(v))
	}
	for _, vs := range [][]float64{d.Features, d.Labels} {
		for _, v := range vs {
			if len(buf)+8 > cap(buf) {
				h.Write(buf)
				buf = buf[:0]
			}
			buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(v))
		}
	}
	h.Write(buf)
	return hex.EncodeToString(h.Sum(nil))
}
