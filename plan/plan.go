// Package plan is the plan of a private run: everything that decides its
// noise and its privacy claim (workload, participation, strategy, target
// (eps, delta), neighbouring relation, calibration, clipping bound,
// learners, the algorithm) and the other settings a run needs (local
// steps, step sizes, model), the data the run was trained on when its
// operator gives it ([Data]: its source and SHA-256, which ofl evaluate
// checks), together with what they give: the
// factorization ([Plan.Factorize]) and the privacy record
// ([Plan.Calibrate]: the sensitivity and the rule that gave it, the noise
// std, eps, delta, the [OperatorDigest] of the factorization it was
// calibrated for, by which a fedopt server refuses the noise of another,
// and the plan's settings it was calibrated under, which [Plan.Validate]
// holds the plan to: see [Record]).
//
// A plan is a value: [Plan.Marshal] writes it as JSON and [Parse] reads it
// back bit for bit (every float64 round-trips exactly). mfsolve -json
// prints it; ofl builds its simulated runs from it, ofl server writes it
// into the run's state (run.json) and ofl evaluate reads it back from
// there instead of recomputing it.
//
// It is the only place the calibration recipe lives: [Plan.Calibrate]. The
// accountant supplies the mechanisms' curves and the release sensitivity
// rule (accountant.ReleaseSensitivity); factorize supplies the
// sensitivity of C under the participation; this package puts them
// together. Package fedopt imports plan (fedopt.PrivacyOf turns a
// calibrated plan into the record the optimiser checks, and
// experiment.Experiment.Plan is the plan of an experiment's noise); plan does
// not import fedopt, so the roles never see the recipe, only its result,
// and a plan is plain data that travels (JSON) to whoever runs it.
package plan

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/dpmf/dpmf/accountant"
	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/internal/param"
	"github.com/dpmf/dpmf/secagg"
)

// Format is the version of the plan's JSON encoding.
const Format = 1

// WorkloadPrefix is the prefix sums over the plan's rounds, the only
// workload [Plan.Factorize] builds; mfsolve records its other workloads by
// their flag value (momentum:BETA or a .npy file).
const WorkloadPrefix = "prefix"

// The algorithms a plan knows, by the names fedopt.Algorithm.String gives.
const (
	// AlgoCorrelated is Algorithm 1 of the paper (correlated noise).
	AlgoCorrelated = "correlated"
	// AlgoBaselineCorrelated is the baseline's update with correlated
	// noise.
	AlgoBaselineCorrelated = "baseline-correlated"
	// AlgoIndependent is the baseline with independent noise: the
	// identity factorization, and zCDP under the paper's calibration.
	AlgoIndependent = "independent"
	// AlgoNonPrivate adds no noise and has no privacy record.
	AlgoNonPrivate = "nonprivate"
)

// Plan is the plan of a run. The zero value of an optional field is its
// default; [Plan.Validate] checks a plan.
type Plan struct {
	// Format is [Format] (0 is read as Format).
	Format int `json:"format"`
	// Workload is [WorkloadPrefix] (the default) or, in a plan mfsolve
	// prints, its -workload value.
	Workload string `json:"workload"`
	// Rounds is R.
	Rounds int `json:"rounds"`
	// Participation is how often one sample takes part: single (the
	// default), epochs:K or minsep:B[,K] (factorize.ParseParticipation).
	// It is the string form of a factorize.Participation, the pattern
	// sensitivities are computed under ([Plan.Pattern] parses it);
	// accountant.Participation holds the same name in a per-round log.
	Participation string `json:"participation"`
	// Strategy is the factorization's strategy as [SpecOf] writes it
	// (optimal by default; identity for AlgoIndependent; empty for
	// AlgoNonPrivate).
	Strategy string `json:"strategy,omitempty"`
	// Algorithm is one of the Algo names (empty in a plan of mfsolve
	// without a calibration; mfsolve calibrates for AlgoCorrelated).
	Algorithm string `json:"algorithm,omitempty"`
	// Learners is n and Tau the local steps per round.
	Learners int `json:"learners,omitempty"`
	Tau      int `json:"tau,omitempty"`
	// Clip is the clipping bound B_g of every per-sample gradient.
	Clip float64 `json:"clip,omitempty"`
	// Eta, EtaG and EtaInd are the optimiser's step sizes (fedopt.Config).
	Eta    float64 `json:"eta,omitempty"`
	EtaG   float64 `json:"eta_g,omitempty"`
	EtaInd float64 `json:"eta_ind,omitempty"`
	// Model is the learners' model, if the plan is of a run.
	Model *Model `json:"model,omitempty"`
	// SeedSHA256 identifies the seed of the run's data and noise without
	// revealing it (the seed gives the noise key): [SeedDigest]. Empty
	// when the noise key was drawn at random.
	SeedSHA256 string `json:"seed_sha256,omitempty"`
	// Data identifies the data the run was trained on, when its operator
	// gave it (ofl server -data); nil in a plan that records none (a
	// plan of mfsolve, of a server without -data, or written before
	// plans recorded it).
	Data *Data `json:"data,omitempty"`
	// Target is the privacy budget and how to calibrate to it; nil for
	// AlgoNonPrivate and for a plan of mfsolve without -eps/-delta.
	Target *Target `json:"target,omitempty"`
	// Privacy is the record [Plan.Calibrate] made: nil before.
	Privacy *Record `json:"privacy,omitempty"`
	// SecureAggregation, if not nil, is the run's secure aggregation: the
	// learners' updates are quantized to the ring Z_{2^64} and the server
	// learns only their sum ([NewSecureAggregation] fills it).
	SecureAggregation *SecureAggregation `json:"secure_aggregation,omitempty"`
}

