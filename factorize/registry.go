package factorize

import (
	"cmp"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/dpmf/dpmf/internal/param"
)

// The registry knows every strategy by name: its spec syntax and settings,
// its noise stream's memory, its solver's memory and its loss-only path,
// which each strategy's file registers ([register]). Commands ask the
// registry ([Registry], [Lookup], [ParseStrategy], [StreamBytes],
// [SolveBytes], [WithLossOnly]) instead of comparing names.

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
	// Workloads says which workloads the strategy factorizes, in words
	// ("every workload" for all of them); [StrategyInfo.Serves] checks
	// one.
	Workloads string

	// lossOnly lists the participation kinds under which the strategy
	// computes its metrics without forming B and C (none: no loss-only
	// path).
	lossOnly []ParticipationKind
	// rank orders the registry ([Registry], [Strategies]).
	rank int
	// proto is the strategy with default settings.
	proto Strategy
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
	solveBytes func(s Strategy, r int, p Participation, bandedInverse bool) float64
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
	// under p or is out of range; nil for a strategy without such checks.
	checkUnder func(s Strategy, p Participation) error
	// cBands returns the number of bands of the C that s forms; nil for a
	// strategy whose C is not banded with a set number of bands.
	cBands func(s Strategy) int
	// serves reports whether s factorizes w under p, by the workload's
	// structure ([StrategyInfo.Serves]); nil for every workload.
	serves func(s Strategy, w *Workload, p Participation) bool
}

// Serves returns a *ParamError (Param "workload") if strategy s, of this
// registry entry, does not factorize the workload w under participation
// p by its structure: the prefix-sum workload only (tree, sqrt,
// sqrt-normalized), lower-triangular Toeplitz workloads (the banded
// strategies and blt; banded under minsep:B any workload with a banded
// inverse), a bidiagonal inverse (semiseparable), a banded inverse
// (optimal under epochs:K or path=structured); nil where it does. Its
// Want says what the strategy accepts ([StrategyInfo.Workloads]). A
// command checks it before solving; s.Factorize refuses such a workload
// too. Other failures (an unsupported participation, a solver that does
// not converge) are not its concern.
func (i StrategyInfo) Serves(s Strategy, w *Workload, p Participation) error {
	if err := checkWorkload(w); err != nil {
		return err
	}
	if i.serves == nil || s == nil || reflect.TypeOf(s) != reflect.TypeOf(i.proto) || i.serves(s, w, p) {
		return nil
	}
	return &ParamError{Param: "workload", Value: fmt.Sprintf("%s (R = %d)", w.Name(), w.R()), Want: fmt.Sprintf("%s for strategy %s", i.Workloads, i.Name)}
}

// isToeplitz reports whether w is a lower-triangular Toeplitz workload
// with a positive diagonal, which the banded strategies and blt factorize
// ([toeplitzOf]).
func isToeplitz(w *Workload) bool {
	_, err := toeplitzOf("", w)
	return err == nil
}

// hasBandedInverse reports whether w's inverse is banded ([Workload.InverseBand]).
func hasBandedInverse(w *Workload) bool {
	_, ok := w.InverseBand()
	return ok
}

// Words of [StrategyInfo.Workloads] shared by several strategies.
const (
	servesPrefix   = "the prefix-sum workload only"
	servesToeplitz = "lower-triangular Toeplitz workloads with a positive diagonal only (prefix sums, momentum, a Toeplitz matrix)"
)

// LossOnlyUnder reports whether the strategy can compute its metrics
// without forming B and C under participation p (see [WithLossOnly]).
func (i StrategyInfo) LossOnlyUnder(p Participation) bool { return slices.Contains(i.lossOnly, p.Kind) }

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
	// def is the value that 0 stands for in the cache key ([CacheKey]);
	// 0 where the default depends on the participation or the solve.
	def float64
	// keyless leaves the setting out of the cache key: it does not change
	// a certified result (an iteration limit).
	keyless bool
}

const (
	docTol     = "certified relative duality gap at which the solver stops"
	docMaxIter = "iteration limit of the solver (reaching it is an error)"
)

// bandsSetting is the bands setting of the banded strategies.
func bandsSetting(doc string) Setting {
	return Setting{Name: "bands", Type: "int", Default: "16, or B under minsep:B if smaller", Doc: doc}
}

// registry lists the strategies in rank order. Each strategy's file adds
// its entry with [register] from an init function (the entries refer to
// functions that read the registry).
var registry []StrategyInfo

