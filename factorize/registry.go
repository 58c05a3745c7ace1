package factorize

import (
	"fmt"
	"math"
	"math/bits"
	"reflect"
	"strconv"
	"strings"
)

// This file is the one place that knows every strategy by name: its spec
// syntax and settings, its noise stream's memory, its solver's memory and
// its loss-only path. Commands ask the registry ([Registry], [Lookup],
// [ParseStrategy], [StreamBytes], [SolveBytes], [WithLossOnly]) instead of
// comparing names.

// A Setting describes one setting of a strategy spec ("bands" in
// "banded:bands=64").
type Setting struct {
	// Name is the key in the spec.
	Name string
	// Type is "int", "float" or the accepted words separated by "|".
	Type string
	// Default is the value the strategy uses when the spec leaves the
	// setting out, in words.
	Default string
	// Doc says what the setting does.
	Doc string
}

// StrategyInfo describes a registered strategy: what commands print in
// their help and ask about a strategy without comparing its name.
type StrategyInfo struct {
	// Name is the strategy's name, the spec without settings.
	Name string
	// Doc is a one-line description.
	Doc string
	// Settings are the settings the spec takes, in canonical order.
	Settings []Setting
	// Stream describes the state of the noise stream per coordinate, in
	// vectors, with the default settings' value ([StreamBytes] counts it).
	Stream string

	// lossOnly lists the participation kinds under which the strategy
	// computes its metrics without forming B and C (none: no loss-only
	// path).
	lossOnly []ParticipationKind
	// fresh returns a pointer to the strategy with default settings.
	fresh func() any
	// fields are the settings' places in the strategy, in Settings' order.
	fields []field
	// streamVectors returns the number of d-vectors the noise stream of s
	// keeps at R = r rounds under single participation.
	streamVectors func(s Strategy, r int) int
	// pastRows reports whether the operator of s under p on the prefix
	// workload reads past noise rows again (OperatorMemory.PastRows > 0);
	// nil for never.
	pastRows func(s Strategy, p Participation) bool
	// solveBytes returns the bytes the strategy's solve needs at R = r
	// (see [SolveBytes]).
	solveBytes func(s Strategy, r int, bandedInverse bool) float64
	// lossOnlyPtr returns a pointer to the loss-only switch of the
	// strategy that p points to (its Factors switch, the opposite, when
	// factorsPtr is set); nil without a loss-only path.
	lossOnlyPtr func(p any) *bool
	factorsPtr  bool
	// progressPtr returns a pointer to the progress callback of the
	// strategy that p points to; nil for a strategy without an iterative
	// solver that reports it.
	progressPtr func(p any) *func(Progress)
	// checkUnder returns an error if a setting of s would be ignored
	// under p; nil for a strategy whose settings all apply everywhere.
	checkUnder func(s Strategy, p Participation) error
	// cBands returns the number of bands of the C that s forms; nil for a
	// strategy whose C is not banded with a set number of bands.
	cBands func(s Strategy) int
}

// LossOnlyUnder reports whether the strategy can compute its metrics
// without forming B and C under participation p (see [WithLossOnly]).
func (i StrategyInfo) LossOnlyUnder(p Participation) bool {
	for _, k := range i.lossOnly {
		if k == p.Kind {
			return true
		}
	}
	return false
}

// HasLossOnly reports whether the strategy has a loss-only path under any
// participation.
func (i StrategyInfo) HasLossOnly() bool { return len(i.lossOnly) > 0 }

// field is a setting's place in a strategy value: ptr returns a pointer
// (*int, *float64 or *Method) into the strategy that p points to.
type field struct {
	ptr func(p any) any
	// lo and hi bound an int (hi 0: no upper bound); a float must be
	// finite and > 0.
	lo, hi int
}

const (
	docTol     = "certified relative duality gap at which the solver stops"
	docMaxIter = "iteration limit of the solver (reaching it is an error)"
)

