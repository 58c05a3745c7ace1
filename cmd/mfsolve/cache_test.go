package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	dpcache "github.com/dpmf/dpmf/cache"
	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/internal/cli"
)

// runEnv runs mfsolve in-process with the given default cache directory
// and environment variables.
func runEnv(cacheDir string, vars map[string]string, args ...string) runResult {
	var out, errb bytes.Buffer
	code := run(context.Background(), args, env{
		stdout:          &out,
		stderr:          &errb,
		memAvailable:    func() (uint64, error) { return testMemory, nil },
		defaultCacheDir: func() (string, error) { return cacheDir, nil },
		getenv:          func(k string) string { return vars[k] },
	})
	return runResult{code, out.String(), errb.String()}
}

// cacheBytes returns the total size of the entries (*.dpmf) in dir, found
// with os.Stat, and their count.
func cacheBytes(t *testing.T, dir string) (int64, int) {
	t.Helper()
	des, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return 0, 0
	}
	require.NoError(t, err)
	var total int64
	n := 0
	for _, de := range des {
		if !strings.HasSuffix(de.Name(), ".dpmf") {
			continue
		}
		fi, err := os.Stat(filepath.Join(dir, de.Name()))
		require.NoError(t, err)
		total += fi.Size()
		n++
	}
	return total, n
}

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"0", 0}, {"1", 1}, {"4096", 4096}, {"1k", 1024}, {"1K", 1024}, {"1KB", 1024}, {"1KiB", 1024},
		{"500M", 500 << 20}, {"2G", 2 << 30}, {"2g", 2 << 30}, {"1.5GiB", 3 << 29}, {"1T", 1 << 40},
		{" 3M ", 3 << 20}, {"10B", 10}, {"unlimited", dpcache.Unlimited}, {"Unlimited", -1},
	} {
		got, err := parseSize(tc.in)
		require.NoError(t, err, "%q", tc.in)
		assert.Equal(t, tc.want, got, "%q", tc.in)
	}
	for _, bad := range []string{"", "abc", "-1", "-1G", "1X", "1.5", "G", "NaN", "Inf", "1e3", "0x10", "1GG", "1iB", "9999999T", "1_000",
		// Nonzero, but less than a byte: not rounded to 0, which would
		// turn the cache off (reads included) for a positive budget.
		"0.0001K", "0.0000001M", "0.0000000001G"} {
		_, err := parseSize(bad)
		require.Error(t, err, "%q", bad)
		assert.Contains(t, err.Error(), "want a size such as 500M", "%q", bad)
	}
}

// The budget comes from -cache-budget, else DPMF_CACHE_BUDGET, else
// 1 GiB; 0 turns the cache off; bad values are one-line usage errors.
func TestCacheBudgetSources(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	args := []string{"-strategy", "sqrt", "-R", "40", "-json"} // B and C: 2 * 8 * 40^2 = 25.6 KB, the operator 2 * 8 * 40

	res := runEnv(cache, map[string]string{budgetEnv: "5x"}, args...)
	assert.Equal(t, cli.ExitUsage, res.code)
	requireOneErrorLine(t, res.stderr, "")
	assert.Equal(t, "mfsolve: DPMF_CACHE_BUDGET=\"5x\": "+budgetWant+"\n", res.stderr)

	res = runEnv(cache, nil, append(args, "-cache-budget", "lots")...)
	assert.Equal(t, cli.ExitUsage, res.code)
	requireOneErrorLine(t, res.stderr, "")
	assert.Contains(t, res.stderr, `invalid value "lots" for flag -cache-budget: want a size such as 500M`)

	res = runEnv(cache, nil, append(args, "-cache-budget", "1M", "-no-cache")...)
	assert.Equal(t, cli.ExitUsage, res.code)
	assert.Equal(t, "mfsolve: -cache-budget and -no-cache contradict each other\n", res.stderr)

	// 0: neither read nor written.
	for range 2 {
		res = runEnv(cache, map[string]string{budgetEnv: "0"}, args...)
		require.Equal(t, cli.ExitOK, res.code, res.stderr)
		assert.Empty(t, res.stderr)
		assert.Equal(t, false, parseJSON(t, res.stdout)["cached"])
	}
	_, err := os.Stat(cache)
	assert.True(t, os.IsNotExist(err), "budget 0 created the cache directory")

	// An entry over the budget is not stored, with one warning.
	res = runEnv(cache, map[string]string{budgetEnv: "20K"}, args...)
	require.Equal(t, cli.ExitOK, res.code, res.stderr)
	assert.Regexp(t, `^mfsolve: not cached: the entry \(26\.[0-9] KiB\) is larger than the cache budget \(20\.0 KiB\)\n$`, res.stderr)
	_, n := cacheBytes(t, cache)
	assert.Zero(t, n)

	// The flag overrides the environment.
	res = runEnv(cache, map[string]string{budgetEnv: "20K"}, append(args, "-cache-budget", "1M")...)
	require.Equal(t, cli.ExitOK, res.code, res.stderr)
	assert.Empty(t, res.stderr)
	_, n = cacheBytes(t, cache)
	assert.Equal(t, 1, n)
	res = runEnv(cache, map[string]string{budgetEnv: "unlimited"}, args...)
	require.Equal(t, cli.ExitOK, res.code, res.stderr)
	assert.Equal(t, true, parseJSON(t, res.stdout)["cached"])
}