// register adds a strategy's entry to the registry in rank order. A
// repeated name or rank is a programming error and panics at init.
func register(i StrategyInfo) {
	for _, e := range registry {
		if e.Name == i.Name || e.rank == i.rank {
			panic("factorize: strategy " + i.Name + " registered twice or with the rank of " + e.Name)
		}
	}
	at, _ := slices.BinarySearchFunc(registry, i.rank, func(e StrategyInfo, rank int) int { return cmp.Compare(e.rank, rank) })
	registry = slices.Insert(registry, at, i)
}

// bandsOrDefault returns bands, or DefaultBands for 0.
func bandsOrDefault(bands int) int {
	if bands > 0 {
		return bands
	}
	return DefaultBands
}

// Registry returns the registered strategies, in the order of
// [Strategies].
func Registry() []StrategyInfo { return slices.Clone(registry) }

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
	if j := slices.IndexFunc(registry, func(e StrategyInfo) bool { return e.Name == name }); j >= 0 {
		return registry[j], nil
	}
	return StrategyInfo{}, &ParamError{Param: "strategy", Value: param.Quote(name), Want: "one of " + strings.Join(Strategies(), ", ")}
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
	bad := func(want string) error { return &ParamError{Param: "strategy", Value: param.Quote(spec), Want: want} }
	info, err := Lookup(name)
	if err != nil {
		return nil, bad("one of " + strings.Join(Strategies(), ", ") + ", then optionally ':' and key=value settings")
	}
	p := pointerTo(info.proto)
	if hasSettings {
		if rest == "" {
			return nil, bad("key=value settings after ':' (or the bare name " + name + ")")
		}
		seen := map[string]bool{}
		for _, kv := range strings.Split(rest, ",") {
			key, val, ok := strings.Cut(kv, "=")
			if !ok || key == "" {
				return nil, bad("comma-separated key=value settings, not " + param.Quote(kv))
			}
			i := slices.IndexFunc(info.Settings, func(s Setting) bool { return s.Name == key })
			if i < 0 {
				return nil, bad(info.takes() + ", not " + quoteOdd(key))
			}
			if seen[key] {
				return nil, bad("each setting at most once, not " + key + " twice")
			}
			seen[key] = true
			if err := info.set(p, i, val); err != nil {
				return nil, bad(quoteOdd(key) + " = " + err.Error() + ", not " + param.Quote(val))
			}
		}
	}
	return value(p), nil
}