// bandsSetting is the bands setting of the banded strategies.
func bandsSetting(doc string) Setting {
	return Setting{Name: "bands", Type: "int", Default: "16, or B under minsep:B if smaller", Doc: doc}
}

// registry lists the strategies in the order of [Strategies] (set by init:
// its entries refer to the functions that read it).
var registry []StrategyInfo

func init() { registry = strategies() }

// strategies returns the registry's entries.
func strategies() []StrategyInfo {
	return []StrategyInfo{
		{
			Name: StrategyIdentity, Doc: "C = I: independent noise each round",
			Stream:        "0",
			fresh:         func() any { return &IdentityStrategy{} },
			streamVectors: func(Strategy, int) int { return 0 },
			// The factors and a copy of A.
			solveBytes: func(_ Strategy, r int, _ bool) float64 { return factorBytes(r, r) + 8*float64(r)*float64(r) },
		},
		{
			Name: StrategyTree, Doc: "binary-tree aggregation",
			Stream:        "log2 R",
			fresh:         func() any { return &TreeStrategy{} },
			streamVectors: func(_ Strategy, r int) int { return max(0, bits.Len(uint(r))-1) },
			solveBytes:    func(_ Strategy, r int, _ bool) float64 { return factorBytes(r, treeRows(r)) },
		},
		{
			Name: StrategySqrt, Doc: "the square root of the prefix-sum matrix (Toeplitz)",
			Stream:        "R (or regenerated)",
			pastRows:      func(Strategy, Participation) bool { return true },
			fresh:         func() any { return &SqrtStrategy{} },
			streamVectors: func(_ Strategy, r int) int { return r },
			solveBytes:    func(_ Strategy, r int, _ bool) float64 { return factorBytes(r, r) },
		},
		{
			Name: StrategySqrtNormalized, Doc: "the square root of the prefix-sum matrix with unit column norms",
			Stream:        "R (or regenerated)",
			pastRows:      func(Strategy, Participation) bool { return true },
			fresh:         func() any { return &SqrtStrategy{Normalized: true} },
			streamVectors: func(_ Strategy, r int) int { return r },
			solveBytes:    func(_ Strategy, r int, _ bool) float64 { return factorBytes(r, r) },
		},
		{
			Name: StrategyBanded, Doc: "a lower-triangular C with few bands: certified optimal under minsep, a Toeplitz fit otherwise",
			Stream: "b - 1 (15 by default)",
			Settings: []Setting{
				bandsSetting("number of bands of C"),
				{Name: "tol", Type: "float", Default: "1e-08", Doc: docTol + " (minsep only)"},
				{Name: "max-iter", Type: "int", Default: "20000", Doc: docMaxIter + " (minsep only)"},
			},
			fresh:  func() any { return &BandedStrategy{} },
			cBands: func(s Strategy) int { return bandsOrDefault(s.(BandedStrategy).Bands) },
			checkUnder: func(s Strategy, p Participation) error {
				if b := s.(BandedStrategy); (b.Tol != 0 || b.MaxIter != 0) && p.Kind != KindMinSep {
					// The settings of the certified solver would be ignored.
					return &ParamError{Param: "strategy", Value: strconv.Quote(b.Spec()), Want: fmt.Sprintf("tol and max-iter only under participation minsep:B, where banded runs its certified solver, not %v", p)}
				}
				return nil
			},
			fields: []field{
				{ptr: func(p any) any { return &p.(*BandedStrategy).Bands }, lo: 1},
				{ptr: func(p any) any { return &p.(*BandedStrategy).Tol }},
				{ptr: func(p any) any { return &p.(*BandedStrategy).MaxIter }, lo: 1},
			},
			streamVectors: func(s Strategy, r int) int { return min(bandsOrDefault(s.(BandedStrategy).Bands), r) - 1 },
		},
		{
			Name: StrategyBSR, Doc: "the banded square root with unit column norms",
			Stream:   "b - 1 (15 by default)",
			Settings: []Setting{bandsSetting("number of bands of C")},
			fresh:    func() any { return &BSRStrategy{} },
			cBands:   func(s Strategy) int { return bandsOrDefault(s.(BSRStrategy).Bands) },
			fields: []field{
				{ptr: func(p any) any { return &p.(*BSRStrategy).Bands }, lo: 1},
			},
			streamVectors: func(s Strategy, r int) int { return min(bandsOrDefault(s.(BSRStrategy).Bands), r) - 1 },
		},
		{
			Name: StrategyBandedToeplitz, Doc: "a banded Toeplitz C optimised for the participation",
			Stream:   "b - 1 (15 by default)",
			Settings: []Setting{bandsSetting("number of bands of C")},
			lossOnly: []ParticipationKind{KindSingle, KindMinSep},
			fresh:    func() any { return &BandedToeplitzStrategy{} },
			fields: []field{
				{ptr: func(p any) any { return &p.(*BandedToeplitzStrategy).Bands }, lo: 1},
			},
			streamVectors: func(s Strategy, r int) int { return min(bandsOrDefault(s.(BandedToeplitzStrategy).Bands), r) - 1 },
			lossOnlyPtr:   func(p any) *bool { return &p.(*BandedToeplitzStrategy).LossOnly },
		},
		{
			Name: StrategyBISR, Doc: "the banded inverse square root: C^{-1} with p coefficients",
			Stream:   "p - 1 (15 by default)",
			Settings: []Setting{{Name: "bands", Type: "int", Default: "16", Doc: "number p of coefficients of C^{-1}"}},
			lossOnly: []ParticipationKind{KindSingle, KindMinSep},
			fresh:    func() any { return &BISRStrategy{} },
			fields: []field{
				{ptr: func(p any) any { return &p.(*BISRStrategy).Bands }, lo: 1},
			},
			streamVectors: func(s Strategy, r int) int { return min(bandsOrDefault(s.(BISRStrategy).Bands), r) - 1 },
			lossOnlyPtr:   func(p any) *bool { return &p.(*BISRStrategy).LossOnly },
		},
		{
			Name: StrategyBandInv, Doc: "a banded Toeplitz C^{-1} with p coefficients optimised for the participation",
			Stream:   "p - 1 (15 by default)",
			Settings: []Setting{{Name: "bands", Type: "int", Default: "16", Doc: "number p of coefficients of C^{-1}"}},
			lossOnly: []ParticipationKind{KindSingle, KindMinSep},
			fresh:    func() any { return &BandInvStrategy{} },
			fields: []field{
				{ptr: func(p any) any { return &p.(*BandInvStrategy).Bands }, lo: 1},
			},
			streamVectors: func(s Strategy, r int) int { return min(bandsOrDefault(s.(BandInvStrategy).Bands), r) - 1 },
			lossOnlyPtr:   func(p any) *bool { return &p.(*BandInvStrategy).LossOnly },
		},
		{
			Name: StrategyBLT, Doc: "buffered linear Toeplitz: C^{-1} streamed with K buffers",
			Stream:   "K (4 by default)",
			Settings: []Setting{{Name: "buffers", Type: "int", Default: strconv.Itoa(DefaultBuffers), Doc: "number K of buffers"}},
			fresh:    func() any { return &BLTStrategy{} },
			fields: []field{
				{ptr: func(p any) any { return &p.(*BLTStrategy).Buffers }, lo: 1},
			},
			streamVectors: func(s Strategy, _ int) int {
				if k := s.(BLTStrategy).Buffers; k > 0 {
					return k
				}
				return DefaultBuffers
			},
		},
		{
			Name: StrategySemisep, Doc: "the optimum's semiseparable structure with K state vectors",
			Stream: "K (by default the fewest within 0.1% of the optimum)",
			Settings: []Setting{
				{Name: "buffers", Type: "int", Default: "the fewest within max-excess of the optimum", Doc: fmt.Sprintf("number K of state vectors (at most %d)", MaxSemisepBuffers)},
				{Name: "max-excess", Type: "float", Default: strconv.FormatFloat(DefaultMaxExcess, 'g', -1, 64), Doc: "relative excess over the optimal loss allowed when choosing K"},
				{Name: "tol", Type: "float", Default: strconv.FormatFloat(DefaultTol, 'g', -1, 64), Doc: docTol},
				{Name: "max-iter", Type: "int", Default: strconv.Itoa(DefaultMaxIter), Doc: docMaxIter},
			},
			lossOnly: []ParticipationKind{KindSingle},
			fresh:    func() any { return &SemisepStrategy{} },
			fields: []field{
				{ptr: func(p any) any { return &p.(*SemisepStrategy).Buffers }, lo: 1, hi: MaxSemisepBuffers},
				{ptr: func(p any) any { return &p.(*SemisepStrategy).MaxExcess }},
				{ptr: func(p any) any { return &p.(*SemisepStrategy).Tol }},
				{ptr: func(p any) any { return &p.(*SemisepStrategy).MaxIter }, lo: 1},
			},
			streamVectors: func(s Strategy, _ int) int {
				if k := s.(SemisepStrategy).Buffers; k > 0 {
					return k
				}
				return MaxSemisepBuffers
			},
			solveBytes: func(s Strategy, r int, _ bool) float64 {
				// The optimal solver's O(R) vectors, then the generators
				// (3 R K floats, K <= MaxSemisepBuffers) and the factors if
				// formed.
				need := 8 * float64(lossOnlyFloatsPerRound+3*MaxSemisepBuffers) * float64(r)
				if s.(SemisepStrategy).Factors {
					need += factorBytes(r, r)
				}
				return need
			},
			lossOnlyPtr: func(p any) *bool { return &p.(*SemisepStrategy).Factors },
			factorsPtr:  true,
			progressPtr: func(p any) *func(Progress) { return &p.(*SemisepStrategy).Progress },
		},
		{
			Name: StrategyOptimal, Doc: "the certified optimum (single participation; the multi-epoch optimum under epochs:K)",
			Stream: "K (about 11 + 3 log2 R; R, or regenerated, under epochs:K or path=dense)",
			Settings: []Setting{
				{Name: "tol", Type: "float", Default: strconv.FormatFloat(DefaultTol, 'g', -1, 64), Doc: docTol},
				{Name: "max-iter", Type: "int", Default: strconv.Itoa(DefaultMaxIter), Doc: docMaxIter},
				{Name: "path", Type: "auto|structured|dense", Default: "auto", Doc: "structured (workloads with a banded inverse: O(R) per iteration) or dense (any workload: O(R^3) per iteration)"},
			},
			lossOnly: []ParticipationKind{KindSingle},
			fresh:    func() any { return &OptimalStrategy{} },
			fields: []field{
				{ptr: func(p any) any { return &p.(*OptimalStrategy).Tol }},
				{ptr: func(p any) any { return &p.(*OptimalStrategy).MaxIter }, lo: 1},
				{ptr: func(p any) any { return &p.(*OptimalStrategy).Method }},
			},
			// The structured path streams the causal factor in
			// quasiseparable form; the dense path's operator keeps (or
			// regenerates) the R past rows.
			streamVectors: func(s Strategy, r int) int {
				if s.(OptimalStrategy).Method == Dense {
					return r
				}
				return optimalStates(r)
			},
			pastRows: func(s Strategy, p Participation) bool {
				// The fixed-epoch solver and the dense path form dense
				// factors, which stream through their dense operator.
				return s.(OptimalStrategy).Method == Dense || (p.Kind == KindEpochs && p.K > 1)
			},
			solveBytes: func(s Strategy, r int, bandedInverse bool) float64 {
				o := s.(OptimalStrategy)
				rf := float64(r)
				bandedInverse = bandedInverse && o.Method != Dense
				switch {
				case o.LossOnly && bandedInverse:
					return 8 * lossOnlyFloatsPerRound * rf
				case o.LossOnly:
					// S, M and its reduction, two R x R work matrices and
					// the workload.
					return 8 * 6 * rf * rf
				}
				return denseSolveBytes(r)
			},
			checkUnder: func(s Strategy, p Participation) error {
				if o := s.(OptimalStrategy); o.Method != Auto && p.Kind == KindEpochs && p.K > 1 {
					// The fixed-epoch solver has one path.
					return &ParamError{Param: "strategy", Value: strconv.Quote(o.Spec()), Want: fmt.Sprintf("path only under single participation or minsep:B, not %v (its solver has one path)", p)}
				}
				return nil
			},
			lossOnlyPtr: func(p any) *bool { return &p.(*OptimalStrategy).LossOnly },
			progressPtr: func(p any) *func(Progress) { return &p.(*OptimalStrategy).Progress },
		},
	}
}