// SecureAggregation is the secure aggregation of a run (package secagg):
// its threshold, the number of colluding learners it is assumed to
// withstand, its ring and the quantization of the updates. Every field but
// Threshold and Colluders follows from the plan's learners, tau, clip and
// Dim, and [Plan.Validate] recomputes them: a plan is data that travels.
type SecureAggregation struct {
	// Threshold is T, the least number of learners that must survive each
	// phase of the protocol for a round's sum to be unmasked: n/2 < T <= n.
	Threshold int `json:"threshold"`
	// Colluders is c, the most learners the run assumes may pool their
	// records with the server's: the server learns no more than the
	// rounds' sums only if it colludes with at most c learners, and the
	// plan requires 0 <= c < T and 2T > n + c ([CheckColluders]; see
	// docs/distributed.md, "Restarts and attempts"). 0 (the default, and
	// what a plan written before the field reads as) assumes a server
	// that colludes with no learner; every threshold allows it. The
	// default threshold floor(2n/3) + 1 allows c up to [MaxColluders] of
	// it, 2 floor(2n/3) + 1 - n: 3 of n = 10.
	Colluders int `json:"colluders,omitempty"`
	// RingBits is the width of the ring Z_{2^RingBits}: 64.
	RingBits int `json:"ring_bits"`
	// ScaleBits is k: an update's entry u is sent as round(u 2^k), k the
	// largest integer with n (tau B_g 2^k + 1/2) <= 2^53
	// (secagg.NewQuantizer), so the sum of n updates is an integer of
	// magnitude at most 2^53: it never wraps and its float64 read-back is
	// exact. A plan of an older dpmf, whose k was chosen for 2^62 (nine
	// bits more, and a read-back that rounds), is refused.
	ScaleBits int `json:"scale_bits"`
	// Dim is d, the model's parameter count.
	Dim int `json:"dim"`
	// QuantizationTerm is sqrt(d) 2^{-k-1} (rounded up), the L2 bound on
	// how far quantization moves one update (secagg.Quantizer.Term).
	QuantizationTerm float64 `json:"quantization_term"`
}

// DefaultThreshold is the threshold T of n learners when none is given:
// floor(2n/3) + 1.
func DefaultThreshold(n int) int { return 2*n/3 + 1 }

// MaxColluders is the largest number c of colluding learners that secure
// aggregation of n learners with threshold T withstands: 2T - n - 1, the
// largest c with 2T > n + c (negative when T <= n/2, which no plan takes).
func MaxColluders(n, threshold int) int { return 2*threshold - n - 1 }

// CheckColluders checks that secure aggregation of n learners with
// threshold T withstands c colluding learners: 0 <= c < T and 2T > n + c.
// A colluder holds its own share of every secret, so with 2T <= n + c the
// server and its colluders can complete two attempts of a round (or two
// survivor sets of one) and learn the difference of their sums.
func CheckColluders(n, threshold, c int) error {
	if c >= 0 && c < threshold && 2*threshold > n+c {
		return nil
	}
	fix := fmt.Sprintf("raise the threshold to %d or more, or lower the colluders", (n+c)/2+1)
	switch {
	case c < 0:
		fix = "c counts learners"
	case c >= n:
		fix = "no threshold T <= n allows c >= n; lower the colluders"
	}
	return fmt.Errorf("colluders %d with threshold %d of %d learners: want 0 <= c < T and 2T > n + c (T = %d allows c <= %d): %s",
		c, threshold, n, threshold, max(MaxColluders(n, threshold), -1), fix)
}

// NewSecureAggregation returns the secure aggregation of n learners with
// tau local steps, clipping bound clip and models of dim parameters, with
// threshold T (0: [DefaultThreshold]) and no colluders assumed (set
// Colluders and call [Plan.Validate] to assume some).
func NewSecureAggregation(n, tau int, clip float64, dim, threshold int) (*SecureAggregation, error) {
	threshold = cmp.Or(threshold, DefaultThreshold(n))
	if dim < 1 {
		return nil, fmt.Errorf("plan: secure aggregation with dim %d, want the model's parameter count >= 1", dim)
	}
	q, err := secagg.NewQuantizer(n, tau, clip)
	if err != nil {
		return nil, fmt.Errorf("plan: secure aggregation: %s", strings.TrimPrefix(err.Error(), "secagg: "))
	}
	sa := &SecureAggregation{Threshold: threshold, RingBits: secagg.RingBits, ScaleBits: q.ScaleBits, Dim: dim, QuantizationTerm: q.Term(dim)}
	if err := sa.validate(n, tau, clip); err != nil {
		return nil, err
	}
	return sa, nil
}

// Quantizer returns the quantizer of the secure aggregation.
func (sa *SecureAggregation) Quantizer() secagg.Quantizer {
	return secagg.Quantizer{ScaleBits: sa.ScaleBits}
}