// quoteOdd returns s as it is, or quoted (param.Quote) where it holds
// a character that Quote escapes (a newline, a control character, a
// quote) or is longer than param.Quote shows, so that an error that names
// it stays one short line.
func quoteOdd(s string) string {
	if q := strconv.Quote(s); q[1:len(q)-1] != s || len(s) > 64 {
		return param.Quote(s)
	}
	return s
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
		for m := Auto; m <= Dense; m++ {
			if val == m.String() {
				*v = m
				return nil
			}
		}
		return fmt.Errorf("one of %s", strings.ReplaceAll(i.Settings[j].Type, "|", ", "))
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

// specOf returns the canonical spec of s: the name, then the settings that
// differ from their zero value (the default) in registry order.
func specOf(s Strategy) string {
	return settingsOf(s, ":", ",", false)
}

// CacheKey returns a string that identifies s and every setting that
// changes its result, the cache key's part for the strategy: the name,
// then every setting with the default filled in where it does not depend
// on the participation ("optimal/tol=1e-10/path=auto"), without those that
// do not change a certified result (max-iter), then "/loss-only" when s
// forms no B and C ([IsLossOnly]). The optimal strategy's path is part of
// it: the structured and the dense path certify the same optimum, but not
// with the same factorization (noise operator, loss-only metrics). A
// progress callback is not part of it.
func CacheKey(s Strategy) string {
	key := settingsOf(s, "/", "/", true)
	if IsLossOnly(s) {
		key += "/loss-only"
	}
	return key
}

// settingsOf returns the name of s, then sep and its settings joined by
// join: for a key (cache) every setting that is not keyless, its 0 read as
// def; otherwise (spec) the settings that are not 0.
func settingsOf(s Strategy, sep, join string, cache bool) string {
	if s == nil {
		return ""
	}
	i, ok := info(s)
	if !ok {
		return s.Name()
	}
	p := pointerTo(s)
	var parts []string
	for j, f := range i.fields {
		if cache && f.keyless {
			continue
		}
		var v string
		switch x := f.ptr(p).(type) {
		case *int:
			if *x != 0 || cache {
				v = strconv.Itoa(cmp.Or(*x, int(f.def)))
			}
		case *float64:
			if *x != 0 || cache {
				v = strconv.FormatFloat(cmp.Or(*x, f.def), 'g', -1, 64)
			}
		case *Method:
			// In a key, auto too: an entry stored before the path was
			// keyed may hold either path's result.
			if *x != Auto || cache {
				v = x.String()
			}
		}
		if v != "" {
			parts = append(parts, i.Settings[j].Name+"="+v)
		}
	}
	if len(parts) == 0 {
		return i.Name
	}
	return i.Name + sep + strings.Join(parts, join)
}

// info returns the registry entry of s, and false for a strategy that is
// not registered (or a value of another type under a registered name).
func info(s Strategy) (StrategyInfo, bool) {
	if s == nil {
		return StrategyInfo{}, false
	}
	i, err := Lookup(s.Name())
	return i, err == nil && reflect.TypeOf(i.proto) == reflect.TypeOf(s)
}

// StreamBytes estimates the memory of the noise stream of s for R = r
// rounds of d-dimensional noise under single participation: the past noise
// rows or state vectors its mechanism keeps, 8 d bytes each (R rows for the
// dense and Toeplitz operators, which may regenerate them instead, see
// [KeepsPastRows]; in keep mode the mechanism's StateBytes adds the
// slice headers that index the kept rows, 24 bytes each (12 on 32-bit
// platforms), one per row and one per block of 4096 of its coordinates:
// 0.07% of the rows' bytes at large d, 6 times them at d = 1). Defaults
// that depend on the participation or on the solve are taken at their
// largest (the optimal factorization's K, at most 16 + 4 log2 R state
// vectors). A strategy that is not registered is counted as dense. An
// estimate beyond the int64 range is math.MaxInt64, never a wrapped value.
func StreamBytes(s Strategy, r, d int) int64 {
	vectors := r
	if i, ok := info(s); ok {
		vectors = i.streamVectors(s, r)
	}
	v, dd := int64(max(vectors, 0)), int64(max(d, 0))
	if dd > 0 && v > math.MaxInt64/8/dd {
		return math.MaxInt64
	}
	return v * dd * 8
}

// KeepsPastRows reports whether the noise operator of s under p on the
// prefix workload reads past noise rows again, which the mechanism keeps
// or regenerates ([OperatorMemory.PastRows] > 0: the Toeplitz operator of
// the square roots, the dense operator of the optimal factorization under
// epochs:K with K > 1 or path=dense), rather than holding a bounded state.
// A strategy that is not registered is counted as dense.
func KeepsPastRows(s Strategy, p Participation) bool {
	i, ok := info(s)
	return !ok || i.pastRows != nil && i.pastRows(s, p)
}

// SolveBytes estimates the memory that s.Factorize needs at R = r
// rounds under participation p: the dense factors B and C (R x m and m x R
// float64, m rows of C) unless s is loss-only, plus the solver's working
// space, about 4 R^2 float64 for the dense solvers (Cholesky factor,
// triangular inverse, X and the workload). bandedInverse says the
// workload's inverse is banded, which lets the optimal solver's loss-only
// path run in O(R) memory, and under k fixed epochs (1 < k < R) in O(R k)
// (until 2026-11-28 the fixed-epoch solver formed the factors even
// loss-only where the inverse has two or more subdiagonals, momentum, and
// callers passed false there). A strategy that is not registered is
// counted as a dense solver.
func SolveBytes(s Strategy, r int, p Participation, bandedInverse bool) float64 {
	i, ok := info(s)
	switch {
	case ok && i.solveBytes != nil:
		return i.solveBytes(s, r, p, bandedInverse)
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
// (optimal, semiseparable, banded under min-separation) to fn after every
// iteration; other strategies are returned as they are.
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
// Loss-only is kept; a progress callback is not. A key or value that
// would read as more than one setting (a ',' in either, a '=' in the key)
// is an error, not further settings.
func WithSetting(s Strategy, key, value string) (Strategy, error) {
	if s == nil {
		return nil, &ParamError{Param: "strategy", Want: "a registered strategy"}
	}
	if strings.ContainsAny(key, ",=") || strings.Contains(value, ",") {
		return nil, &ParamError{Param: "setting", Value: strconv.Quote(key + "=" + value), Want: "one key=value setting (no ',' in it, no '=' in the key)"}
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
// optimal's path under fixed epochs) or is out of range (optimal's tol and
// max-iter), so that a command can refuse it before solving; s.Factorize
// refuses it too.
func CheckUnder(s Strategy, p Participation) error {
	if i, ok := info(s); ok && i.checkUnder != nil {
		return i.checkUnder(s, p)
	}
	return nil
}