// -compare reads every cached strategy but stores only the iterative
// solvers' results.
func TestCompareStoresOnlySolvers(t *testing.T) {
	cache := filepath.Join(t.TempDir(), "cache")
	res := runEnv(cache, nil, "-R", "48", "-compare", "-json")
	require.Equal(t, cli.ExitOK, res.code, res.stderr)
	entries, err := (&dpcache.Cache{Dir: cache}).List()
	require.NoError(t, err)
	var stored []string
	for _, e := range entries {
		stored = append(stored, e.Strategy)
	}
	slices.Sort(stored)
	assert.Equal(t, []string{"optimal", "semiseparable"}, stored)

	// A tree entry stored by a plain run is read by -compare.
	res = runEnv(cache, nil, "-R", "48", "-strategy", "tree", "-quiet")
	require.Equal(t, cli.ExitOK, res.code, res.stderr)
	res = runEnv(cache, nil, "-R", "48", "-compare", "-json")
	require.Equal(t, cli.ExitOK, res.code, res.stderr)
	assert.Empty(t, res.stderr, "every cached entry loads")
	cachedRows := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(res.stdout))
	for sc.Scan() {
		var row struct {
			Strategy string `json:"strategy"`
			Cached   bool   `json:"cached"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &row))
		cachedRows[row.Strategy] = row.Cached
	}
	assert.Len(t, cachedRows, len(factorize.Strategies()))
	for s, c := range cachedRows {
		want := s == "optimal" || s == "semiseparable" || s == "tree"
		assert.Equal(t, want, c, "%s cached", s)
	}
}

func TestCacheListClearCommand(t *testing.T) {
	cache := filepath.Join(t.TempDir(), "cache")
	for _, s := range []string{"identity", "tree"} {
		res := runEnv(cache, nil, "-R", "30", "-strategy", s, "-quiet")
		require.Equal(t, cli.ExitOK, res.code, res.stderr)
	}
	// The identity is loaded last: the most recently used.
	res := runEnv(cache, nil, "-R", "30", "-strategy", "identity", "-json")
	require.Equal(t, cli.ExitOK, res.code, res.stderr)
	require.Equal(t, true, parseJSON(t, res.stdout)["cached"])
	total, n := cacheBytes(t, cache)
	require.Equal(t, 2, n)

	res = runEnv(cache, nil, "cache", "list")
	require.Equal(t, cli.ExitOK, res.code, res.stderr)
	assert.Empty(t, res.stderr)
	lines := strings.Split(strings.TrimSuffix(res.stdout, "\n"), "\n")
	require.Len(t, lines, 4, res.stdout)
	assert.Equal(t, fmt.Sprintf("cache %s: 2 entries, %s; budget 1.0 GiB", cache, dpcache.FormatSize(total)), lines[0])
	assert.Regexp(t, `^LAST USED +SIZE +STRATEGY +WORKLOAD +R +PARTICIPATION +STORED +KEY$`, lines[1])
	// identity: B and C 30 x 30; tree: C has 30 + 15 + 7 + 3 + 1 = 56 rows.
	assert.Regexp(t, `^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d +14\.[0-9] KiB +identity +prefix +30 +single +B and C +[0-9a-f]{12}$`, lines[2])
	assert.Regexp(t, `^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d +27\.[0-9] KiB +tree +prefix +30 +single +B and C +[0-9a-f]{12}$`, lines[3])

	res = runEnv(cache, map[string]string{budgetEnv: "unlimited"}, "cache", "list", "-json")
	require.Equal(t, cli.ExitOK, res.code, res.stderr)
	var listing struct {
		Dir     string
		Budget  int64
		Total   int64
		Entries []dpcache.Entry
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &listing))
	assert.Equal(t, cache, listing.Dir)
	assert.Equal(t, int64(-1), listing.Budget)
	assert.Equal(t, total, listing.Total)
	require.Len(t, listing.Entries, 2)
	assert.Equal(t, 56, listing.Entries[1].M)

	// Usage errors.
	for _, args := range [][]string{{"cache"}, {"cache", "show"}, {"cache", "list", "extra"}, {"cache", "list", "-cache", ""}, {"cache", "clear", "-json"}, {"cache", "list", "-cache-budget", "x"}} {
		res = runEnv(cache, nil, args...)
		assert.Equal(t, cli.ExitUsage, res.code, "%q", args)
		requireOneErrorLine(t, res.stderr, "")
	}
	res = runEnv(cache, nil, "cache", "-h")
	assert.Equal(t, cli.ExitOK, res.code)
	assert.Contains(t, res.stdout, "mfsolve cache clear")

	res = runEnv(cache, nil, "cache", "clear", "-cache-budget", "1G")
	assert.Equal(t, cli.ExitUsage, res.code)
	requireOneErrorLine(t, res.stderr, "mfsolve: cache clear: -cache-budget applies only to cache list")

	// The budget is list's: a bad DPMF_CACHE_BUDGET does not stop a clear.
	res = runEnv(cache, map[string]string{budgetEnv: "5x"}, "cache", "clear")
	require.Equal(t, cli.ExitOK, res.code, res.stderr)
	assert.Equal(t, fmt.Sprintf("removed 2 entries (%s) from %s\n", dpcache.FormatSize(total), cache), res.stdout)
	_, n = cacheBytes(t, cache)
	assert.Zero(t, n)
	res = runEnv(cache, nil, "cache", "list")
	require.Equal(t, cli.ExitOK, res.code, res.stderr)
	assert.Equal(t, fmt.Sprintf("cache %s: 0 entries, 0 B; budget 1.0 GiB\n", cache), res.stdout)
}

// cache list says what each entry stores: the optimal strategy keeps its
// semiseparable operator and no dense factors (B and C are formed from it
// when asked for), a loss-only result its metrics only.
func TestCacheListStored(t *testing.T) {
	cache := filepath.Join(t.TempDir(), "cache")
	for _, args := range [][]string{{"-R", "30", "-quiet"}, {"-R", "30", "-loss-only", "-quiet"}} {
		res := runEnv(cache, nil, args...)
		require.Equal(t, cli.ExitOK, res.code, res.stderr)
	}
	res := runEnv(cache, nil, "cache", "list")
	require.Equal(t, cli.ExitOK, res.code, res.stderr)
	lines := strings.Split(strings.TrimSuffix(res.stdout, "\n"), "\n")
	require.Len(t, lines, 4, res.stdout)
	assert.Regexp(t, ` +optimal +prefix +30 +single +metrics only +[0-9a-f]{12}$`, lines[2])
	assert.Regexp(t, ` +optimal +prefix +30 +single +operator \(semiseparable\) +[0-9a-f]{12}$`, lines[3])
	entries, err := (&dpcache.Cache{Dir: cache}).List()
	require.NoError(t, err)
	require.Len(t, entries, 2)
	assert.Equal(t, []string{"", "semiseparable"}, []string{entries[0].Operator, entries[1].Operator})
	assert.Equal(t, []bool{false, false}, []bool{entries[0].Factors, entries[1].Factors})

	// The operator entry gives B as a fresh solve does: 30 x 30.
	out := filepath.Join(t.TempDir(), "B.npy")
	res = runEnv(cache, nil, "-R", "30", "-o", out, "-json")
	require.Equal(t, cli.ExitOK, res.code, res.stderr)
	assert.Equal(t, true, parseJSON(t, res.stdout)["cached"])
}

// readmeCommands returns the arguments of the README's mfsolve commands.
func readmeCommands(t *testing.T) [][]string {
	t.Helper()
	data, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	var cmds [][]string
	for _, line := range strings.Split(string(data), "\n") {
		rest, ok := strings.CutPrefix(line, "go run ./cmd/mfsolve ")
		if !ok {
			continue
		}
		rest, _, _ = strings.Cut(rest, "#")
		cmds = append(cmds, strings.Fields(rest))
	}
	require.GreaterOrEqual(t, len(cmds), 3, "README's mfsolve commands")
	return cmds
}

// The README's mfsolve commands leave the cache within a small budget, and
// keep only the solvers' results under the default one (optimal,
// semiseparable, and banded under min-separation, its certified solver).
func TestReadmeCommandsWithinBudget(t *testing.T) {
	cmds := readmeCommands(t)
	dir := t.TempDir()
	t.Chdir(dir)
	// Entries of up to 15.4 MiB (semiseparable at R = 1000; optimal keeps
	// its structured operator, 700.6 KiB at R = 800): the budget holds one
	// or two large ones, so the commands evict.
	const budget = 20 << 20
	small, big := filepath.Join(dir, "small"), filepath.Join(dir, "big")
	for _, args := range cmds {
		res := runEnv(small, map[string]string{budgetEnv: "20M"}, args...)
		require.Equal(t, cli.ExitOK, res.code, "%q: %s", args, res.stderr)
		total, _ := cacheBytes(t, small)
		require.LessOrEqual(t, total, int64(budget), "after %q", args)
	}
	if testing.Short() {
		return
	}
	for _, args := range cmds {
		res := runEnv(big, nil, args...)
		require.Equal(t, cli.ExitOK, res.code, "%q: %s", args, res.stderr)
	}
	entries, err := (&dpcache.Cache{Dir: big}).List()
	require.NoError(t, err)
	var total int64
	for _, e := range entries {
		assert.Contains(t, []string{"optimal", "semiseparable", "banded"}, e.Strategy)
		total += e.Size
	}
	t.Logf("the README's mfsolve commands leave %d bytes (%s) in %d entries", total, dpcache.FormatSize(total), len(entries))
}

// docFields returns the fields of docs/cli.md's output table: all of them,
// and those marked as on the summary line.
func docFields(t *testing.T) (all, line []string) {
	t.Helper()
	data, err := os.ReadFile("../../docs/cli.md")
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(data), "| field | in | meaning |")
	require.True(t, ok, "docs/cli.md has no output table")
	row := regexp.MustCompile("^\\| `([A-Za-z_]+)` \\| ([a-zA-Z, ]+) \\|")
	for _, l := range strings.Split(rest, "\n")[2:] {
		m := row.FindStringSubmatch(l)
		if m == nil {
			break
		}
		all = append(all, m[1])
		if strings.Contains(m[2], "line") {
			line = append(line, m[1])
		}
	}
	return all, line
}

// Every field that docs/cli.md lists is in the output and vice versa, and
// mfsolve -h explains each field of the summary line.
func TestOutputFieldsDocumented(t *testing.T) {
	dir := t.TempDir()
	args := []string{"-R", "6", "-eps", "1", "-delta", "1e-5", "-no-cache", "-o", filepath.Join(dir, "B.npy")}
	docAll, docLine := docFields(t)

	res := runT(t, args...)
	require.Equal(t, cli.ExitOK, res.code, res.stderr)
	head, _, ok := strings.Cut(res.stdout, "; wrote B (6 x 6) to ")
	require.True(t, ok, res.stdout)
	var keys []string
	for _, f := range strings.Fields(head) {
		k, _, ok := strings.Cut(f, "=")
		if !ok {
			break // the calibration's assumptions
		}
		keys = append(keys, k)
	}
	assert.ElementsMatch(t, docLine, keys, "docs/cli.md's line fields against the summary line")

	res = runT(t, append(args, "-json")...)
	require.Equal(t, cli.ExitOK, res.code, res.stderr)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &m))
	var jsonKeys []string
	for k := range m {
		jsonKeys = append(jsonKeys, k)
	}
	assert.ElementsMatch(t, docAll, jsonKeys, "docs/cli.md's fields against -json")

	res = runT(t, "-h")
	require.Equal(t, cli.ExitOK, res.code)
	for _, k := range keys {
		assert.Regexp(t, "\n  "+k+" +[a-z]", res.stdout, "mfsolve -h explains %s", k)
	}
	var helpKeys []string
	for _, f := range summaryFields {
		helpKeys = append(helpKeys, f[0])
	}
	assert.ElementsMatch(t, keys, helpKeys)
}

// The summary line and -json name each file written with its shape, which
// is that of the file.
func TestSummaryNamesFilesWritten(t *testing.T) {
	dir := t.TempDir()
	b, c, z := filepath.Join(dir, "B.npy"), filepath.Join(dir, "C.npy"), filepath.Join(dir, "Z.npy")
	// Tree aggregation over 13 rounds: m = 13 + 6 + 3 + 1 = 23 noise rows.
	args := []string{"-R", "13", "-strategy", "tree", "-o", b, "-C", c, "-noise", z, "-dim", "2", "-std", "1", "-seed", "1"}
	res := runT(t, args...)
	require.Equal(t, cli.ExitOK, res.code, res.stderr)
	assert.True(t, strings.HasSuffix(res.stdout, fmt.Sprintf(" cached=false; wrote B (13 x 23) to %s, C (23 x 13) to %s, noise (13 x 2) to %s\n", b, c, z)), res.stdout)
	for path, shape := range map[string][2]int{b: {13, 23}, c: {23, 13}, z: {13, 2}} {
		r, cols := loadDense(t, path).Dims()
		assert.Equal(t, shape, [2]int{r, cols}, path)
	}

	res = runT(t, append(args, "-json")...)
	require.Equal(t, cli.ExitOK, res.code, res.stderr)
	var out struct {
		Wrote []written `json:"wrote"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &out))
	assert.Equal(t, []written{{"B", b, 13, 23}, {"C", c, 23, 13}, {"noise", z, 13, 2}}, out.Wrote)

	res = runT(t, "-R", "13", "-loss-only", "-no-cache")
	require.Equal(t, cli.ExitOK, res.code, res.stderr)
	assert.True(t, strings.HasSuffix(res.stdout, " cached=false; wrote no files\n"), res.stdout)
}