// validate checks the secure aggregation against the plan's n, tau and clip.
func (sa *SecureAggregation) validate(n, tau int, clip float64) error {
	bad := func(name string, v any, want string) error {
		return fmt.Errorf("plan: secure_aggregation.%s %v, want %s", name, v, want)
	}
	q, qerr := secagg.NewQuantizer(n, tau, clip)
	switch {
	case n < 1 || tau < 1 || !(clip > 0):
		return fmt.Errorf("plan: secure aggregation needs learners >= 1, tau >= 1 and clip > 0, got %d, %d and %v", n, tau, clip)
	case n < 2 || n > secagg.MaxLearners:
		// The protocol needs two learners at least (one learner's "sum" is
		// its update) and its Shamir shares over GF(2^8) at most 255.
		return fmt.Errorf("plan: secure aggregation with %d learners, want 2..%d", n, secagg.MaxLearners)
	case !(2*sa.Threshold > n && sa.Threshold <= n):
		return bad("threshold", sa.Threshold, fmt.Sprintf("n/2 < T <= n for n = %d (default %d)", n, DefaultThreshold(n)))
	case CheckColluders(n, sa.Threshold, sa.Colluders) != nil:
		return fmt.Errorf("plan: secure_aggregation.%v", CheckColluders(n, sa.Threshold, sa.Colluders))
	case sa.RingBits != secagg.RingBits:
		return bad("ring_bits", sa.RingBits, fmt.Sprint(secagg.RingBits))
	case sa.Dim < 1:
		return bad("dim", sa.Dim, "the model's parameter count >= 1")
	case qerr != nil:
		return fmt.Errorf("plan: secure aggregation: %s", strings.TrimPrefix(qerr.Error(), "secagg: "))
	case sa.ScaleBits != q.ScaleBits:
		return bad("scale_bits", sa.ScaleBits, fmt.Sprintf("%d (the largest k with n (tau clip 2^k + 1/2) <= 2^53, where the sum's read-back is exact, for n = %d, tau = %d, clip = %v)", q.ScaleBits, n, tau, clip))
	case sa.QuantizationTerm != q.Term(sa.Dim):
		return bad("quantization_term", sa.QuantizationTerm, fmt.Sprintf("%v (sqrt(%d) 2^-%d)", q.Term(sa.Dim), sa.Dim, q.ScaleBits+1))
	}
	return nil
}

// Model is the learners' per-sample loss.
type Model struct {
	// Name is "logistic" or a model the caller gives the learners.
	Name string `json:"name"`
	// Features is the feature dimension d.
	Features int `json:"features"`
	// L2 is the L2 coefficient of the loss.
	L2 float64 `json:"l2"`
}

// Data identifies the data set of a run: its source as the operator gave
// it, and a digest of the data set the learners were dealt.
type Data struct {
	// Source is the data's spec: "synthetic:alpha=A,beta=B" for the
	// built-in synthetic data (generated from the run's seed, which the
	// plan's SeedSHA256 identifies), or "csv:NAME" for a CSV file, NAME
	// its base name.
	Source string `json:"source"`
	// Split is how a CSV file's rows were dealt to the learners (iid,
	// label or feature:K); empty for synthetic data.
	Split string `json:"split,omitempty"`
	// SHA256 is the SHA-256 of the data set as the learners were dealt
	// it (dataset.Dataset.SHA256: its shape, features and labels), in
	// lower-case hexadecimal. It changes with the file's contents, the
	// split, the seed and the synthetic data's parameters.
	SHA256 string `json:"sha256"`
}

// validate checks the data record's fields.
func (d *Data) validate() error {
	synthetic := strings.HasPrefix(d.Source, "synthetic:")
	switch {
	case !synthetic && (!strings.HasPrefix(d.Source, "csv:") || d.Source == "csv:"):
		return bad("data.source", strconv.Quote(d.Source), "synthetic:alpha=A,beta=B or csv:NAME")
	case synthetic && d.Split != "":
		return bad("data.split", strconv.Quote(d.Split), "none for synthetic data (it is split by learner)")
	case !synthetic && d.Split == "":
		return bad("data.split", `""`, "the split of a CSV file's rows (iid, label or feature:K)")
	case !isDigest(d.SHA256):
		return bad("data.sha256", strconv.Quote(d.SHA256), "64 lower-case hexadecimal digits")
	}
	return nil
}

// isDigest reports whether s is a SHA-256 in lower-case hexadecimal.
func isDigest(s string) bool {
	return len(s) == 2*sha256.Size && strings.Trim(s, "0123456789abcdef") == ""
}

// Target is the guarantee a plan is calibrated for.
type Target struct {
	// Eps and Delta are the (eps, delta)-DP budget of the whole release.
	Eps   float64 `json:"eps"`
	Delta float64 `json:"delta"`
	// Calibration is exact or paper.
	Calibration Calibration `json:"calibration"`
	// Relation is replace-one (the default) or add-remove.
	Relation string `json:"relation"`
	// Sampling is the probability q of cyclic Poisson sampling for the
	// amplified banded accounting (0: none).
	Sampling float64 `json:"sampling,omitempty"`
}

