// Package cache keeps computed factorizations on disk, so that a
// factorization is computed once and loaded afterwards: a directory of
// checksummed entries within a size budget, evicted least recently used
// first ([Cache]). An entry holds a factorization's record
// (factorize.Record): its metrics, its dense factors when it has them, and
// its noise operator in structured form, so that a cached strategy streams
// its noise exactly as a fresh one. What the entry claims for privacy is
// checked when it is read (factorize.Record.Restore); `mfsolve cache list`
// and `mfsolve cache clear` manage the directory.
package cache

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
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/internal/atomicfile"
	"github.com/dpmf/dpmf/internal/private"
)

// Cache entry format, version 5. All integers are little-endian.
//
//	offset  size  content
//	0       8     magic "DPMFFACT"
//	8       4     uint32 format version (cacheVersion)
//	12      4     uint32 length L of the metadata
//	16      L     metadata, a JSON object (cacheMeta): the key fields
//	              (strategy name and key, workload key, R, participation),
//	              the dimensions (R and m), whether B and C are present,
//	              the metrics, iterations, gap, Available (with factors),
//	              the operator's form (kind and sizes, see factorize.OperatorForm)
//	16+L    8Rm   B, R x m float64, row by row (absent without factors)
//	        8mR   C, m x R float64, row by row (absent without factors)
//	        8n    the operator's n coefficients (absent for the dense
//	              operator, which is rebuilt from B)
//	end-32  32    SHA-256 of every byte before it
//
// The structured form is kept, so a cached factorization streams its noise
// exactly as a fresh one.
//
// The file size is therefore fixed by the header, which lets a reader detect
// a truncated entry before reading the floats. Floats are stored bit for bit,
// so a loaded factorization is identical to the one stored. Entries are
// written with [atomicfile.Write]: a reader sees a complete entry or none.
const (
	cacheMagic    = "DPMFFACT"
	cacheVersion  = 5
	cacheExt      = ".dpmf"
	cacheHeader   = 16
	cacheSumLen   = sha256.Size
	maxMetaLength = 64 << 20 // Available of a tree with R ~ 10^6 rounds
)

// Cache is a directory of computed factorizations, so that a factorization
// is computed once and loaded afterwards. An entry is named by the SHA-256
// key of everything that determines the result (see [Key]) and carries a
// checksum; a corrupt or truncated entry is never used.
//
// Several goroutines or processes may use the same directory at once. Two
// computations of the same key both run and both write a complete entry
// (the last rename wins); neither sees a partial one.
//
// The entries are kept within a size budget: every store removes the least
// recently used entries (by the time each was last stored or loaded, which
// the cache records as the file's modification time) until the entries fit,
// never the entry it has just written. A load opens its entry before
// anything else, and an open entry stays readable to the end when another
// process removes it, so eviction never corrupts a load in progress.
type Cache struct {
	// Dir is the cache directory. It is created on the first store.
	Dir string
	// Budget is the most bytes the entries may take together: 0 means
	// [DefaultBudget] (1 GiB), [Unlimited] (or any
	// negative value) no limit. An entry larger than the budget is not
	// stored (a *[BudgetError]).
	Budget int64
	// Keep, if not nil, decides which factorizations that Compute computes
	// are stored; nil stores every one. Entries already stored are read
	// either way.
	Keep func(*factorize.Factorization) bool

	// now is the clock of the recorded access times (nil: time.Now).
	now func() time.Time
	// opened, if not nil, is called by load once it has opened an entry,
	// before reading it (a test hook).
	opened func(path string)
}

// ErrMiss is returned by [Cache.Load] when there is no entry for the
// key.
var ErrMiss = errors.New("cache: no entry")

// CorruptError is returned by [Cache.Load] for an entry that cannot be
// used: a bad magic number or format version, a wrong length, a checksum
// mismatch, or metadata that does not match the requested key.
type CorruptError struct {
	// Path is the entry's file.
	Path string
	// Reason says what is wrong, for example "checksum mismatch".
	Reason string
}

// Error implements error.
func (e *CorruptError) Error() string {
	return fmt.Sprintf("cache entry %s is corrupt (%s)", e.Path, e.Reason)
}