// cache list reads an entry's metadata without its checksum, and the
// metadata is the file's: strings holding a line break, a carriage return
// or an escape sequence are printed quoted, one line per entry, as a load
// quotes them in its corrupt-entry warning. Before, they went to the
// terminal raw (found by the cache review: a strategy "semi\nFAKE LINE"
// printed a second table row, "\x1b[31m" turned the table red).
func TestCacheListQuotesControlCharacters(t *testing.T) {
	cache := filepath.Join(t.TempDir(), "cache")
	res := runEnv(cache, nil, "-R", "30", "-quiet")
	require.Equal(t, cli.ExitOK, res.code, res.stderr)
	paths, err := filepath.Glob(filepath.Join(cache, "*.dpmf"))
	require.NoError(t, err)
	require.Len(t, paths, 1)
	// The entry's layout (package cache): magic, version, the metadata's
	// length, the metadata, the floats, the SHA-256 of all before it.
	data, err := os.ReadFile(paths[0])
	require.NoError(t, err)
	n := int(binary.LittleEndian.Uint32(data[12:16]))
	var meta map[string]any
	require.NoError(t, json.Unmarshal(data[16:16+n], &meta))
	meta["strategy"], meta["workload"], meta["participation"] = "semi\nFAKE LINE", "pre\x1b[31mfix", "single\rX"
	js, err := json.Marshal(meta)
	require.NoError(t, err)
	body := binary.LittleEndian.AppendUint32(slices.Clone(data[:12]), uint32(len(js)))
	body = append(append(body, js...), data[16+n:len(data)-sha256.Size]...)
	sum := sha256.Sum256(body)
	require.NoError(t, os.WriteFile(paths[0], append(body, sum[:]...), 0o600))

	res = runEnv(cache, nil, "cache", "list")
	require.Equal(t, cli.ExitOK, res.code, res.stderr)
	lines := strings.Split(strings.TrimSuffix(res.stdout, "\n"), "\n")
	require.Len(t, lines, 3, "%q", res.stdout)
	assert.NotContains(t, res.stdout, "\x1b")
	assert.NotContains(t, res.stdout, "\r")
	assert.Contains(t, lines[2], `"semi\nFAKE LINE"`)
	assert.Contains(t, lines[2], `"pre\x1b[31mfix"`)
	assert.Contains(t, lines[2], `"single\rX"`)
}

// cache list names a momentum workload as -workload takes it
// (momentum:0.9), not by its cache key's float64 bits
// ("momentum:3feccccccccc...", cut at 24 characters).
func TestCacheListMomentumWorkload(t *testing.T) {
	cache := filepath.Join(t.TempDir(), "cache")
	for _, beta := range []string{"0.9", "0.25", "1e-300"} {
		res := runEnv(cache, nil, "-R", "12", "-workload", "momentum:"+beta, "-quiet")
		require.Equal(t, cli.ExitOK, res.code, res.stderr)
	}
	res := runEnv(cache, nil, "cache", "list")
	require.Equal(t, cli.ExitOK, res.code, res.stderr)
	for _, beta := range []string{"0.9", "0.25", "1e-300"} {
		assert.Regexp(t, `(?m)^\S+ \S+ +\S+ \S+ +optimal +momentum:`+regexp.QuoteMeta(beta)+` +12 +single `, res.stdout)
	}
	res = runEnv(cache, nil, "cache", "list", "-json")
	require.Equal(t, cli.ExitOK, res.code, res.stderr)
	assert.Contains(t, res.stdout, `"workload":"momentum:3feccccccccccccd"`, "the JSON listing keeps the key")
}