// Record is a plan's privacy record: what the calibration gave ([Plan]'s
// Privacy, recorded in a run's run.json). Of dpmf's three Records it is
// the one a user normally wants: the guarantee a run is bound to. From it
// fedopt.PrivacyOf derives an accountant.Record per round, the entries a
// trace logs (each stating this same guarantee for the whole release);
// factorize.Record is unrelated, a factorization's stored form (the cache).
type Record struct {
	// Eps and Delta are the guarantee of the whole release.
	Eps   float64 `json:"eps"`
	Delta float64 `json:"delta"`
	// Method is the accountant's method (exact, paper, zcdp) or
	// MethodAmplified.
	Method string `json:"method"`
	// Sensitivity is the L2 sensitivity of the release C G (per
	// participation for MethodAmplified) and Rule the rule that gave it,
	// in words.
	Sensitivity float64 `json:"sensitivity"`
	Rule        string  `json:"rule"`
	// NoiseStd is the standard deviation V of every noise entry; Sigma is
	// V / Sensitivity, the noise multiplier.
	NoiseStd float64 `json:"noise_std"`
	Sigma    float64 `json:"sigma"`
	// Gamma is the largest column norm of C, and Loss the factorization's
	// loss (its metrics: sens^2 ||B||_F^2 under the participation).
	Gamma float64 `json:"gamma"`
	Loss  float64 `json:"loss"`
	// UnitSensitivity is the sensitivity of C under the participation,
	// exact or an upper bound as UnitExact says, by the rule UnitRule.
	UnitSensitivity float64 `json:"unit_sensitivity"`
	UnitExact       bool    `json:"unit_sensitivity_exact"`
	UnitRule        string  `json:"unit_sensitivity_rule"`
	// QuantizationTerm is the secure aggregation's quantization term
	// sqrt(d) 2^{-k-1} and EffectiveClip the clipping bound B_g' the
	// sensitivity was computed with ([Plan.EffectiveClip]); both are 0
	// without secure aggregation (the sensitivity then uses the plan's
	// Clip).
	QuantizationTerm float64 `json:"quantization_term,omitempty"`
	EffectiveClip    float64 `json:"effective_clip,omitempty"`
	// OperatorSHA256 identifies the factorization the record was
	// calibrated for ([OperatorDigest]: its noise operator and so its C),
	// in lower-case hexadecimal; a fedopt server refuses a noise mechanism
	// of another factorization. Empty in a record of a factorization that
	// cannot stream (a loss-only result) or written before records held
	// it: no server accepts such a record.
	OperatorSHA256 string `json:"operator_sha256,omitempty"`

	// The settings of the plan the record was calibrated under, as
	// [Plan.Calibrate] read them: [Plan.Validate] (so [Parse], and
	// fedopt.PrivacyOf, which copies the record) refuses a record whose
	// plan says otherwise, in one line naming the setting and both
	// values; calibrate the plan again after changing one. Each enters the
	// guarantee or the record's rule: C's sensitivity depends on the
	// participation, the rounds, the workload and strategy the solver was
	// given; the release sensitivity on the algorithm (tau for Algorithm 1
	// with add-remove, sampling or secure aggregation), the learners, the
	// clip and the relation; the amplified accounting on the sampling.
	// Two edits whose effects cancel in the release sensitivity (learners
	// and clip doubled together) are refused too: the rule would name
	// settings the plan no longer has.
	//
	// Participation is the name of the plan's participation pattern as
	// factorize.Participation.String writes it (single, epochs:K,
	// minsep:B or minsep:B,K), the pattern the sensitivity of C is under;
	// Workload is the plan's (prefix when empty); Strategy the spec of
	// the plan's strategy as factorize writes it (optimal when empty,
	// identity for the independent algorithm); Algorithm the plan's
	// (empty in a plan of an unnamed algorithm); Tau 0 when the plan does
	// not set it; Relation the target's relation by name (replace-one
	// when empty) and Sampling its q.
	//
	// A record without Participation was written by a dpmf before records
	// named these settings (a run.json of an older run): Validate refuses
	// it, with a message that says to calibrate the plan again. It is not
	// accepted on a recomputation of its sensitivity of C: Validate has
	// no factorization (computing one is the cost [Plan.VerifyRecord]
	// pays), a solver's last digits differ between machines so an exact
	// match is not to be had, and the rounds, strategy and other settings
	// such a record was calibrated under are nowhere in it.
	Participation string  `json:"participation"`
	Workload      string  `json:"workload"`
	Rounds        int     `json:"rounds"`
	Strategy      string  `json:"strategy"`
	Algorithm     string  `json:"algorithm,omitempty"`
	Learners      int     `json:"learners"`
	Tau           int     `json:"tau,omitempty"`
	Clip          float64 `json:"clip"`
	Relation      string  `json:"relation"`
	Sampling      float64 `json:"sampling,omitempty"`
}

// MethodAmplified is the Record.Method of the amplified banded accounting.
const MethodAmplified = "amplified-banded-pld"

// Calibration selects how the noise std is set from a budget (eps, delta).
type Calibration int

const (
	// Exact calibrates with the exact (analytic Gaussian) privacy curve to
	// the release sensitivity under the relation and participation: the
	// least noise that gives (eps, delta)-DP.
	Exact Calibration = iota
	// Paper reproduces the paper's formulas: for correlated noise
	// V^2 = 4 gamma^2 B_g^2 (2 log(1/delta) + eps) / eps^2 (its Theorem
	// 1), for the independent baseline V^2 = 2 B_g^2 / rho with
	// rho = (sqrt(eps + log(1/delta)) - sqrt(log(1/delta)))^2 (zCDP).
	// Both use sensitivities n times larger than Exact's and conservative
	// conversions.
	Paper
)

// calibrationNames are the calibrations' names, by value.
var calibrationNames = []string{Exact: "exact", Paper: "paper"}

// String returns "exact" or "paper".
func (c Calibration) String() string {
	if c >= 0 && int(c) < len(calibrationNames) {
		return calibrationNames[c]
	}
	return fmt.Sprintf("Calibration(%d)", int(c))
}

// ParseCalibration parses "exact" or "paper".
func ParseCalibration(s string) (Calibration, error) {
	if c := slices.Index(calibrationNames, s); c >= 0 {
		return Calibration(c), nil
	}
	return 0, &param.Error{Param: "calibration", Value: param.Quote(s), Want: "exact or paper"}
}

// MarshalText writes the name.
func (c Calibration) MarshalText() ([]byte, error) {
	if c != Exact && c != Paper {
		return nil, fmt.Errorf("plan: invalid %v", c)
	}
	return []byte(c.String()), nil
}

// UnmarshalText reads a name [ParseCalibration] accepts.
func (c *Calibration) UnmarshalText(b []byte) error {
	v, err := ParseCalibration(string(b))
	if err != nil {
		return err
	}
	*c = v
	return nil
}

// SpecOf returns the strategy's entry in a plan: the one place a strategy
// value becomes the string [Plan.Factorize] parses back, its full spec
// (s.Spec(), "banded:bands=64"; optimal for nil). Loss-only and progress
// are not part of a spec: [Plan.Factorize] sets them from the
// participation.
func SpecOf(s factorize.Strategy) string {
	if s == nil {
		return factorize.StrategyOptimal
	}
	return s.Spec()
}

// SeedDigest is the SHA-256 of seed's 8 little-endian bytes, in hex: what
// a plan records of a seed.
func SeedDigest(seed uint64) string {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seed)
	h := sha256.Sum256(b[:])
	return hex.EncodeToString(h[:])
}

