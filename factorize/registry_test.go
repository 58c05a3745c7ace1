package factorize_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/mechanism"
)

// TestParseStrategyValues checks specs against the values written out by
// hand.
func TestParseStrategyValues(t *testing.T) {
	for spec, want := range map[string]factorize.Strategy{
		"identity":                        factorize.IdentityStrategy{},
		"tree":                            factorize.TreeStrategy{},
		"sqrt":                            factorize.SqrtStrategy{},
		"sqrt-normalized":                 factorize.SqrtStrategy{Normalized: true},
		"banded":                          factorize.BandedStrategy{},
		"banded:bands=64":                 factorize.BandedStrategy{Bands: 64},
		"banded:tol=1e-6,bands=8":         factorize.BandedStrategy{Bands: 8, Tol: 1e-6},
		"banded:max-iter=7":               factorize.BandedStrategy{MaxIter: 7},
		"bsr:bands=3":                     factorize.BSRStrategy{Bands: 3},
		"banded-toeplitz:bands=5":         factorize.BandedToeplitzStrategy{Bands: 5},
		"bisr:bands=6":                    factorize.BISRStrategy{Bands: 6},
		"bandinv:bands=7":                 factorize.BandInvStrategy{Bands: 7},
		"blt:buffers=4":                   factorize.BLTStrategy{Buffers: 4},
		"semiseparable:buffers=3":         factorize.SemisepStrategy{Buffers: 3},
		"semiseparable:max-excess=0.01":   factorize.SemisepStrategy{MaxExcess: 0.01},
		"semiseparable:tol=1e-9":          factorize.SemisepStrategy{Tol: 1e-9},
		"optimal":                         factorize.OptimalStrategy{},
		"optimal:tol=1e-10,path=dense":    factorize.OptimalStrategy{Options: factorize.Options{Tol: 1e-10, Method: factorize.Dense}},
		"optimal:path=structured":         factorize.OptimalStrategy{Options: factorize.Options{Method: factorize.Structured}},
		"optimal:max-iter=12,path=auto":   factorize.OptimalStrategy{Options: factorize.Options{MaxIter: 12}},
		"semiseparable:max-iter=9,tol=.5": factorize.SemisepStrategy{Tol: 0.5, MaxIter: 9},
	} {
		got, err := factorize.ParseStrategy(spec)
		if err != nil {
			t.Errorf("ParseStrategy(%q): %v", spec, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("ParseStrategy(%q) = %#v, want %#v", spec, got, want)
		}
	}
	// Canonical specs, written out.
	for _, c := range []struct {
		s    factorize.Strategy
		want string
	}{
		{factorize.BandedStrategy{Tol: 1e-6, Bands: 8}, "banded:bands=8,tol=1e-06"},
		{factorize.OptimalStrategy{Options: factorize.Options{Method: factorize.Dense}}, "optimal:path=dense"},
		{factorize.SqrtStrategy{Normalized: true}, "sqrt-normalized"},
		{factorize.BLTStrategy{}, "blt"},
		{factorize.SemisepStrategy{Buffers: 2, Factors: true}, "semiseparable:buffers=2"},
		{factorize.BISRStrategy{Bands: 4, LossOnly: true}, "bisr:bands=4"},
		{factorize.OptimalStrategy{Options: factorize.Options{Tol: 0.25, LossOnly: true}}, "optimal:tol=0.25"},
		{factorize.OptimalStrategy{Options: factorize.Options{MaxIter: 3, Method: factorize.Structured}}, "optimal:max-iter=3,path=structured"},
	} {
		if got := c.s.Spec(); got != c.want {
			t.Errorf("%#v.Spec() = %q, want %q", c.s, got, c.want)
		}
	}
}

// randomSpec returns a spec of info with a random subset of its settings
// at random valid values, in random order.
func randomSpec(rng *rand.Rand, info factorize.StrategyInfo) string {
	var parts []string
	for _, s := range info.Settings {
		if rng.IntN(2) == 0 {
			continue
		}
		var v string
		switch s.Type {
		case "int":
			v = strconv.Itoa(1 + rng.IntN(factorize.MaxSemisepBuffers))
		case "float":
			v = strconv.FormatFloat(math.Exp(rng.NormFloat64()*10), 'g', -1, 64)
		default:
			words := strings.Split(s.Type, "|")
			v = words[rng.IntN(len(words))]
		}
		parts = append(parts, s.Name+"="+v)
	}
	rng.Shuffle(len(parts), func(i, j int) { parts[i], parts[j] = parts[j], parts[i] })
	if len(parts) == 0 {
		return info.Name
	}
	return info.Name + ":" + strings.Join(parts, ",")
}

// TestSpecRoundTrip checks, for every registered strategy and random
// settings, that ParseStrategy reads Spec back to an equal value and that
// Spec is canonical (the same for a permutation of the settings).
func TestSpecRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, info := range factorize.Registry() {
		for range 200 {
			spec := randomSpec(rng, info)
			s, err := factorize.ParseStrategy(spec)
			if err != nil {
				t.Fatalf("ParseStrategy(%q): %v", spec, err)
			}
			if s.Name() != info.Name {
				t.Fatalf("ParseStrategy(%q).Name() = %q", spec, s.Name())
			}
			back, err := factorize.ParseStrategy(s.Spec())
			if err != nil {
				t.Fatalf("ParseStrategy(%q) (the Spec of %q): %v", s.Spec(), spec, err)
			}
			if !reflect.DeepEqual(back, s) {
				t.Fatalf("%q: Spec %q reads back as %#v, want %#v", spec, s.Spec(), back, s)
			}
			// Every setting given appears in the canonical spec with
			// its value, unless it is the default word ("path=auto").
			_, rest, _ := strings.Cut(spec, ":")
			for _, kv := range strings.Split(rest, ",") {
				if kv != "" && kv != "path=auto" && !strings.Contains(","+strings.TrimPrefix(s.Spec(), info.Name+":")+",", ","+kv+",") {
					t.Fatalf("%q: Spec %q lost %s", spec, s.Spec(), kv)
				}
			}
		}
	}
}