// optimalStates estimates, from above, the number K of state vectors of
// the optimal factorization's quasiseparable factor at R = r rounds: K is
// the number of nodes of the solver's rational approximation of x^{-1/2},
// which grows with the logarithm of the condition number of its matrix.
// Measured on the prefix workload: K = 11 at R = 2, 25 at R = 40, 29 at
// R = 100, 38 at R = 1000, 44 at R = 4000, 57 at R = 10^5, about
// 11 + 3 log2 R; the estimate 16 + 4 log2 R leaves a margin.
func optimalStates(r int) int { return 16 + 4*bits.Len(uint(max(r, 1))) }

// lossOnlyFloatsPerRound bounds the float64 vectors of length R that the
// structured loss-only solver keeps: about 25 measured (peak RSS 193 MB for
// mfsolve -R 1000000 -strategy optimal:max-iter=3 -loss-only), with a
// margin.
const lossOnlyFloatsPerRound = 40

// bandsOrDefault returns bands, or DefaultBands for 0.
func bandsOrDefault(bands int) int {
	if bands > 0 {
		return bands
	}
	return DefaultBands
}

// Registry returns the registered strategies, in the order of
// [Strategies].
func Registry() []StrategyInfo {
	out := make([]StrategyInfo, len(registry))
	copy(out, registry)
	return out
}