// Marshal returns the plan's JSON, with Format, and the workload and
// participation written out where they are empty (their defaults).
func (p *Plan) Marshal() ([]byte, error) {
	if p == nil {
		return nil, errNilPlan
	}
	q := *p
	q.Format, q.Workload = Format, q.workload()
	q.Participation = cmp.Or(q.Participation, "single")
	if err := checkFinite(&q); err != nil {
		return nil, err
	}
	return json.Marshal(&q)
}

// Parse reads a plan's JSON (as [Plan.Marshal] writes it): unknown fields,
// a key not spelled exactly as Marshal writes it ("Rounds", "ROUNDS"), a
// key repeated in one object and trailing data are errors, a missing
// format is read as [Format], and the plan must validate (including its
// privacy record against the plan and its target).
func Parse(data []byte) (*Plan, error) {
	if err := checkKeys(data); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var p Plan
	if err := dec.Decode(&p); err != nil {
		var te *json.UnmarshalTypeError
		switch {
		case errors.Is(err, io.EOF):
			return nil, fmt.Errorf("plan: empty input, want a plan's JSON object")
		case errors.Is(err, io.ErrUnexpectedEOF):
			return nil, fmt.Errorf("plan: the JSON ends before the plan's object does, want a plan's JSON object whole: %w", err)
		case errors.As(err, &te) && te.Field == "":
			return nil, fmt.Errorf("plan: a JSON %s, want a plan's JSON object: %w", te.Value, err)
		}
		return nil, wrap(err)
	}
	if dec.More() {
		return nil, fmt.Errorf("plan: data after the plan's JSON object")
	}
	if p.Format == 0 { // absent: the current format, as documented
		p.Format = Format
	}
	if p.Format != Format {
		return nil, fmt.Errorf("plan: format %d, want %d", p.Format, Format)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

// checkKeys returns an error naming the first key of data that appears
// twice in one JSON object, or that is not spelled as a plan's field names
// are (lower-case ASCII letters, digits and '_'): encoding/json keeps the
// last of two keys, and matches a key to a field without regard to case
// (Unicode's simple folding), so a plan with "rounds":8 and "rounds":9, or
// "rounds":8 and "ROUNDS":9, would otherwise read as 9 whatever another
// reader of the file takes it to say. Malformed JSON is left to the
// decoder's error.
func checkKeys(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	// The keys so far of each open object, or nil for an open array; key
	// says that the next token of the innermost object is a key.
	var open []map[string]bool
	key := false
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		switch t := tok.(type) {
		case json.Delim:
			if t == '{' || t == '[' {
				var keys map[string]bool
				if t == '{' {
					keys = map[string]bool{}
				}
				open, key = append(open, keys), t == '{'
				continue
			}
			if open = open[:len(open)-1]; len(open) == 0 {
				return nil
			}
		case string:
			if key {
				if strings.TrimFunc(t, func(r rune) bool { return r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' }) != "" {
					return fmt.Errorf("plan: key %q, want a field name as the plan writes it (lower case)", t)
				}
				if open[len(open)-1][t] {
					return fmt.Errorf("plan: key %q twice in one object, want each key at most once", t)
				}
				open[len(open)-1][t], key = true, false
				continue
			}
		}
		// A value has ended: in an object, a key comes next.
		key = len(open) > 0 && open[len(open)-1] != nil
	}
}

// checkFinite refuses what JSON cannot hold, naming the first such field.
func checkFinite(p *Plan) error {
	type field struct {
		name string
		v    float64
	}
	vals := []field{{"clip", p.Clip}, {"eta", p.Eta}, {"eta_g", p.EtaG}, {"eta_ind", p.EtaInd}}
	if p.Model != nil {
		vals = append(vals, field{"l2", p.Model.L2})
	}
	if t := p.Target; t != nil {
		vals = append(vals, field{"eps", t.Eps}, field{"delta", t.Delta}, field{"sampling", t.Sampling})
	}
	if r := p.Privacy; r != nil {
		vals = append(vals, field{"privacy.eps", r.Eps}, field{"privacy.delta", r.Delta}, field{"privacy.sensitivity", r.Sensitivity},
			field{"privacy.noise_std", r.NoiseStd}, field{"privacy.sigma", r.Sigma}, field{"privacy.gamma", r.Gamma},
			field{"privacy.loss", r.Loss}, field{"privacy.unit_sensitivity", r.UnitSensitivity},
			field{"privacy.quantization_term", r.QuantizationTerm}, field{"privacy.effective_clip", r.EffectiveClip},
			field{"privacy.clip", r.Clip}, field{"privacy.sampling", r.Sampling})
	}
	if sa := p.SecureAggregation; sa != nil {
		vals = append(vals, field{"secure_aggregation.quantization_term", sa.QuantizationTerm})
	}
	for _, f := range vals {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			return fmt.Errorf("plan: %s is %v, want a finite number", f.name, f.v)
		}
	}
	return nil
}

// Validate checks the plan's fields: a one-line error names the first that
// is wrong and what it should be.
func (p *Plan) Validate() error {
	if p == nil {
		return errNilPlan
	}
	if err := checkFinite(p); err != nil {
		return err
	}
	if p.Rounds < 1 || p.Rounds > factorize.MaxRounds {
		return bad("rounds", p.Rounds, fmt.Sprintf(">= 1 and <= %d (factorize.MaxRounds)", factorize.MaxRounds))
	}
	part, err := p.Pattern()
	if err != nil {
		return err
	}
	// Every workload: a plan of another workload (mfsolve's) has its R
	// as Rounds too.
	if err := part.Validate(p.Rounds); err != nil {
		return wrap(err)
	}
	switch p.Algorithm {
	case "", AlgoCorrelated, AlgoBaselineCorrelated, AlgoIndependent:
		if _, err := p.strategy(); err != nil {
			return err
		}
	case AlgoNonPrivate:
		if p.Target != nil || p.Privacy != nil || p.Strategy != "" {
			return bad("algorithm", p.Algorithm, "no strategy, target or privacy record (it adds no noise)")
		}
	default:
		return bad("algorithm", strconv.Quote(p.Algorithm), "correlated, baseline-correlated, independent or nonprivate")
	}
	if p.Algorithm == AlgoIndependent && p.Strategy != "" {
		if s, err := factorize.ParseStrategy(p.Strategy); err != nil {
			return wrap(err)
		} else if _, ok := s.(factorize.IdentityStrategy); !ok {
			return bad("strategy", strconv.Quote(p.Strategy), "identity for the independent algorithm")
		}
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"learners", p.Learners}, {"tau", p.Tau}} {
		if f.v < 0 {
			return bad(f.name, f.v, ">= 1 (or 0: not set)")
		}
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"clip", p.Clip}, {"eta", p.Eta}, {"eta_g", p.EtaG}, {"eta_ind", p.EtaInd}} {
		if f.v < 0 {
			return bad(f.name, f.v, ">= 0")
		}
	}
	switch d, m := p.SeedSHA256, p.Model; {
	case d != "" && !isDigest(d):
		return bad("seed_sha256", strconv.Quote(d), "64 lower-case hexadecimal digits (SeedDigest), or none")
	case m != nil && (m.Name == "" || m.Features < 1 || m.L2 < 0):
		return bad("model", fmt.Sprintf("%+v", *m), "a name, features >= 1 and l2 >= 0")
	}
	if p.Data != nil {
		if err := p.Data.validate(); err != nil {
			return err
		}
	}
	if t := p.Target; t != nil {
		if err := t.validate(p); err != nil {
			return err
		}
	}
	if p.Privacy != nil && p.Target == nil {
		return bad("privacy record", "without a target", "a target (eps, delta) it was calibrated for")
	}
	// A record's quantization term and effective clip: 0 without secure
	// aggregation.
	var term, eff float64
	if sa := p.SecureAggregation; sa != nil {
		if err := sa.validate(p.Learners, p.Tau, p.Clip); err != nil {
			return err
		}
		if m := p.Model; m != nil && m.Name == "logistic" && sa.Dim != m.Features {
			return bad("secure_aggregation.dim", sa.Dim, fmt.Sprintf("the logistic model's %d parameters", m.Features))
		}
		term, eff = sa.QuantizationTerm, p.EffectiveClip()
	}
	if p.Privacy != nil {
		if err := p.checkCalibratedUnder(); err != nil {
			return err
		}
	}
	switch r := p.Privacy; {
	case r == nil:
		return nil
	case r.QuantizationTerm != term:
		return bad("privacy.quantization_term", r.QuantizationTerm, fmt.Sprintf("%v, the secure aggregation's (0 without)", term))
	case r.EffectiveClip != eff:
		return bad("privacy.effective_clip", r.EffectiveClip, fmt.Sprintf("%v (B_g plus the quantization term's share; 0 without secure aggregation)", eff))
	}
	return p.checkRecord()
}