// UntrustedError is returned by [Cache.Load] and [Cache.Store] for a cache
// directory or entry that another local user could have written (Unix:
// one owned by a user other than this process's and root, or writable by
// its group or by others, the rule ssh applies to its keys), or a cache
// directory under one that another user controls (owned by another user,
// or writable by its group or others without the sticky bit of /tmp: that
// user could put a directory of their own in its place): an entry
// planted there would be a wrong factorization, and so wrong noise.
// [Cache.Compute] then warns and computes; it does not use such a
// directory at all, and replaces such an entry.
type UntrustedError struct {
	// Path is the directory or the entry.
	Path string
	// Reason says what is wrong and what to do.
	Reason string
	// Dir is true for the cache directory, false for an entry.
	Dir bool
}

// Error implements error.
func (e *UntrustedError) Error() string {
	what := "cache entry"
	if e.Dir {
		what = "cache directory"
	}
	return fmt.Sprintf("%s %s %s", what, e.Path, e.Reason)
}

// untrusted returns an *UntrustedError for path if fi says that another
// user could have written it.
func untrusted(path string, fi fs.FileInfo, dir bool) error {
	var pe *private.Error
	if errors.As(private.Check(path, fi), &pe) {
		return &UntrustedError{Path: path, Reason: pe.Reason, Dir: dir}
	}
	return nil
}

// checkDir returns an *UntrustedError if the cache directory exists and
// another user could write into it, or could replace it through a
// directory above it (private.CheckDir), nil if it is private or does not
// exist (yet).
func (c *Cache) checkDir() error {
	var pe *private.Error
	if errors.As(private.CheckDir(c.Dir), &pe) {
		return &UntrustedError{Path: c.Dir, Reason: pe.Reason, Dir: true}
	}
	return nil // private; absent: created private; unreadable: the load says so
}

// DefaultDir returns the per-user cache directory of dpmf,
// os.UserCacheDir()/dpmf (for example ~/.cache/dpmf on Linux).
func DefaultDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("cache: no user cache directory: %w", err)
	}
	return filepath.Join(d, "dpmf"), nil
}

// cacheMeta is the JSON metadata of an entry.
type cacheMeta struct {
	Key           string                  `json:"key"`
	Strategy      string                  `json:"strategy"`
	StrategyKey   string                  `json:"strategy_key"`
	Workload      string                  `json:"workload"`
	R             int                     `json:"R"`
	M             int                     `json:"m"`
	Participation string                  `json:"participation"`
	Factors       bool                    `json:"factors"`
	Operator      *factorize.OperatorForm `json:"operator,omitempty"`
	Metrics       metricsJSON             `json:"metrics"`
	Iterations    int                     `json:"iterations"`
	Evaluations   int                     `json:"evaluations"`
	Gap           float64                 `json:"gap"`
	Available     []int                   `json:"available"`
	// Semisep holds a semiseparable factorization's certified optimal
	// lower bound and excess.
	Semisep *[2]float64 `json:"semisep,omitempty"`
}

// metricsJSON is factorize.Metrics with stable JSON names. encoding/json prints the
// shortest decimal that parses back to the same float64, so the round trip
// is exact.
type metricsJSON struct {
	Gamma     float64        `json:"gamma"`
	Sens      float64        `json:"unit_sensitivity"`
	SensExact bool           `json:"unit_sensitivity_exact"`
	SensRule  factorize.Rule `json:"unit_sensitivity_rule"`
	FrobBSq   float64        `json:"frob_B_sq"`
	MaxRowBSq float64        `json:"max_row_B_sq"`
	Loss      float64        `json:"loss"`
	RMSE      float64        `json:"rmse"`
	MaxSE     float64        `json:"max_se"`
}

func toMetricsJSON(m factorize.Metrics) metricsJSON {
	return metricsJSON{
		Gamma: m.Gamma, Sens: m.UnitSensitivity.Value, SensExact: m.UnitSensitivity.Exact, SensRule: m.UnitSensitivity.Rule,
		FrobBSq: m.FrobBSq, MaxRowBSq: m.MaxRowBSq, Loss: m.Loss, RMSE: m.RMSE, MaxSE: m.MaxSE,
	}
}

func (m metricsJSON) metrics(p factorize.Participation) factorize.Metrics {
	return factorize.Metrics{
		Gamma: m.Gamma, Participation: p,
		UnitSensitivity: factorize.Sensitivity{Value: m.Sens, Exact: m.SensExact, Rule: m.SensRule},
		FrobBSq:         m.FrobBSq, MaxRowBSq: m.MaxRowBSq, Loss: m.Loss, RMSE: m.RMSE, MaxSE: m.MaxSE,
	}
}