// TestParseStrategyErrors checks that every malformed spec is a one-line
// *ParamError that names what is wrong and what is accepted.
func TestParseStrategyErrors(t *testing.T) {
	for spec, wants := range map[string][]string{
		"":                                  {"one of identity", "optimal"},
		"nope":                              {`"nope"`, "one of identity"},
		"blt:bands=3":                       {"blt takes (buffers)", "not bands"},
		"identity:bands=3":                  {"bare name identity", "no settings", "not bands"},
		"sqrt-normalized:x=1":               {"bare name sqrt-normalized"},
		"blt:buffers=2,buffers=3":           {"at most once", "buffers twice"},
		"blt:buffers=":                      {"buffers = an integer in [1, 64]", `not ""`},
		"blt:buffers=x":                     {"buffers = an integer in [1, 64]", `not "x"`},
		"blt:buffers=0":                     {"buffers = an integer in [1, 64]"},
		"blt:buffers=65":                    {"buffers = an integer in [1, 64]"},
		"blt:buffers=1.5":                   {"an integer"},
		"blt:":                              {"key=value"},
		"blt:buffers":                       {"key=value", `"buffers"`},
		"blt:=4":                            {"key=value"},
		"banded:bands=4,":                   {"key=value"},
		"semiseparable:buffers=65":          {"an integer in [1, 64]"},
		"optimal:path=fast":                 {"one of auto, structured, dense", `"fast"`},
		"optimal:tol=-1":                    {"tol = a finite number > 0"},
		"optimal:tol=NaN":                   {"a finite number > 0"},
		"optimal:tol=inf":                   {"a finite number > 0"},
		"optimal:max-iter=-3":               {"max-iter = an integer >= 1"},
		"optimal:bands=3":                   {"optimal takes (tol, max-iter, path)", "not bands"},
		"semiseparable:max-excess=0":        {"max-excess = a finite number > 0"},
		"banded:bands=99999999999999999999": {"bands = an integer"},
		"Optimal":                           {"one of"},
	} {
		_, err := factorize.ParseStrategy(spec)
		var pe *factorize.ParamError
		if !errors.As(err, &pe) {
			t.Errorf("ParseStrategy(%q): error %v, want a *ParamError", spec, err)
			continue
		}
		msg := err.Error()
		if strings.Contains(msg, "\n") || !strings.Contains(msg, strconv.Quote(spec)) {
			t.Errorf("ParseStrategy(%q): %q, want one line naming the spec", spec, msg)
		}
		for _, w := range wants {
			if !strings.Contains(msg, w) {
				t.Errorf("ParseStrategy(%q): %q, want it to contain %q", spec, msg, w)
			}
		}
	}
}