// errLegacyRecord is Validate's error for a record without the settings
// it was calibrated under ([Record]'s Participation and those after it).
var errLegacyRecord = errors.New("plan: privacy record without its participation (a record of a dpmf from before records named the participation, rounds and other settings they were calibrated under): the participation its sensitivity of C is under cannot be checked; calibrate the plan again (plan.Plan.Calibrate: mfsolve -eps -delta, or ofl in a fresh -state; finish an older run with the dpmf that started it)")

// checkCalibratedUnder checks that the plan's privacy record was
// calibrated under the plan's settings ([Record]'s Participation and those
// after it): a plan edited after its calibration is refused, naming the
// setting and both values. The plan's fields are checked by Validate
// before.
func (p *Plan) checkCalibratedUnder() error {
	r := p.Privacy
	if r.Participation == "" {
		return errLegacyRecord
	}
	part, _ := p.Pattern()        // checked by Validate
	spec, _ := p.strategySpec()   // checked by Validate
	rel, _ := p.Target.relation() // checked by Target.validate
	for _, f := range []struct {
		name      string
		rec, plan any
	}{
		{"participation", r.Participation, part.String()}, {"rounds", r.Rounds, p.Rounds},
		{"workload", r.Workload, p.workload()}, {"strategy", r.Strategy, spec},
		{"algorithm", r.Algorithm, p.Algorithm}, {"relation", r.Relation, rel.String()},
		{"sampling", r.Sampling, p.Target.Sampling}, {"learners", r.Learners, p.Learners},
		{"tau", r.Tau, p.Tau}, {"clip", r.Clip, p.Clip},
	} {
		if f.rec == f.plan {
			continue
		}
		v, w := fmt.Sprint(f.rec), fmt.Sprint(f.plan)
		if _, ok := f.rec.(string); ok {
			v, w = strconv.Quote(v), strconv.Quote(w)
		}
		return fmt.Errorf("plan: privacy.%s %s, but the plan's %s is %s: the record was calibrated under another %s; calibrate the plan again (plan.Plan.Calibrate)", f.name, v, f.name, w, f.name)
	}
	return nil
}