// cacheKeyFields are the inputs that determine a factorization.
type cacheKeyFields struct {
	strategy, strategyKey, workload string
	r                               int
	participation                   factorize.Participation
	lossOnly                        bool
}

func keyFields(s factorize.Strategy, w *factorize.Workload, p factorize.Participation) (cacheKeyFields, error) {
	lossOnly, err := factorize.CheckRequest(s, w, p)
	if err != nil {
		return cacheKeyFields{}, err
	}
	return cacheKeyFields{
		strategy:      s.Name(),
		strategyKey:   factorize.CacheKey(s),
		workload:      w.Key(),
		r:             w.R(),
		participation: p,
		lossOnly:      lossOnly,
	}, nil
}

// hex returns the SHA-256 key of the fields. Every field is written with its
// length or as fixed-size bits, so different field values never produce the
// same byte string.
func (k cacheKeyFields) hex() string {
	h := sha256.New()
	for _, s := range []string{"dpmf factorization cache", strconv.Itoa(cacheVersion), solverID, archID, k.strategy, k.strategyKey,
		k.workload, strconv.Itoa(k.r), k.participation.String()} {
		fmt.Fprintf(h, "%d:%s;", len(s), s)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Key returns the hex SHA-256 cache key of the factorization of w by
// strategy s under participation p. The key covers the cache format
// version, the solver ([factorize.SolverVersion] and, where the program's
// build records it, the version of the dpmf module: an entry of another
// solver is a miss), the CPU architecture (runtime.GOARCH, with its
// variant such as GOAMD64 where the build records it: results differ in
// the last bits between amd64 and 386, and an entry of another
// architecture is a miss), the strategy's name and [factorize.CacheKey] (the settings that change
// the result, with defaults filled in), the workload ([factorize.Workload.Key] and R)
// and the participation. Invalid options or participation are an error.
func Key(s factorize.Strategy, w *factorize.Workload, p factorize.Participation) (string, error) {
	k, err := keyFields(s, w, p)
	if err != nil {
		return "", err
	}
	return k.hex(), nil
}

// Path returns the file of the entry with the given key.
func (c *Cache) Path(key string) string {
	return filepath.Join(c.Dir, key+cacheExt)
}

// Compute returns the factorization of w by strategy s under participation
// p, loaded from the cache when an entry exists and computed with
// [factorize.Strategy.Factorize] and stored otherwise;
// cached reports which. A corrupt entry is reported on warn, recomputed and
// replaced; so is an entry that another user could have written (an
// *[UntrustedError]), and a directory that another user could write into
// is reported on warn and not used at all (neither read nor written). A cache that cannot be read or written is reported on warn and
// otherwise ignored: the computation still succeeds. Cancelling ctx stops
// the computation and the writing of the entry, and Compute then returns
// ctx's error; an interrupted write leaves no entry and no temporary file.
// warn may be nil; each warning is one line without a program-name prefix.
func (c *Cache) Compute(ctx context.Context, s factorize.Strategy, w *factorize.Workload, p factorize.Participation, warn io.Writer) (f *factorize.Factorization, cached bool, err error) {
	if c == nil {
		return nil, false, errNilCache
	}
	if ctx == nil {
		return nil, false, &ParamError{Param: "ctx", Want: "a non-nil context.Context (context.Background() for none)"}
	}
	warn = cmp.Or(warn, io.Discard)
	k, err := keyFields(s, w, p)
	if err != nil {
		return nil, false, err
	}
	var ce *CorruptError
	var ue *UntrustedError
	useCache := true
	switch f, err = c.load(k, w); {
	case err == nil:
		return f, true, nil
	case errors.As(err, &ue) && ue.Dir:
		fmt.Fprintf(warn, "%v; the cache is not used\n", err)
		useCache = false
	case errors.As(err, &ue):
		fmt.Fprintf(warn, "%v; recomputing\n", err)
	case errors.As(err, &ce):
		fmt.Fprintf(warn, "%v; recomputing\n", err)
	case !errors.Is(err, ErrMiss):
		fmt.Fprintf(warn, "cannot read the cache: %v; recomputing\n", err)
	}
	f, err = s.Factorize(ctx, w, p)
	if err != nil {
		return nil, false, err
	}
	if !factorize.FiniteMetrics(f.Metrics) {
		// An overflowing workload: load would reject the entry.
		return f, false, nil
	}
	if !useCache || c.Keep != nil && !c.Keep(f) {
		return f, false, nil
	}
	if err := c.store(ctx, k, f); err != nil {
		var be *BudgetError
		switch {
		case ctx.Err() != nil:
			// Cancelled while writing: no entry, no temporary file.
			return nil, false, ctx.Err()
		case errors.As(err, &be):
			fmt.Fprintf(warn, "not cached: %v\n", err)
		default:
			fmt.Fprintf(warn, "cannot write the cache: %v; the result is not cached\n", err)
		}
	}
	return f, false, nil
}

// Load returns the cached factorization of w by strategy s under
// participation p.
// It returns [ErrMiss] when there is no entry, an *[UntrustedError] when
// the directory or the entry could have been written by another user, and
// a *[CorruptError] when the entry is damaged or does not match the
// request; such an entry should be recomputed and replaced with
// [Cache.Store].
func (c *Cache) Load(s factorize.Strategy, w *factorize.Workload, p factorize.Participation) (*factorize.Factorization, error) {
	if c == nil {
		return nil, errNilCache
	}
	k, err := keyFields(s, w, p)
	if err != nil {
		return nil, err
	}
	return c.load(k, w)
}

// Store writes f, computed by strategy s, to the cache under the key of s,
// f.Workload and f's participation. The entry is written atomically. It is
// an error if s's name is not f.Strategy, or if f was not computed by s
// with its settings: f.StrategyKey() (the strategy and settings whose
// Factorize returned f, kept through the cache) must be
// factorize.CacheKey(s), so that a factorization of other bands, buffers,
// tolerance, path or loss-only switch is never filed under s's key (the
// workload and participation of the key are f's own). A factorization
// built by hand or by a function such as factorize.Optimal has no strategy
// key and is refused: compute it with s.Factorize.
func (c *Cache) Store(f *factorize.Factorization, s factorize.Strategy) error {
	if c == nil {
		return errNilCache
	}
	if f == nil {
		return &ParamError{Param: "factorization", Want: "a factorization computed by this package"}
	}
	if s != nil && s.Name() != f.Strategy {
		return &ParamError{Param: "factorization", Value: fmt.Sprintf("of strategy %q", f.Strategy), Want: fmt.Sprintf("one computed by the %s strategy it is stored under", s.Name())}
	}
	k, err := keyFields(s, f.Workload, f.Metrics.Participation)
	if err != nil {
		return err
	}
	if got := f.StrategyKey(); got != k.strategyKey {
		if got == "" {
			got = "none (not computed by a strategy's Factorize)"
		}
		return &ParamError{Param: "factorization", Value: "of strategy key " + got, Want: "one computed by the strategy it is stored under, " + k.strategyKey + " (the same settings)"}
	}
	return c.store(context.Background(), k, f)
}

func (c *Cache) store(ctx context.Context, k cacheKeyFields, f *factorize.Factorization) error {
	key := k.hex()
	rec := f.Record()
	meta := cacheMeta{
		Key:           key,
		Strategy:      k.strategy,
		StrategyKey:   k.strategyKey,
		Workload:      k.workload,
		R:             k.r,
		Participation: k.participation.String(),
		Metrics:       toMetricsJSON(rec.Metrics),
		Iterations:    rec.Iterations,
		Evaluations:   rec.Evaluations,
		Gap:           rec.Gap,
		Operator:      rec.Operator,
		Semisep:       rec.SemisepBounds,
		Available:     rec.Available,
	}
	// B and C, then the operator's coefficients.
	var parts []*mat.Dense
	var opFloats []float64
	if rec.B != nil {
		r, m := rec.B.Dims()
		if r != k.r {
			panic(fmt.Sprintf("cache: B is %d x %d for R = %d", r, m, k.r))
		}
		meta.M, meta.Factors = m, true
		parts = append(parts, rec.B, rec.C)
	}
	if rec.Operator != nil && len(rec.Operator.Floats) > 0 {
		opFloats = rec.Operator.Floats
		parts = append(parts, mat.NewDense(1, len(opFloats), opFloats))
	}
	js, err := json.Marshal(meta)
	if err != nil {
		return fmt.Errorf("cache: metadata: %w", err)
	}
	size := cacheHeader + int64(len(js)) + 16*int64(meta.R)*int64(meta.M) + 8*int64(len(opFloats)) + cacheSumLen
	if b := c.budget(); b >= 0 && size > b {
		return &BudgetError{Size: size, Budget: b}
	}
	// The directory is private to the user: its entries hold the factors
	// of private computations, and its metadata is trusted only after the
	// checks in load.
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return err
	}
	if err := c.checkDir(); err != nil {
		return err
	}
	// Temporary files of killed writers are never read; remove old ones.
	atomicfile.RemoveStaleOf(c.Dir, staleTempAge, isEntryName)
	err = atomicfile.WriteContext(ctx, c.Path(key), 0o600, func(out io.Writer) error {
		h := sha256.New()
		w := io.MultiWriter(out, h)
		hdr := binary.LittleEndian.AppendUint32([]byte(cacheMagic), cacheVersion)
		hdr = binary.LittleEndian.AppendUint32(hdr, uint32(len(js)))
		if _, err := w.Write(append(hdr, js...)); err != nil {
			return err
		}
		for _, m := range parts {
			if err := writeFloats(w, m); err != nil {
				return err
			}
		}
		_, err := out.Write(h.Sum(nil))
		return err
	})
	if err != nil {
		return err
	}
	// The new entry is the most recently used; make room for it among the
	// others. Eviction is best effort: an entry that cannot be removed is
	// left, and the store has succeeded.
	c.touch(c.Path(key))
	_, _ = c.trim(c.budget(), key+cacheExt)
	return nil
}

// floatChunk is the number of floats encoded or decoded per buffer.
const floatChunk = 32 << 10

// writeFloats writes the rows of m as little-endian float64, at most
// floatChunk of them per write.
func writeFloats(w io.Writer, m *mat.Dense) error {
	raw := m.RawMatrix()
	var buf []byte
	for i := range raw.Rows {
		row := raw.Data[i*raw.Stride : i*raw.Stride+raw.Cols]
		for k := 0; k < len(row); k += floatChunk {
			buf, _ = binary.Append(buf[:0], binary.LittleEndian, row[k:min(k+floatChunk, len(row))]) // cannot fail for []float64
			if _, err := w.Write(buf); err != nil {
				return err
			}
		}
	}
	return nil
}

// readFloats fills dst from r, decoding little-endian float64.
func readFloats(r io.Reader, dst []float64, buf []byte) error {
	for len(dst) > 0 {
		n := min(len(dst), len(buf)/8)
		b := buf[:8*n]
		if _, err := io.ReadFull(r, b); err != nil {
			return err
		}
		for i := range dst[:n] {
			dst[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
		}
		dst = dst[n:]
	}
	return nil
}

func (c *Cache) load(k cacheKeyFields, w *factorize.Workload) (*factorize.Factorization, error) {
	key := k.hex()
	path := c.Path(key)
	if err := c.checkDir(); err != nil {
		return nil, err
	}
	// A symbolic link under the entry's name is not followed: List,
	// Clear and the budget see only regular files, so a linked entry
	// would be used but never counted or cleared. It is refused as not a
	// regular file, as a FIFO is (which must not block the open).
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return nil, &CorruptError{Path: path, Reason: "not a regular file (a symbolic link)"}
	}
	file, err := atomicfile.OpenRegular(path)
	var te *atomicfile.TargetError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, ErrMiss
	case errors.As(err, &te):
		return nil, &CorruptError{Path: path, Reason: "not a regular file"}
	case err != nil:
		return nil, err
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return nil, err
	}
	if err := untrusted(path, fi, false); err != nil {
		return nil, err
	}
	// Record the use at once, so that an evictor that lists the directory
	// from now on ranks the entry as the most recently used; should one
	// remove it all the same, the open file stays readable to the end.
	c.touch(path)
	if c.opened != nil {
		c.opened(path)
	}
	size := fi.Size()
	corrupt := func(format string, args ...any) error {
		return &CorruptError{Path: path, Reason: fmt.Sprintf(format, args...)}
	}
	// Metadata that cannot be right: a damaged byte, said precisely when
	// the checksum confirms it, or else what is wrong.
	badMeta := func(format string, args ...any) error {
		if !checksumOK(file, size) {
			return corrupt("checksum mismatch")
		}
		return corrupt(format, args...)
	}

	h := sha256.New()
	in := io.TeeReader(file, h)
	meta, metaLen, metaJSON, err := decodeMeta(in, size)
	switch {
	case err != nil && metaJSON:
		return nil, badMeta("%v", err)
	case err != nil:
		return nil, corrupt("%v", err)
	}
	var floats int64
	if meta.Factors {
		// Bound the dimensions before multiplying them; the size check
		// below then bounds the allocation by the file size.
		const maxDim = 1 << 30
		if meta.R < 1 || meta.M < 1 || meta.R > maxDim || meta.M > maxDim {
			return nil, badMeta("dimensions %d x %d", meta.R, meta.M)
		}
		floats = 2 * int64(meta.R) * int64(meta.M)
	}
	opFloats := 0
	if meta.Operator != nil {
		if opFloats, err = meta.Operator.FloatCount(); err != nil {
			return nil, badMeta("%v", strings.TrimPrefix(err.Error(), "factorize: "))
		}
	}
	// The declared floats' bytes must be countable before the size check:
	// 8 * 2 R m wrapped to 0 for R = m = 2^30, the check passed an entry
	// without factors, and the load allocated the header's claim.
	if most := (math.MaxInt64 - cacheHeader - metaLen - cacheSumLen) / 8; floats > most || int64(opFloats) > most-floats {
		return nil, corrupt("the metadata declares %d x %d factors and %d operator floats, more than a file holds", meta.R, meta.M, opFloats)
	}
	floats += int64(opFloats)
	if want := cacheHeader + metaLen + 8*floats + cacheSumLen; size != want {
		if size < want {
			return nil, corrupt("truncated: %d bytes, want %d", size, want)
		}
		return nil, corrupt("length %d bytes, want %d", size, want)
	}

	// B and C, then the operator's coefficients, as store writes them.
	var b, cm *mat.Dense
	var parts [][]float64
	if meta.Factors {
		b, cm = mat.NewDense(meta.R, meta.M, nil), mat.NewDense(meta.M, meta.R, nil)
		parts = append(parts, b.RawMatrix().Data, cm.RawMatrix().Data)
	}
	if opFloats > 0 {
		meta.Operator.Floats = make([]float64, opFloats)
		parts = append(parts, meta.Operator.Floats)
	}
	buf := make([]byte, 8*floatChunk)
	for _, dst := range parts {
		if err := readFloats(in, dst, buf); err != nil {
			return nil, err
		}
	}
	var sum [cacheSumLen]byte
	if _, err := io.ReadFull(file, sum[:]); err != nil {
		return nil, err
	}
	if !bytes.Equal(sum[:], h.Sum(nil)) {
		return nil, corrupt("checksum mismatch")
	}

	// The checksum is good: the metadata must describe the request (a
	// misfiled entry or a hash collision would not).
	switch {
	case meta.Key != key, meta.Strategy != k.strategy, meta.StrategyKey != k.strategyKey,
		meta.Workload != k.workload, meta.R != k.r, meta.Participation != k.participation.String():
		// The metadata's strings quoted: they are the file's, and may
		// hold line breaks or control characters.
		return nil, corrupt("metadata for %q R=%d %q does not match the request", meta.StrategyKey, meta.R, meta.Participation)
	case !meta.Factors && meta.Operator == nil && !k.lossOnly:
		return nil, corrupt("neither factors nor an operator in an entry for a full factorization")
	}
	rec := factorize.Record{
		Strategy:      meta.Strategy,
		Metrics:       meta.Metrics.metrics(k.participation),
		Iterations:    meta.Iterations,
		Evaluations:   meta.Evaluations,
		Gap:           meta.Gap,
		B:             b,
		C:             cm,
		Available:     meta.Available,
		Operator:      meta.Operator,
		SemisepBounds: meta.Semisep,
		StrategyKey:   k.strategyKey,
	}
	f, err := rec.Restore(w)
	if err != nil {
		return nil, corrupt("%v", err)
	}
	return f, nil
}

// staleTempAge is the age after which a temporary file in the cache
// directory is taken to belong to a killed writer and removed: entries are
// written in one go, so a live writer modifies its file far more often.
const staleTempAge = time.Hour

// checksumOK reports whether the entry in file (of the given size) matches
// its trailing checksum. It is used to name the cause of unreadable
// metadata: a damaged byte (checksum mismatch) or a bad writer.
func checksumOK(file *os.File, size int64) bool {
	if size < cacheSumLen {
		return false
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(file, 0, size-cacheSumLen)); err != nil {
		return false
	}
	var sum [cacheSumLen]byte
	if _, err := file.ReadAt(sum[:], size-cacheSumLen); err != nil {
		return false
	}
	return bytes.Equal(sum[:], h.Sum(nil))
}
