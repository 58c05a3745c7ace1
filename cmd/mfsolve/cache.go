package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	dpcache "github.com/dpmf/dpmf/cache"
	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/internal/cli"
)

// budgetEnv is the environment variable that sets the cache budget when
// -cache-budget is not given.
const budgetEnv = "DPMF_CACHE_BUDGET"

// budgetWant is what a cache budget must look like, for error messages.
const budgetWant = "want a size such as 500M, 2G or 1.5GiB (K, M, G, T are powers of 1024; a plain number is bytes), 0 (no cache) or unlimited"

// parseSize parses a cache budget: a number of bytes with an optional unit
// K, M, G or T (powers of 1024, optionally followed by B or iB, any case),
// or "unlimited" (dpcache.Unlimited). 0 is returned as 0: the
// caller turns the cache off.
func parseSize(s string) (int64, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	if v == "unlimited" {
		return dpcache.Unlimited, nil
	}
	i := strings.IndexFunc(v, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i < 0 {
		i = len(v)
	}
	num, unit := v[:i], strings.TrimSpace(v[i:])
	mult := map[string]float64{"": 1, "b": 1}
	for k, u := range []string{"k", "m", "g", "t"} {
		m := math.Pow(1024, float64(k+1))
		mult[u], mult[u+"b"], mult[u+"ib"] = m, m, m
	}
	m, ok := mult[unit]
	x, err := strconv.ParseFloat(num, 64)
	// Plain bytes are whole by their digits: a fraction float64 rounds
	// away (2.00000000000000001 is 2) is refused too.
	_, frac, _ := strings.Cut(num, ".")
	whole := strings.Trim(frac, "0") == ""
	// A nonzero size below one byte is refused, not rounded to 0 (which
	// turns the cache off).
	if !ok || err != nil || x*m > 1<<62 || (m == 1 && !whole) || (x > 0 && x*m < 1) {
		return 0, errors.New(budgetWant)
	}
	return int64(x * m), nil
}

// resolveBudget sets cfg.budget from -cache-budget, or else from
// DPMF_CACHE_BUDGET, or else the default, and turns the cache off for a
// budget of 0. A bad environment value is a usage error that names the
// variable.
func resolveBudget(cfg *config, getenv func(string) string) error {
	if !cfg.budgetSet {
		cfg.budget = dpcache.DefaultBudget
		if getenv != nil {
			if v := getenv(budgetEnv); v != "" {
				b, err := parseSize(v)
				if err != nil {
					return cli.Usagef("%s=%q: %v", budgetEnv, v, err)
				}
				cfg.budget = b
			}
		}
	}
	if cfg.budget == 0 {
		cfg.noCache = true
	}
	return nil
}

// describeBudget words a budget for the cache listing.
func describeBudget(b int64) string {
	switch {
	case b == 0:
		return "caching is off (budget 0)"
	case b < 0:
		return "no budget (unlimited)"
	}
	return "budget " + dpcache.FormatSize(b)
}

const cacheUsageText = `Usage: mfsolve cache list [-cache DIR] [-cache-budget SIZE] [-json]
       mfsolve cache clear [-cache DIR]

list prints the entries of the factorization cache, most recently used first
(last use, size, strategy, workload, R, participation, what is stored: B and
C, the noise operator in structured form, or the metrics only; key), and
their total against the budget. clear removes every entry.
Entries are evicted least recently used first when a store would take the
cache over its budget (-cache-budget, else $DPMF_CACHE_BUDGET, else 1G).

Flags:
`

// runCache is "mfsolve cache list|clear".
func runCache(args []string, e env) error {
	if len(args) == 0 || (args[0] != "list" && args[0] != "clear" && args[0] != "-h" && args[0] != "-help" && args[0] != "--help") {
		got := "nothing"
		if len(args) > 0 {
			got = fmt.Sprintf("%q", args[0])
		}
		return cli.Usagef("cache: got %s, want list or clear (mfsolve cache -h for help)", got)
	}
	verb := args[0]
	var cfg config
	fs := cli.NewFlagSet("mfsolve cache")
	fs.StringVar(&cfg.cacheDir, "cache", "", "the cache directory `DIR` (default: the user cache directory + /dpmf)")
	fs.Func("cache-budget", "the budget `SIZE` to show with list (default: $DPMF_CACHE_BUDGET, else 1G)", func(v string) error {
		b, err := parseSize(v)
		cfg.budget, cfg.budgetSet = b, true
		return err
	})
	fs.BoolVar(&cfg.json, "json", false, "list: print one JSON object (dir, budget, total, entries)")
	flagArgs := args[1:]
	if strings.HasPrefix(verb, "-") {
		flagArgs = args // -h: ParseFlags prints the usage
	}
	set, err := cli.ParseFlags(fs, flagArgs, e.stdout, cacheUsageText, "cache "+verb+": ", cli.Once)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return nil
	case err != nil:
		return err
	case set["cache"] && cfg.cacheDir == "":
		return cli.Usagef("-cache is empty: want a directory")
	case cli.NotFlag("-cache", cfg.cacheDir, "a directory") != nil:
		return cli.NotFlag("-cache", cfg.cacheDir, "a directory")
	case verb == "clear" && set["json"]:
		return cli.Usagef("cache clear: -json applies only to cache list (clear takes only -cache)")
	case verb == "clear" && set["cache-budget"]:
		return cli.Usagef("cache clear: -cache-budget applies only to cache list (clear takes only -cache)")
	}
	if verb == "list" {
		// The budget is only shown by list: a bad DPMF_CACHE_BUDGET
		// does not stop a clear.
		if err := resolveBudget(&cfg, e.getenv); err != nil {
			return err
		}
	}
	dir, err := e.cacheDir(cfg)
	switch {
	case err != nil:
		return fmt.Errorf("%v; use -cache DIR", err)
	case dir == "":
		return errors.New("no cache directory: use -cache DIR")
	}
	c := &dpcache.Cache{Dir: dir, Budget: cfg.budget}
	if verb == "clear" {
		n, freed, err := c.Clear()
		if err != nil {
			return fmt.Errorf("clearing the cache %s: %v", dir, err)
		}
		removed := fmt.Sprintf("removed %d %s (%s) from %s", n, plural(n, "entry", "entries"), dpcache.FormatSize(freed), dir)
		if _, err := fmt.Fprintf(e.stdout, "%s\n", removed); err != nil {
			// The entries are gone: a bare "write /dev/stdout: ..."
			// would read as if nothing had been removed.
			return fmt.Errorf("%s, but printing the report failed: %w", removed, err)
		}
		return nil
	}
	entries, err := c.List()
	if err != nil {
		return fmt.Errorf("listing the cache %s: %v", dir, err)
	}
	var total int64
	for _, en := range entries {
		total += en.Size
	}
	if cfg.json {
		js, err := json.Marshal(struct {
			Dir     string          `json:"dir"`
			Budget  int64           `json:"budget"`
			Total   int64           `json:"total"`
			Entries []dpcache.Entry `json:"entries"`
		}{dir, cfg.budget, total, entries})
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(e.stdout, "%s\n", js)
		return err
	}
	// A listing that cannot be printed is a failure (the table's Flush
	// reports its own writes' errors, not this line's).
	if _, err := fmt.Fprintf(e.stdout, "cache %s: %d %s, %s; %s\n", dir, len(entries), plural(len(entries), "entry", "entries"), dpcache.FormatSize(total), describeBudget(cfg.budget)); err != nil || len(entries) == 0 {
		return err
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "LAST USED\tSIZE\tSTRATEGY\tWORKLOAD\tR\tPARTICIPATION\tSTORED\tKEY")
	for _, en := range entries {
		used := en.LastUsed.Format(time.DateTime)
		if en.Problem != "" {
			fmt.Fprintf(tw, "%s\t%s\tunreadable (%s)\t\t\t\t\t%s\n", used, dpcache.FormatSize(en.Size), printable(en.Problem), en.Key[:12])
			continue
		}
		stored := "metrics only"
		if en.Factors {
			stored = "B and C"
		} else if en.Operator != "" {
			stored = "operator (" + en.Operator + ")"
		}
		workload := printable(workloadName(en.Workload))
		if len(workload) > 24 {
			workload = workload[:21] + "..."
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", used, dpcache.FormatSize(en.Size), printable(en.Strategy), workload, en.R, printable(en.Participation), stored, en.Key[:12])
	}
	return tw.Flush()
}

// workloadName returns the name cache list shows for a workload's cache
// key (factorize.Workload.Key): a momentum key, "momentum:" and the hex
// bits of beta, as -workload takes it ("momentum:0.9", the shortest
// decimal that reads back to the same bits); any other key as it is.
func workloadName(key string) string {
	hex, ok := strings.CutPrefix(key, "momentum:")
	if !ok || len(hex) > 16 {
		return key
	}
	bits, err := strconv.ParseUint(hex, 16, 64)
	if err != nil {
		return key
	}
	return "momentum:" + strconv.FormatFloat(math.Float64frombits(bits), 'g', -1, 64)
}

// printable returns s, or s quoted (strconv.Quote) when it holds a
// character that is not printable, a tab included, or is not UTF-8: cache list prints an
// entry's metadata, which is the file's and unverified (a load checks it),
// and a line break, carriage return or escape sequence in it must not
// reach the terminal or break the table's one line per entry.
func printable(s string) string {
	if !utf8.ValidString(s) || strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		return strconv.Quote(s)
	}
	return s
}