// checkRecord checks that the plan's privacy record is one [Plan.Calibrate]
// can have written for the plan: the target's (eps, delta), the method the
// target and algorithm select, positive sensitivities and noise, the
// release sensitivity of the plan's clip, learners and relation at the
// record's unit sensitivity (gamma for the amplified accounting), and a
// noise std that is the record's sigma times its sensitivity. The noise
// must also give (eps, delta)-DP: at the record's sensitivity by the exact
// curve (accountant.Record.Verify), or for the amplified accounting at the
// record's sigma by the PLD accountant's safe bound (checkAmplifiedSigma):
// a record read back from a file is data, and the privacy claim of a run
// must not rest on its having been written by Calibrate. The record's
// gamma, unit sensitivity and loss are the factorization's: checking them
// means computing it again, which [Plan.VerifyRecord] does.
func (p *Plan) checkRecord() error {
	r, t := p.Privacy, p.Target
	if r.Eps != t.Eps || r.Delta != t.Delta {
		return bad("privacy (eps, delta)", fmt.Sprintf("(%v, %v)", r.Eps, r.Delta), fmt.Sprintf("the target's (%v, %v)", t.Eps, t.Delta))
	}
	am, learners := p.method()
	method, unit := am.String(), r.UnitSensitivity
	if t.Sampling > 0 {
		// The release sensitivity of one participation, at gamma.
		method, learners, unit = MethodAmplified, p.Learners, r.Gamma
	}
	if r.Method != method {
		return bad("privacy.method", strconv.Quote(r.Method), fmt.Sprintf("%q for the %s calibration of this plan", method, t.Calibration))
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"privacy.sensitivity", r.Sensitivity}, {"privacy.noise_std", r.NoiseStd}, {"privacy.sigma", r.Sigma},
		{"privacy.gamma", r.Gamma}, {"privacy.unit_sensitivity", r.UnitSensitivity}} {
		if !(f.v > 0) {
			return bad(f.name, f.v, "a finite number > 0")
		}
	}
	if !(r.Loss >= 0) {
		return bad("privacy.loss", r.Loss, "a finite number >= 0")
	}
	if r.OperatorSHA256 != "" && !isDigest(r.OperatorSHA256) {
		return bad("privacy.operator_sha256", strconv.Quote(r.OperatorSHA256), "64 lower-case hexadecimal digits (OperatorDigest) or none")
	}
	rel, _ := t.relation() // checked by Target.validate
	sens, err := accountant.ReleaseSensitivity(p.EffectiveClip(), learners, rel, unit)
	if err != nil {
		return wrap(err)
	}
	if r.Sensitivity != sens {
		return bad("privacy.sensitivity", r.Sensitivity, fmt.Sprintf("%v, the release sensitivity of the plan's clip, learners and relation at the record's %s", sens,
			map[bool]string{true: "gamma", false: "unit sensitivity"}[method == MethodAmplified]))
	}
	if method == MethodAmplified {
		if std, err := accountant.Scale(r.Sigma, r.Sensitivity); err != nil || r.NoiseStd != std {
			return bad("privacy.noise_std", r.NoiseStd, fmt.Sprintf("%v, the record's sigma times its sensitivity (rounded up)", std))
		}
		return p.checkAmplifiedSigma()
	}
	if r.Sigma != r.NoiseStd/r.Sensitivity {
		return bad("privacy.sigma", r.Sigma, fmt.Sprintf("%v, the record's noise std over its sensitivity", r.NoiseStd/r.Sensitivity))
	}
	ar := accountant.Record{Eps: r.Eps, Delta: r.Delta, Method: accountant.Exact, Sensitivity: r.Sensitivity, NoiseStd: r.NoiseStd, Participation: accountant.Participation(p.Participation)}
	if err := ar.Verify(); err != nil {
		return bad("privacy.noise_std", r.NoiseStd, fmt.Sprintf("noise that gives the target (%v, %v)-DP at sensitivity %v (%v)", t.Eps, t.Delta, r.Sensitivity, err))
	}
	return nil
}

// checkAmplifiedSigma checks that the amplified record's sigma gives the
// target: the PLD accountant's safe eps at the target's delta, over the
// ceil(R/b) compositions of cyclic Poisson sampling with probability q
// under minsep:b, is at most the target's eps. Calibrate refuses a sigma
// that fails this same check, so every record it writes passes.
func (p *Plan) checkAmplifiedSigma() error {
	r, t := p.Privacy, p.Target
	part, _ := p.Pattern() // checked by Validate
	if part.Kind != factorize.KindMinSep {
		return bad("participation", part, "minsep:B for the amplified accounting (sampling over B groups)")
	}
	rel, _ := t.relation()
	eb, err := amplifiedEps(context.Background(), t.Sampling, r.Sigma, p.Rounds, part.B, t.Delta, rel)
	if err != nil {
		return bad("privacy.sigma", r.Sigma, fmt.Sprintf("a noise multiplier the PLD accountant can bound (%v)", strings.TrimPrefix(err.Error(), "accountant: ")))
	}
	if eb.Safe > t.Eps {
		return bad("privacy.sigma", r.Sigma, fmt.Sprintf("noise that gives the target (%v, %v)-DP (the PLD accountant's eps at this sigma is %v)", t.Eps, t.Delta, eb.Safe))
	}
	return nil
}

// amplifiedEps returns the PLD accountant's bounds on the eps at delta of
// the amplified banded accounting: ceil(n/b) compositions of the
// Poisson-subsampled Gaussian (q, sigma) under rel
// ([accountant.SampledGaussianEpsilonBounds], its PLD stopped by ctx).
// Calibrate records them and Parse checks a record with them.
func amplifiedEps(ctx context.Context, q, sigma float64, n, b int, delta float64, rel accountant.Relation) (accountant.Bounds, error) {
	k, err := accountant.BandedCompositions(n, b)
	if err != nil {
		return accountant.Bounds{}, err
	}
	p, err := accountant.SampledGaussianContext(ctx, q, sigma, k, rel)
	if err != nil {
		return accountant.Bounds{}, err
	}
	return p.EpsilonBounds(delta)
}