// Strategies lists the names of the registered strategies.
func Strategies() []string {
	names := make([]string, len(registry))
	for i, e := range registry {
		names[i] = e.Name
	}
	return names
}

// Lookup returns the registered strategy named name, the part of a spec
// before ':'. An unknown name is a *ParamError listing the known ones.
func Lookup(name string) (StrategyInfo, error) {
	for _, e := range registry {
		if e.Name == name {
			return e, nil
		}
	}
	return StrategyInfo{}, &ParamError{Param: "strategy", Value: strconv.Quote(name), Want: "one of " + strings.Join(Strategies(), ", ")}
}

// ParseStrategy returns the strategy of spec: a name ([Strategies]), then
// optionally ':' and comma-separated key=value settings, for example
// "banded:bands=64", "blt:buffers=4", "optimal:tol=1e-10,path=dense". A
// bare name has the default settings. An unknown name, a setting that the
// strategy does not take, a repeated setting, an empty or malformed value
// is a *ParamError naming it and what is accepted. ParseStrategy(s.Spec())
// returns s for every strategy it returns.
func ParseStrategy(spec string) (Strategy, error) {
	name, rest, hasSettings := strings.Cut(spec, ":")
	info, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	p := info.fresh()
	bad := func(want string) error { return &ParamError{Param: "strategy", Value: strconv.Quote(spec), Want: want} }
	if hasSettings {
		if rest == "" {
			return nil, bad("key=value settings after ':' (or the bare name " + name + ")")
		}
		seen := map[string]bool{}
		for _, kv := range strings.Split(rest, ",") {
			key, val, ok := strings.Cut(kv, "=")
			if !ok || key == "" {
				return nil, bad("comma-separated key=value settings, not " + strconv.Quote(kv))
			}
			i := info.setting(key)
			if i < 0 {
				return nil, bad(info.takes() + ", not " + key)
			}
			if seen[key] {
				return nil, bad("each setting at most once, not " + key + " twice")
			}
			seen[key] = true
			if err := info.set(p, i, val); err != nil {
				return nil, bad(key + " = " + err.Error() + ", not " + strconv.Quote(val))
			}
		}
	}
	return value(p), nil
}