// plural returns one for n = 1 and many otherwise.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// cacheFor returns the cache of the run, or nil for -no-cache (or a budget
// of 0) or when no cache directory can be found (reported on warn).
func cacheFor(cfg config, e env, warn io.Writer) *dpcache.Cache {
	if cfg.noCache {
		return nil
	}
	dir, err := e.cacheDir(cfg)
	if err != nil {
		fmt.Fprintf(warn, "%v; running without a cache (use -cache DIR)\n", err)
		return nil
	}
	if dir == "" {
		return nil
	}
	return &dpcache.Cache{Dir: dir, Budget: cfg.budget}
}

// factorizeWith returns strat's factorization of w under p and whether it
// was loaded from cache; with a nil cache it is computed.
func factorizeWith(ctx context.Context, cache *dpcache.Cache, strat factorize.Strategy, w *factorize.Workload, p factorize.Participation, warn io.Writer) (*factorize.Factorization, bool, error) {
	if cache == nil {
		f, err := strat.Factorize(ctx, w, p)
		return f, false, err
	}
	return cache.Compute(ctx, strat, w, p, warn)
}

// cacheDir returns the cache directory of cfg: -cache DIR, else the
// default one; "" when there is none.
func (e env) cacheDir(cfg config) (string, error) {
	if cfg.cacheDir != "" || e.defaultCacheDir == nil {
		return cfg.cacheDir, nil
	}
	return e.defaultCacheDir()
}

// compareKeeps is the store policy of -compare: only the results of the
// iterative, certified solvers (optimal, semiseparable, banded under
// min-separation), which take far longer to compute than to load. The
// closed forms and the other strategies are recomputed in well under a
// second at R = 1000, and their dense B and C (16 R^2 bytes each) would
// fill the cache with entries that save nothing.
func compareKeeps(f *factorize.Factorization) bool {
	return f.Iterations > 0
}