// TestRegistryInfo checks the registry's descriptions: unique names that
// Lookup finds, documented settings, and the settings Registry lists are
// exactly the ones ParseStrategy takes.
func TestRegistryInfo(t *testing.T) {
	seen := map[string]bool{}
	for _, info := range factorize.Registry() {
		if seen[info.Name] || info.Name == "" || info.Doc == "" {
			t.Errorf("strategy %q: duplicate or undocumented", info.Name)
		}
		seen[info.Name] = true
		if got, err := factorize.Lookup(info.Name); err != nil || got.Name != info.Name {
			t.Errorf("Lookup(%q) = %v, %v", info.Name, got.Name, err)
		}
		for _, s := range info.Settings {
			if s.Name == "" || s.Type == "" || s.Default == "" || s.Doc == "" {
				t.Errorf("%s: setting %+v is not fully described", info.Name, s)
			}
		}
	}
	if len(seen) != len(factorize.Strategies()) {
		t.Errorf("Registry has %d strategies, Strategies %d", len(seen), len(factorize.Strategies()))
	}
	if _, err := factorize.Lookup("blt-4"); err == nil {
		t.Error("Lookup(blt-4): no error")
	}
}

// TestStreamBytes checks the registry's estimate of the noise stream's
// memory against the state the mechanism holds after streaming every
// round (an upper bound where the default depends on the solve), per
// coordinate.
func TestStreamBytes(t *testing.T) {
	const r, dim = 40, 3
	ctx := context.Background()
	w, err := factorize.Prefix(r)
	if err != nil {
		t.Fatal(err)
	}
	specs := append(factorize.Strategies(), "banded:bands=5", "bsr:bands=3", "blt:buffers=2", "bisr:bands=4",
		"bandinv:bands=3", "banded-toeplitz:bands=6", "semiseparable:buffers=2", "banded:bands=64")
	for _, spec := range specs {
		s, err := factorize.ParseStrategy(spec)
		if err != nil {
			t.Fatal(err)
		}
		if s, err = factorize.WithLossOnly(s, false); err != nil {
			t.Fatal(err)
		}
		f, err := s.Factorize(ctx, w, factorize.SingleParticipation())
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		state := func(d int) int64 {
			m, err := mechanism.New(f, d, 1, mechanism.WithMemory(mechanism.MemoryKeep))
			if err != nil {
				t.Fatalf("%s: %v", spec, err)
			}
			if _, err := mechanism.NoiseMatrix(m); err != nil {
				t.Fatal(err)
			}
			return m.StateBytes()
		}
		// The growth from d to 2 d (both within one block of 4096
		// coordinates): StreamBytes counts the rows and vectors, not keep
		// mode's slice headers, which StateBytes adds and which do not
		// grow with d within a block.
		got, est := state(2*dim)-state(dim), factorize.StreamBytes(s, r, 2*dim)-factorize.StreamBytes(s, r, dim)
		if spec == "semiseparable" || spec == "optimal" {
			// K is chosen by the solve; the estimate bounds it.
			if got > est {
				t.Errorf("%s: StreamBytes %d below the mechanism's %d", spec, est, got)
			}
		} else if got != est {
			t.Errorf("%s: StreamBytes %d, the mechanism holds %d", spec, est, got)
		}
		if keeps, past := factorize.KeepsPastRows(s, factorize.SingleParticipation()), f.Operator.Memory().PastRows > 0; keeps != past {
			t.Errorf("%s: KeepsPastRows %t, its operator %v reads past rows: %t", spec, keeps, f.Operator, past)
		}
	}
	// The optimal factorization's dense operators: under fixed epochs and
	// on the dense path.
	for _, c := range []struct {
		spec string
		p    factorize.Participation
	}{
		{"optimal", factorize.FixedEpochs(2)},
		{"optimal:path=dense", factorize.SingleParticipation()},
		{"optimal", factorize.SingleParticipation()},
		{"optimal", factorize.MinSeparation(10, 4)},
	} {
		s, err := factorize.ParseStrategy(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		f, err := s.Factorize(ctx, w, c.p)
		if err != nil {
			t.Fatalf("%s under %v: %v", c.spec, c.p, err)
		}
		if keeps, past := factorize.KeepsPastRows(s, c.p), f.Operator.Memory().PastRows > 0; keeps != past {
			t.Errorf("%s under %v: KeepsPastRows %t, its operator %v reads past rows: %t", c.spec, c.p, keeps, f.Operator, past)
		}
	}
}

// TestWithLossOnly checks that loss-only is set on the strategies with a
// loss-only path, refused for the others, and not part of the spec.
func TestWithLossOnly(t *testing.T) {
	ctx := context.Background()
	w, err := factorize.Prefix(30)
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range factorize.Registry() {
		s, err := factorize.ParseStrategy(info.Name)
		if err != nil {
			t.Fatal(err)
		}
		lo, err := factorize.WithLossOnly(s, true)
		if !info.HasLossOnly() {
			if err == nil || !strings.Contains(err.Error(), "optimal") {
				t.Errorf("%s: WithLossOnly: %v, want an error listing the strategies that have one", info.Name, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", info.Name, err)
		}
		if !factorize.IsLossOnly(lo) || lo.Spec() != s.Spec() {
			t.Errorf("%s: loss-only %#v, spec %q", info.Name, lo, lo.Spec())
		}
		f, err := lo.Factorize(ctx, w, factorize.SingleParticipation())
		if err != nil {
			t.Fatalf("%s: %v", info.Name, err)
		}
		if f.B != nil || f.C != nil {
			t.Errorf("%s: loss-only result has factors", info.Name)
		}
		full, _ := factorize.WithLossOnly(lo, false)
		if factorize.IsLossOnly(full) {
			t.Errorf("%s: WithLossOnly(false) still loss-only", info.Name)
		}
	}
}

// TestBandedSettingsNeedMinSep checks that the certified solver's settings
// of banded are refused where they would be ignored.
func TestBandedSettingsNeedMinSep(t *testing.T) {
	w, err := factorize.Prefix(20)
	if err != nil {
		t.Fatal(err)
	}
	s, err := factorize.ParseStrategy("banded:bands=4,tol=1e-6")
	if err != nil {
		t.Fatal(err)
	}
	if err := factorize.CheckUnder(s, factorize.FixedEpochs(2)); err == nil || !strings.Contains(err.Error(), "minsep") {
		t.Errorf("CheckUnder(banded tol, epochs): %v, want an error naming minsep", err)
	}
	if _, err := s.Factorize(context.Background(), w, factorize.SingleParticipation()); err == nil || !strings.Contains(err.Error(), "minsep") {
		t.Errorf("banded tol under single participation: %v, want an error naming minsep", err)
	}
	if _, err := s.Factorize(context.Background(), w, factorize.MinSeparation(4, 0)); err != nil {
		t.Errorf("banded tol under minsep: %v", err)
	}
}

// TestSolveBytes checks the solve's memory estimate against its closed
// forms: 8-byte floats of B and C (R x m and m x R) and the solver's work.
func TestSolveBytes(t *testing.T) {
	tests := []struct {
		spec     string
		r        int
		lossOnly bool
		banded   bool
		want     float64
	}{
		// Optimal: B and C (2 R^2) plus 4 R^2 working space.
		{"optimal", 1000, false, true, 48e6},
		{"optimal", 1000, true, true, 8 * 40 * 1000},
		{"optimal", 1000, true, false, 48e6},           // dense loss-only: 6 R^2
		{"optimal:path=dense", 1000, true, true, 48e6}, // the dense path whatever the workload
		{"blt", 1000, false, true, 48e6},
		{"identity", 1000, false, true, 24e6},
		{"sqrt", 1000, false, true, 16e6},
		{"bisr", 1000, true, true, 8 * 8 * 1000},
		{"semiseparable", 1000, true, true, 8 * (40 + 3*64) * 1000},
		{"semiseparable", 1000, false, true, 8*(40+3*64)*1000 + 16e6},
		// Tree with R = 13: m = 13 + 6 + 3 + 1 = 23 nodes; B and C 2 R m.
		{"tree", 13, false, true, 8 * 2 * 13 * 23},
	}
	for _, tc := range tests {
		s, err := factorize.ParseStrategy(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		if s, err = factorize.WithLossOnly(s, tc.lossOnly); err != nil {
			t.Fatal(err)
		}
		if got := factorize.SolveBytes(s, tc.r, factorize.SingleParticipation(), tc.banded); got != tc.want {
			t.Errorf("%+v: SolveBytes %g, want %g", tc, got, tc.want)
		}
	}
}

// TestWithSetting checks the edits of a spec that a rerun's advice makes.
func TestWithSetting(t *testing.T) {
	s, _ := factorize.ParseStrategy("semiseparable:buffers=2,tol=1e-12")
	s, _ = factorize.WithLossOnly(s, true)
	got, err := factorize.WithSetting(s, "tol", "1e-08")
	if err != nil || got.Spec() != "semiseparable:buffers=2,tol=1e-08" || !factorize.IsLossOnly(got) {
		t.Errorf("WithSetting: %v, %v", got, err)
	}
	if _, err := factorize.WithSetting(factorize.BSRStrategy{}, "max-iter", "9"); err == nil || !strings.Contains(err.Error(), "bsr takes (bands)") {
		t.Errorf("WithSetting(bsr, max-iter): %v", err)
	}
	// One setting only: a value or key with a ',' (or a key with a '=')
	// used to set further settings silently ("banded:bands=4,tol=0.001").
	for _, kv := range [][2]string{{"bands", "4,tol=1e-3"}, {"bands=4,tol", "1e-3"}, {"bands=4", "5"}, {"tol", "1e-3,"}} {
		got, err := factorize.WithSetting(factorize.BandedStrategy{}, kv[0], kv[1])
		var pe *factorize.ParamError
		if !errors.As(err, &pe) || strings.Contains(err.Error(), "\n") {
			t.Errorf("WithSetting(banded, %q, %q) = %#v, %v; want a one-line *ParamError", kv[0], kv[1], got, err)
		}
	}
	if b, ok := factorize.CBands(factorize.BandedStrategy{}); !ok || b != factorize.DefaultBands {
		t.Errorf("CBands(banded) = %d, %t", b, ok)
	}
	if b, ok := factorize.CBands(factorize.BSRStrategy{Bands: 5}); !ok || b != 5 {
		t.Errorf("CBands(bsr:bands=5) = %d, %t", b, ok)
	}
	if _, ok := factorize.CBands(factorize.BLTStrategy{}); ok {
		t.Error("CBands(blt): ok")
	}
	called := false
	p := factorize.WithProgress(factorize.OptimalStrategy{}, func(factorize.Progress) { called = true })
	w, _ := factorize.Prefix(20)
	if _, err := p.Factorize(context.Background(), w, factorize.SingleParticipation()); err != nil || !called {
		t.Errorf("WithProgress(optimal): called %t, %v", called, err)
	}
	// Banded under min-separation runs a solver that reports; its spec and
	// cache key do not carry the callback.
	w, _ = factorize.Prefix(40)
	for _, lossOnly := range []bool{false, true} {
		called = false
		var s factorize.Strategy = factorize.BandedStrategy{Bands: 4, LossOnly: lossOnly}
		p = factorize.WithProgress(s, func(factorize.Progress) { called = true })
		if p.Spec() != s.Spec() || factorize.CacheKey(p) != factorize.CacheKey(s) {
			t.Errorf("WithProgress(banded) changed the spec or key: %s, %s", p.Spec(), factorize.CacheKey(p))
		}
		if _, err := p.Factorize(context.Background(), w, factorize.MinSeparation(4, 10)); err != nil || !called {
			t.Errorf("WithProgress(banded), loss only %t: called %t, %v", lossOnly, called, err)
		}
	}
}

// TestOptimalPathNeedsOnePath checks that the optimal solver's path is
// refused under fixed epochs, whose solver would ignore it, and taken
// elsewhere.
func TestOptimalPathNeedsOnePath(t *testing.T) {
	w, err := factorize.Prefix(12)
	if err != nil {
		t.Fatal(err)
	}
	s, err := factorize.ParseStrategy("optimal:path=dense")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Factorize(context.Background(), w, factorize.FixedEpochs(3)); err == nil || !strings.Contains(err.Error(), "path only under") {
		t.Errorf("optimal:path=dense under epochs:3: %v, want an error", err)
	}
	if _, err := s.Factorize(context.Background(), w, factorize.SingleParticipation()); err != nil {
		t.Errorf("optimal:path=dense under single participation: %v", err)
	}
}

// A spec names a strategy and its settings; Spec writes the canonical form
// back, and a setting the strategy does not take is an error.
func ExampleParseStrategy() {
	s, err := factorize.ParseStrategy("optimal:path=dense,tol=1e-8")
	if err != nil {
		panic(err)
	}
	fmt.Println(s.Spec())
	_, err = factorize.ParseStrategy("blt:bands=4")
	fmt.Println(err)
	info, _ := factorize.Lookup("blt")
	for _, st := range info.Settings {
		fmt.Printf("%s %s (default %s): %s\n", st.Name, st.Type, st.Default, st.Doc)
	}
	fmt.Println(factorize.StreamBytes(factorize.BLTStrategy{Buffers: 2}, 1000, 10), "bytes of noise state")
	fmt.Println(factorize.Strategies())
	// Output:
	// optimal:tol=1e-08,path=dense
	// dpmf: strategy = "blt:bands=4", want a setting that blt takes (buffers), not bands
	// buffers int (default 4): number K of buffers (at most 64)
	// 160 bytes of noise state
	// [identity tree sqrt sqrt-normalized banded bsr banded-toeplitz bisr bandinv blt semiseparable optimal]
}

// TestRegistryOrder checks that the strategies, registered from their own
// files, come in their declared rank order (the order of -compare tables
// and docs/strategies.md).
func TestRegistryOrder(t *testing.T) {
	want := []string{"identity", "tree", "sqrt", "sqrt-normalized", "banded", "bsr", "banded-toeplitz", "bisr", "bandinv", "blt", "semiseparable", "optimal"}
	if got := factorize.Strategies(); !reflect.DeepEqual(got, want) {
		t.Errorf("Strategies() = %q, want %q", got, want)
	}
}

// TestCacheKey checks the cache key against keys written out by hand:
// defaults filled in where they do not depend on the participation,
// max-iter left out, the optimal strategy's path kept, loss-only marked.
func TestCacheKey(t *testing.T) {
	for _, tc := range []struct {
		s    factorize.Strategy
		want string
	}{
		{factorize.IdentityStrategy{}, "identity"},
		{factorize.SqrtStrategy{Normalized: true}, "sqrt-normalized"},
		{factorize.BandedStrategy{}, "banded/bands=0/tol=1e-08"},
		{factorize.BandedStrategy{Bands: 3, Tol: 1e-6, MaxIter: 9}, "banded/bands=3/tol=1e-06"},
		{factorize.BISRStrategy{Bands: 5, LossOnly: true}, "bisr/bands=5/loss-only"},
		{factorize.BLTStrategy{}, "blt/buffers=4"},
		{factorize.SemisepStrategy{}, "semiseparable/buffers=0/max-excess=0.001/tol=1e-10/loss-only"},
		{factorize.SemisepStrategy{Buffers: 3, Factors: true, MaxIter: 5}, "semiseparable/buffers=3/max-excess=0.001/tol=1e-10"},
		{factorize.OptimalStrategy{Options: factorize.Options{MaxIter: 3, Method: factorize.Dense, LossOnly: true}}, "optimal/tol=1e-10/path=dense/loss-only"},
		{factorize.OptimalStrategy{}, "optimal/tol=1e-10/path=auto"},
		{factorize.OptimalStrategy{Options: factorize.Options{Method: factorize.Structured}}, "optimal/tol=1e-10/path=structured"},
		{nil, ""},
	} {
		if got := factorize.CacheKey(tc.s); got != tc.want {
			t.Errorf("CacheKey(%#v) = %q, want %q", tc.s, got, tc.want)
		}
	}
}