// setting returns the index of the setting named key, or -1.
func (i StrategyInfo) setting(key string) int {
	for j, s := range i.Settings {
		if s.Name == key {
			return j
		}
	}
	return -1
}

// takes words the settings the strategy takes.
func (i StrategyInfo) takes() string {
	if len(i.Settings) == 0 {
		return "the bare name " + i.Name + ", which takes no settings"
	}
	names := make([]string, len(i.Settings))
	for j, s := range i.Settings {
		names[j] = s.Name
	}
	return "a setting that " + i.Name + " takes (" + strings.Join(names, ", ") + ")"
}

// set parses val into setting j of the strategy that p points to; the
// error says what is wanted.
func (i StrategyInfo) set(p any, j int, val string) error {
	f := i.fields[j]
	switch v := f.ptr(p).(type) {
	case *int:
		want := fmt.Sprintf("an integer >= %d", f.lo)
		if f.hi > 0 {
			want = fmt.Sprintf("an integer in [%d, %d]", f.lo, f.hi)
		}
		n, err := strconv.Atoi(val)
		if err != nil || n < f.lo || (f.hi > 0 && n > f.hi) {
			return fmt.Errorf("%s", want)
		}
		*v = n
	case *float64:
		x, err := strconv.ParseFloat(val, 64)
		if err != nil || !(x > 0) || math.IsInf(x, 0) {
			return fmt.Errorf("a finite number > 0")
		}
		*v = x
	case *Method:
		switch val {
		case "auto":
			*v = Auto
		case "structured":
			*v = Structured
		case "dense":
			*v = Dense
		default:
			return fmt.Errorf("one of %s", strings.ReplaceAll(i.Settings[j].Type, "|", ", "))
		}
	}
	return nil
}