func (t *Target) validate(p *Plan) error {
	rel, err := t.relation()
	switch {
	case !(t.Eps > 0):
		return bad("eps", t.Eps, "a finite number > 0")
	case !(t.Delta > 0 && t.Delta < 1):
		return bad("delta", t.Delta, "0 < delta < 1")
	case t.Calibration != Exact && t.Calibration != Paper:
		return bad("calibration", t.Calibration, "exact or paper")
	case err != nil:
		return wrap(err)
	case rel == accountant.AddRemove && (p.Algorithm == AlgoCorrelated || p.Algorithm == "") && p.Tau > 1:
		// Without the sample its learner's later local steps start from
		// other points: every one of their clipped gradients may change,
		// so the update moves by up to (2 tau - 1) B_g, not tau B_g. A
		// record read back must not claim it either.
		return fmt.Errorf("plan: add-remove neighbours with the correlated algorithm and tau = %d local steps: removing a sample moves its learner's later local steps too, so the add-remove sensitivity does not hold; use replace-one (or tau = 1)", p.Tau)
	case t.Sampling != 0 && !(t.Sampling > 0 && t.Sampling <= 1):
		return bad("sampling", t.Sampling, "a probability in (0, 1] (or 0: none)")
	case rel == accountant.ReplaceOne && t.Sampling > 0 && t.Sampling < 1 && (p.Algorithm == AlgoCorrelated || p.Algorithm == "") && p.Tau > 1:
		// The sampled replace-one pair bounds each of the two samples'
		// effect against the round without either by B_g (per local
		// step): with local steps the round with the sample moves its
		// learner's later steps too, by up to (2 tau - 1) B_g in all,
		// as for add/remove.
		return fmt.Errorf("plan: replace-one neighbours with sampling q = %v < 1, the correlated algorithm and tau = %d local steps: the sampled accounting compares a round with the sample against one without it, where its learner's later local steps move too, so its bound does not hold; use tau = 1 or sampling 1", t.Sampling, p.Tau)
	case t.Sampling != 0 && t.Calibration != Exact:
		return bad("calibration", t.Calibration, "exact with sampling (the PLD accountant)")
	case p.Learners < 1:
		return bad("learners", p.Learners, ">= 1 for a calibration")
	case !(p.Clip > 0):
		return bad("clip", p.Clip, "a finite number > 0 for a calibration")
	}
	return nil
}

// relation returns the target's neighbouring relation (replace-one when
// empty).
func (t *Target) relation() (accountant.Relation, error) {
	if t.Relation == "" {
		return accountant.ReplaceOne, nil
	}
	return accountant.ParseRelation(t.Relation)
}

// workload returns the workload's name ([WorkloadPrefix] when empty).
func (p *Plan) workload() string { return cmp.Or(p.Workload, WorkloadPrefix) }

// Pattern returns the participation pattern of the plan (single when
// empty).
func (p *Plan) Pattern() (factorize.Participation, error) {
	if p.Participation == "" {
		return factorize.SingleParticipation(), nil
	}
	part, err := factorize.ParseParticipation(p.Participation)
	if err != nil {
		return part, wrap(err)
	}
	return part, nil
}

// Epochs returns K for participation epochs:K, and 1 otherwise.
func (p *Plan) Epochs() int {
	part, err := p.Pattern()
	if err != nil || part.Kind != factorize.KindEpochs {
		return 1
	}
	return part.K
}

// Private reports whether the plan's algorithm adds noise.
func (p *Plan) Private() bool { return p.Algorithm != AlgoNonPrivate }

// strategySpec returns the spec of the plan's strategy as factorize
// writes it: optimal when the plan names none, identity for the
// independent algorithm (what a record names, [Record]'s Strategy).
func (p *Plan) strategySpec() (string, error) {
	s, err := p.parsedStrategy()
	if err != nil {
		return "", err
	}
	return s.Spec(), nil
}

// parsedStrategy returns the plan's strategy as named: optimal when the
// plan names none, identity for the independent algorithm.
func (p *Plan) parsedStrategy() (factorize.Strategy, error) {
	spec := p.Strategy
	switch {
	case p.Algorithm == AlgoIndependent:
		spec = factorize.StrategyIdentity
	case spec == "":
		spec = factorize.StrategyOptimal
	}
	s, err := factorize.ParseStrategy(spec)
	if err != nil {
		return nil, wrap(err)
	}
	return s, nil
}

// strategy returns the plan's strategy with the options its participation
// needs: a strategy that computes its sensitivity without C only under
// some participations (factorize's LossOnlyUnder) forms C under the others.
// A setting the participation would ignore is an error (factorize.CheckUnder).
func (p *Plan) strategy() (factorize.Strategy, error) {
	s, err := p.parsedStrategy()
	if err != nil {
		return nil, err
	}
	part, _ := p.Pattern() // Validate checks it before the strategy
	if err := factorize.CheckUnder(s, part); err != nil {
		return nil, wrap(err)
	}
	info, err := factorize.Lookup(s.Name())
	if err != nil {
		return nil, wrap(err)
	}
	if !info.LossOnlyUnder(part) {
		if s, err = factorize.WithLossOnly(s, false); err != nil {
			return nil, wrap(err)
		}
	}
	return s, nil
}

// errNilPlan is the error of a method called on a nil *Plan.
var errNilPlan = errors.New("plan: no plan (a nil *Plan)")

// bad returns the error of field name with value v, which should be want.
func bad(name string, v any, want string) error {
	return fmt.Errorf("plan: %s %v, want %s", name, v, want)
}

// prefixError is an error of another package returned by the plan: its
// message is "plan: " and the other's message without that package's prefix,
// so that it reads with one prefix.
type prefixError struct{ err error }

// wrap returns err as a plan error; errors.Is and errors.As see err.
func wrap(err error) error { return &prefixError{err} }

func (e *prefixError) Error() string {
	msg := e.err.Error()
	for _, p := range []string{"dpmf: ", "accountant: ", "factorize: "} {
		msg = strings.TrimPrefix(msg, p)
	}
	return "plan: " + msg
}

func (e *prefixError) Unwrap() error { return e.err }