// value returns the strategy that p points to.
func value(p any) Strategy { return reflect.ValueOf(p).Elem().Interface().(Strategy) }

// pointerTo returns a pointer to a copy of s.
func pointerTo(s Strategy) any {
	p := reflect.New(reflect.TypeOf(s))
	p.Elem().Set(reflect.ValueOf(s))
	return p.Interface()
}

// specOf returns the canonical spec of the strategy named name that p
// points to: the name, then the settings that differ from their zero value
// (the default) in registry order.
func specOf(name string, p any) string {
	info, err := Lookup(name)
	if err != nil {
		return name
	}
	var parts []string
	for j, f := range info.fields {
		var v string
		switch x := f.ptr(p).(type) {
		case *int:
			if *x != 0 {
				v = strconv.Itoa(*x)
			}
		case *float64:
			if *x != 0 {
				v = strconv.FormatFloat(*x, 'g', -1, 64)
			}
		case *Method:
			if *x != Auto {
				v = x.String()
			}
		}
		if v != "" {
			parts = append(parts, info.Settings[j].Name+"="+v)
		}
	}
	if len(parts) == 0 {
		return name
	}
	return name + ":" + strings.Join(parts, ",")
}

// Spec returns "identity".
func (s IdentityStrategy) Spec() string { return specOf(s.Name(), &s) }

// Spec returns "tree".
func (s TreeStrategy) Spec() string { return specOf(s.Name(), &s) }

// Spec returns "sqrt" or "sqrt-normalized".
func (s SqrtStrategy) Spec() string { return specOf(s.Name(), &s) }

// Spec returns the canonical spec, "banded:bands=B,tol=T,max-iter=N"
// without the settings left at their default.
func (s BandedStrategy) Spec() string { return specOf(s.Name(), &s) }

// Spec returns "bsr:bands=B", or "bsr" for the default.
func (s BSRStrategy) Spec() string { return specOf(s.Name(), &s) }

// Spec returns "banded-toeplitz:bands=B", or "banded-toeplitz" for the
// default. LossOnly is not part of it (see [WithLossOnly]).
func (s BandedToeplitzStrategy) Spec() string { return specOf(s.Name(), &s) }

// Spec returns "bisr:bands=P", or "bisr" for the default. LossOnly is not
// part of it (see [WithLossOnly]).
func (s BISRStrategy) Spec() string { return specOf(s.Name(), &s) }

// Spec returns "bandinv:bands=P", or "bandinv" for the default. LossOnly
// is not part of it (see [WithLossOnly]).
func (s BandInvStrategy) Spec() string { return specOf(s.Name(), &s) }

// Spec returns "blt:buffers=K", or "blt" for the default.
func (s BLTStrategy) Spec() string { return specOf(s.Name(), &s) }

// Spec returns the canonical spec,
// "semiseparable:buffers=K,max-excess=E,tol=T,max-iter=N" without the
// settings left at their default. Factors and Progress are not part of it
// (see [WithLossOnly]).
func (s SemisepStrategy) Spec() string { return specOf(s.Name(), &s) }

// Spec returns the canonical spec, "optimal:tol=T,max-iter=N,path=P"
// without the settings left at their default. LossOnly and Progress are
// not part of it (see [WithLossOnly]).
func (s OptimalStrategy) Spec() string { return specOf(s.Name(), &s) }

// info returns the registry entry of s, and false for a strategy that is
// not registered (or a value of another type under a registered name).
func info(s Strategy) (StrategyInfo, bool) {
	if s == nil {
		return StrategyInfo{}, false
	}
	i, err := Lookup(s.Name())
	if err != nil || reflect.TypeOf(value(i.fresh())) != reflect.TypeOf(s) {
		return i, false
	}
	return i, true
}

// StreamBytes estimates the memory of the noise stream of s for R = r
// rounds of d-dimensional noise under single participation: the past noise
// rows or state vectors its mechanism keeps, 8 d bytes each (R rows for the
// dense and Toeplitz operators, which may regenerate them instead, see
// [KeepsPastRows]). Defaults that depend on the participation or on the
// solve are taken at their largest (the optimal factorization's K, at
// most 16 + 4 log2 R state vectors). A strategy that is not registered is
// counted as dense.
func StreamBytes(s Strategy, r, d int) int64 {
	vectors := r
	if i, ok := info(s); ok {
		vectors = i.streamVectors(s, r)
	}
	return int64(vectors) * int64(max(d, 0)) * 8
}

// KeepsPastRows reports whether the noise operator of s under p on the
// prefix workload reads past noise rows again, which the mechanism keeps
// or regenerates ([OperatorMemory.PastRows] > 0: the Toeplitz operator of
// the square roots, the dense operator of the optimal factorization under
// epochs:K with K > 1 or path=dense), rather than holding a bounded state.
// A strategy that is not registered is counted as dense.
func KeepsPastRows(s Strategy, p Participation) bool {
	i, ok := info(s)
	if !ok {
		return true
	}
	return i.pastRows != nil && i.pastRows(s, p)
}

// SolveBytes estimates the memory that s.Factorize needs at R = r
// rounds: the dense factors B and C (R x m and m x R float64, m rows of C)
// unless s is loss-only, plus the solver's working space, about 4 R^2
// float64 for the dense solvers (Cholesky factor, triangular inverse, X
// and the workload). bandedInverse says the workload's inverse is banded,
// which lets the optimal solver's loss-only path run in O(R) memory. A
// strategy that is not registered is counted as a dense solver.
func SolveBytes(s Strategy, r int, bandedInverse bool) float64 {
	i, ok := info(s)
	switch {
	case ok && i.solveBytes != nil:
		return i.solveBytes(s, r, bandedInverse)
	case IsLossOnly(s):
		// Coefficient vectors of length R: C's, B's and the optimiser's
		// work (a handful).
		return 8 * 8 * float64(r)
	}
	return denseSolveBytes(r)
}

// factorBytes returns the bytes of B and C (R x m and m x R float64).
func factorBytes(r, m int) float64 { return 8 * 2 * float64(r) * float64(m) }

// denseSolveBytes returns the bytes of a dense solver at R = r: the
// factors and 4 R^2 float64 of working space.
func denseSolveBytes(r int) float64 { return factorBytes(r, r) + 8*4*float64(r)*float64(r) }

// treeRows returns the number of rows of the tree's C at R = r: one per
// dyadic interval.
func treeRows(r int) int {
	m := 0
	for size := 1; size <= r; size *= 2 {
		m += r / size
	}
	return m
}

// IsLossOnly reports whether s computes only its metrics, forming no B and
// C.
func IsLossOnly(s Strategy) bool {
	i, ok := info(s)
	return ok && i.lossOnlyPtr != nil && *i.lossOnlyPtr(pointerTo(s)) != i.factorsPtr
}

// WithLossOnly returns s set to compute only its metrics (on), without
// forming B and C, or to form them (off). Turning it on for a strategy
// without a loss-only path is a *ParamError naming the strategies that
// have one; turning it off for one returns s.
func WithLossOnly(s Strategy, on bool) (Strategy, error) {
	i, ok := info(s)
	if ok && i.lossOnlyPtr != nil {
		p := pointerTo(s)
		*i.lossOnlyPtr(p) = on != i.factorsPtr
		return value(p), nil
	}
	if !on {
		return s, nil
	}
	var have []string
	for _, e := range registry {
		if e.lossOnlyPtr != nil {
			have = append(have, e.Name)
		}
	}
	name := "<nil>"
	if s != nil {
		name = s.Name()
	}
	return nil, &ParamError{Param: "loss-only", Value: "strategy " + name, Want: "one of " + strings.Join(have, ", ")}
}

// WithProgress returns s reporting the progress of its iterative solver
// (optimal, semiseparable) to fn after every iteration; other strategies
// are returned as they are.
func WithProgress(s Strategy, fn func(Progress)) Strategy {
	i, ok := info(s)
	if !ok || i.progressPtr == nil {
		return s
	}
	p := pointerTo(s)
	*i.progressPtr(p) = fn
	return value(p)
}

// CBands returns the number of bands of the lower-triangular C that s
// forms (its bands setting, or [DefaultBands] for the default), for the
// strategies whose C has a set number of bands (banded, bsr); ok is false
// for the others.
func CBands(s Strategy) (bands int, ok bool) {
	if i, found := info(s); found && i.cBands != nil {
		return i.cBands(s), true
	}
	return 0, false
}

// WithSetting returns s with its setting key set to value, as
// ParseStrategy reads it (for example a rerun's tolerance); an error if
// s's strategy does not take the setting or the value is not valid for it.
// Loss-only is kept; a progress callback is not.
func WithSetting(s Strategy, key, value string) (Strategy, error) {
	if s == nil {
		return nil, &ParamError{Param: "strategy", Want: "a registered strategy"}
	}
	name, rest, _ := strings.Cut(s.Spec(), ":")
	kept := []string{key + "=" + value}
	for _, kv := range strings.Split(rest, ",") {
		if kv != "" && !strings.HasPrefix(kv, key+"=") {
			kept = append(kept, kv)
		}
	}
	t, err := ParseStrategy(name + ":" + strings.Join(kept, ","))
	if err != nil {
		return nil, err
	}
	if IsLossOnly(s) {
		t, _ = WithLossOnly(t, true)
	}
	return t, nil
}

// CheckUnder returns a *ParamError if a setting of s would be ignored
// under participation p (banded's tol and max-iter outside min-separation,
// optimal's path under fixed epochs),
// so that a command can refuse it before solving; s.Factorize refuses it
// too.
func CheckUnder(s Strategy, p Participation) error {
	if i, ok := info(s); ok && i.checkUnder != nil {
		return i.checkUnder(s, p)
	}
	return nil
}
