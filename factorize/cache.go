package factorize

import (
	"bytes"
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

	"github.com/dpmf/dpmf/internal/atomicfile"
)

// Cache entry format, version 4. All integers are little-endian.
//
//	offset  size  content
//	0       8     magic "DPMFFACT"
//	8       4     uint32 format version (cacheVersion)
//	12      4     uint32 length L of the metadata
//	16      L     metadata, a JSON object (cacheMeta): the key fields
//	              (strategy name and key, workload key, R, participation),
//	              the dimensions (R and m), whether B and C are present,
//	              the metrics, iterations, gap, Available (with factors),
//	              the operator's form (kind and sizes, see OperatorForm)
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
	cacheVersion  = 4
	cacheExt      = ".dpmf"
	cacheHeader   = 16
	cacheSumLen   = sha256.Size
	maxMetaLength = 64 << 20 // Available of a tree with R ~ 10^6 rounds
)

// Cache is a directory of computed factorizations, so that a factorization
// is computed once and loaded afterwards. An entry is named by the SHA-256
// key of everything that determines the result (see [CacheKey]) and carries a
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
	// [DefaultCacheBudget] (1 GiB), [UnlimitedCacheBudget] (or any
	// negative value) no limit. An entry larger than the budget is not
	// stored (a *[CacheBudgetError]).
	Budget int64
	// Keep, if not nil, decides which factorizations that Compute computes
	// are stored; nil stores every one. Entries already stored are read
	// either way.
	Keep func(*Factorization) bool

	// now is the clock of the recorded access times (nil: time.Now).
	now func() time.Time
	// opened, if not nil, is called by load once it has opened an entry,
	// before reading it (a test hook).
	opened func(path string)
}

// ErrCacheMiss is returned by [Cache.Load] when there is no entry for the
// key.
var ErrCacheMiss = errors.New("factorize: no cache entry")

// CorruptCacheError is returned by [Cache.Load] for an entry that cannot be
// used: a bad magic number or format version, a wrong length, a checksum
// mismatch, or metadata that does not match the requested key.
type CorruptCacheError struct {
	// Path is the entry's file.
	Path string
	// Reason says what is wrong, for example "checksum mismatch".
	Reason string
}

// Error implements error.
func (e *CorruptCacheError) Error() string {
	return fmt.Sprintf("cache entry %s is corrupt (%s)", e.Path, e.Reason)
}

// DefaultCacheDir returns the per-user cache directory of dpmf,
// os.UserCacheDir()/dpmf (for example ~/.cache/dpmf on Linux).
func DefaultCacheDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("factorize: no user cache directory: %w", err)
	}
	return filepath.Join(d, "dpmf"), nil
}

// cacheMeta is the JSON metadata of an entry.
type cacheMeta struct {
	Key           string        `json:"key"`
	Strategy      string        `json:"strategy"`
	StrategyKey   string        `json:"strategy_key"`
	Workload      string        `json:"workload"`
	R             int           `json:"R"`
	M             int           `json:"m"`
	Participation string        `json:"participation"`
	Factors       bool          `json:"factors"`
	Operator      *OperatorForm `json:"operator,omitempty"`
	Metrics       metricsJSON   `json:"metrics"`
	Iterations    int           `json:"iterations"`
	Evaluations   int           `json:"evaluations"`
	Gap           float64       `json:"gap"`
	Available     []int         `json:"available"`
	// Semisep holds a semiseparable factorization's certified optimal
	// lower bound and excess.
	Semisep *[2]float64 `json:"semisep,omitempty"`
}

// metricsJSON is Metrics with stable JSON names. encoding/json prints the
// shortest decimal that parses back to the same float64, so the round trip
// is exact.
type metricsJSON struct {
	Gamma     float64 `json:"gamma"`
	Sens      float64 `json:"unit_sensitivity"`
	SensExact bool    `json:"unit_sensitivity_exact"`
	SensRule  Rule    `json:"unit_sensitivity_rule"`
	FrobBSq   float64 `json:"frob_B_sq"`
	MaxRowBSq float64 `json:"max_row_B_sq"`
	Loss      float64 `json:"loss"`
	RMSE      float64 `json:"rmse"`
	MaxSE     float64 `json:"max_se"`
}

func toMetricsJSON(m Metrics) metricsJSON {
	return metricsJSON{
		Gamma: m.Gamma, Sens: m.UnitSensitivity.Value, SensExact: m.UnitSensitivity.Exact, SensRule: m.UnitSensitivity.Rule,
		FrobBSq: m.FrobBSq, MaxRowBSq: m.MaxRowBSq, Loss: m.Loss, RMSE: m.RMSE, MaxSE: m.MaxSE,
	}
}

func (m metricsJSON) metrics(p Participation) Metrics {
	return Metrics{
		Gamma: m.Gamma, Participation: p,
		UnitSensitivity: Sensitivity{Value: m.Sens, Exact: m.SensExact, Rule: m.SensRule},
		FrobBSq:         m.FrobBSq, MaxRowBSq: m.MaxRowBSq, Loss: m.Loss, RMSE: m.RMSE, MaxSE: m.MaxSE,
	}
}

// cacheKeyFields are the inputs that determine a factorization.
type cacheKeyFields struct {
	strategy, strategyKey, workload string
	r                               int
	participation                   Participation
	lossOnly                        bool
}

func keyFields(s Strategy, w *Workload, p Participation) (cacheKeyFields, error) {
	if s == nil {
		return cacheKeyFields{}, &ParamError{Param: "strategy", Want: "a Strategy"}
	}
	if err := checkWorkload(w); err != nil {
		return cacheKeyFields{}, err
	}
	lossOnly := false
	switch o := s.(type) {
	case OptimalStrategy:
		if _, err := o.withDefaults(); err != nil {
			return cacheKeyFields{}, err
		}
		lossOnly = o.LossOnly
	case BISRStrategy:
		lossOnly = o.LossOnly
	case BandInvStrategy:
		lossOnly = o.LossOnly
	case BandedToeplitzStrategy:
		lossOnly = o.LossOnly
	}
	if err := p.Validate(w.R()); err != nil {
		return cacheKeyFields{}, err
	}
	return cacheKeyFields{
		strategy:      s.Name(),
		strategyKey:   s.Key(),
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
	str := func(s string) {
		fmt.Fprintf(h, "%d:%s;", len(s), s)
	}
	str("dpmf factorization cache")
	str(strconv.Itoa(cacheVersion))
	str(k.strategy)
	str(k.strategyKey)
	str(k.workload)
	str(strconv.Itoa(k.r))
	str(k.participation.String())
	return hex.EncodeToString(h.Sum(nil))
}

// CacheKey returns the hex SHA-256 cache key of the factorization of w by
// strategy s under participation p. The key covers the cache format
// version, the strategy's name and [Strategy.Key] (the options that change
// the result, with defaults filled in), the workload ([Workload.Key] and R)
// and the participation. Invalid options or participation are an error.
func CacheKey(s Strategy, w *Workload, p Participation) (string, error) {
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
// [Strategy.Factorize] and stored otherwise;
// cached reports which. A corrupt entry is reported on warn, recomputed and
// replaced. A cache that cannot be read or written is reported on warn and
// otherwise ignored: the computation still succeeds. Cancelling ctx stops
// the computation and the writing of the entry, and Compute then returns
// ctx's error; an interrupted write leaves no entry and no temporary file.
// warn may be nil; each warning is one line without a program-name prefix.
func (c *Cache) Compute(ctx context.Context, s Strategy, w *Workload, p Participation, warn io.Writer) (f *Factorization, cached bool, err error) {
	if err := checkContext(ctx); err != nil {
		return nil, false, err
	}
	if warn == nil {
		warn = io.Discard
	}
	k, err := keyFields(s, w, p)
	if err != nil {
		return nil, false, err
	}
	f, err = c.load(k, w)
	switch {
	case err == nil:
		return f, true, nil
	case errors.Is(err, ErrCacheMiss):
	default:
		var ce *CorruptCacheError
		if errors.As(err, &ce) {
			fmt.Fprintf(warn, "%v; recomputing\n", err)
		} else {
			fmt.Fprintf(warn, "cannot read the cache: %v; recomputing\n", err)
		}
	}
	f, err = s.Factorize(ctx, w, p)
	if err != nil {
		return nil, false, err
	}
	if !finiteMetrics(f.Metrics) {
		// An overflowing workload: load would reject the entry.
		return f, false, nil
	}
	if c.Keep != nil && !c.Keep(f) {
		return f, false, nil
	}
	if err := c.store(ctx, k, f); err != nil {
		var be *CacheBudgetError
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
// It returns [ErrCacheMiss] when there is no entry and a
// *[CorruptCacheError] when the entry is damaged or does not match the
// request; such an entry should be recomputed and replaced with
// [Cache.Store].
func (c *Cache) Load(s Strategy, w *Workload, p Participation) (*Factorization, error) {
	k, err := keyFields(s, w, p)
	if err != nil {
		return nil, err
	}
	return c.load(k, w)
}

// Store writes f, computed by strategy s, to the cache under the key of s,
// f.Workload and f's participation. The entry is written atomically. It is
// an error if s's name is not f.Strategy.
func (c *Cache) Store(f *Factorization, s Strategy) error {
	if f == nil {
		return &ParamError{Param: "factorization", Want: "a factorization computed by this package"}
	}
	if s != nil && s.Name() != f.Strategy {
		return fmt.Errorf("factorize: storing a %s factorization under the %s strategy", f.Strategy, s.Name())
	}
	k, err := keyFields(s, f.Workload, f.Metrics.Participation)
	if err != nil {
		return err
	}
	return c.store(context.Background(), k, f)
}

func (c *Cache) store(ctx context.Context, k cacheKeyFields, f *Factorization) error {
	key := k.hex()
	meta := cacheMeta{
		Key:           key,
		Strategy:      k.strategy,
		StrategyKey:   k.strategyKey,
		Workload:      k.workload,
		R:             k.r,
		Participation: k.participation.String(),
		Metrics:       toMetricsJSON(f.Metrics),
		Iterations:    f.Iterations,
		Evaluations:   f.Evaluations,
		Gap:           f.Gap,
	}
	var opFloats []float64
	if form, ok := FormOf(f.Operator); ok {
		meta.Operator, opFloats = &form, form.Floats
	}
	if f.Semisep != nil {
		meta.Semisep = &[2]float64{f.Semisep.OptimalLower, f.Semisep.Excess}
	}
	if (f.B == nil) != (f.C == nil) {
		panic("factorize: factorization with only one of B and C")
	}
	if f.B != nil {
		r, m := f.B.Dims()
		if m2, r2 := f.C.Dims(); r != k.r || r2 != k.r || m2 != m {
			panic(fmt.Sprintf("factorize: B is %d x %d and C is %d x %d for R = %d", r, m, m2, r2, k.r))
		}
		meta.M, meta.Factors, meta.Available = m, true, f.Available
	}
	js, err := json.Marshal(meta)
	if err != nil {
		return fmt.Errorf("factorize: cache metadata: %w", err)
	}
	size := cacheHeader + int64(len(js)) + 16*int64(meta.R)*int64(meta.M) + 8*int64(len(opFloats)) + cacheSumLen
	if b := c.budget(); b >= 0 && size > b {
		return &CacheBudgetError{Size: size, Budget: b}
	}
	// The directory is private to the user: its entries hold the factors
	// of private computations, and its metadata is trusted only after the
	// checks in load.
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return err
	}
	// Temporary files of killed writers are never read; remove old ones.
	atomicfile.RemoveStale(c.Dir, staleTempAge)
	err = atomicfile.WriteContext(ctx, c.Path(key), 0o600, func(out io.Writer) error {
		h := sha256.New()
		w := io.MultiWriter(out, h)
		var hdr [cacheHeader]byte
		copy(hdr[:], cacheMagic)
		binary.LittleEndian.PutUint32(hdr[8:], cacheVersion)
		binary.LittleEndian.PutUint32(hdr[12:], uint32(len(js)))
		if _, err := w.Write(hdr[:]); err != nil {
			return err
		}
		if _, err := w.Write(js); err != nil {
			return err
		}
		if meta.Factors {
			if err := writeFloats(w, f.B); err != nil {
				return err
			}
			if err := writeFloats(w, f.C); err != nil {
				return err
			}
		}
		if len(opFloats) > 0 {
			if err := writeFloats(w, mat.NewDense(1, len(opFloats), opFloats)); err != nil {
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

// writeFloats writes the rows of m as little-endian float64.
func writeFloats(w io.Writer, m *mat.Dense) error {
	raw := m.RawMatrix()
	buf := make([]byte, 0, 8*floatChunk)
	for i := 0; i < raw.Rows; i++ {
		row := raw.Data[i*raw.Stride : i*raw.Stride+raw.Cols]
		for len(row) > 0 {
			n := min(len(row), floatChunk-len(buf)/8)
			for _, v := range row[:n] {
				buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(v))
			}
			row = row[n:]
			if len(buf) == cap(buf) {
				if _, err := w.Write(buf); err != nil {
					return err
				}
				buf = buf[:0]
			}
		}
	}
	_, err := w.Write(buf)
	return err
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

func (c *Cache) load(k cacheKeyFields, w *Workload) (*Factorization, error) {
	key := k.hex()
	path := c.Path(key)
	// A FIFO planted under the entry's name must not block the open; it
	// is refused as not a regular file.
	file, err := atomicfile.OpenRegular(path)
	var te *atomicfile.TargetError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, ErrCacheMiss
	case errors.As(err, &te):
		return nil, &CorruptCacheError{Path: path, Reason: "not a regular file"}
	case err != nil:
		return nil, err
	}
	defer file.Close()
	// Record the use at once, so that an evictor that lists the directory
	// from now on ranks the entry as the most recently used; should one
	// remove it all the same, the open file stays readable to the end.
	c.touch(path)
	if c.opened != nil {
		c.opened(path)
	}
	fi, err := file.Stat()
	if err != nil {
		return nil, err
	}
	size := fi.Size()
	corrupt := func(format string, args ...any) error {
		return &CorruptCacheError{Path: path, Reason: fmt.Sprintf(format, args...)}
	}

	h := sha256.New()
	in := io.TeeReader(file, h)
	var hdr [cacheHeader]byte
	if _, err := io.ReadFull(in, hdr[:]); err != nil {
		return nil, corrupt("truncated: %d bytes", size)
	}
	if string(hdr[:8]) != cacheMagic {
		return nil, corrupt("bad magic %q", hdr[:8])
	}
	if v := binary.LittleEndian.Uint32(hdr[8:]); v != cacheVersion {
		return nil, corrupt("format version %d, want %d", v, cacheVersion)
	}
	metaLen := int64(binary.LittleEndian.Uint32(hdr[12:]))
	if metaLen > maxMetaLength || cacheHeader+metaLen+cacheSumLen > size {
		return nil, corrupt("metadata length %d in a file of %d bytes", metaLen, size)
	}
	js := make([]byte, metaLen)
	if _, err := io.ReadFull(in, js); err != nil {
		return nil, err
	}
	var meta cacheMeta
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&meta); err != nil {
		// A damaged byte in the metadata: say so precisely when the
		// checksum confirms it.
		if !checksumOK(file, size) {
			return nil, corrupt("checksum mismatch")
		}
		return nil, corrupt("bad metadata: %v", err)
	}
	var floats int64
	if meta.Factors {
		// Bound the dimensions before multiplying them; the size check
		// below then bounds the allocation by the file size.
		const maxDim = 1 << 30
		if meta.R < 1 || meta.M < 1 || meta.R > maxDim || meta.M > maxDim {
			if !checksumOK(file, size) {
				return nil, corrupt("checksum mismatch")
			}
			return nil, corrupt("dimensions %d x %d", meta.R, meta.M)
		}
		floats = 2 * int64(meta.R) * int64(meta.M)
	}
	opFloats := 0
	if meta.Operator != nil {
		if opFloats, err = meta.Operator.FloatCount(); err != nil {
			if !checksumOK(file, size) {
				return nil, corrupt("checksum mismatch")
			}
			return nil, corrupt("%v", strings.TrimPrefix(err.Error(), "factorize: "))
		}
		floats += int64(opFloats)
	}
	if want := cacheHeader + metaLen + 8*floats + cacheSumLen; size != want {
		if size < want {
			return nil, corrupt("truncated: %d bytes, want %d", size, want)
		}
		return nil, corrupt("length %d bytes, want %d", size, want)
	}

	var b, cm *mat.Dense
	buf := make([]byte, 8*floatChunk)
	if meta.Factors {
		b = mat.NewDense(meta.R, meta.M, nil)
		cm = mat.NewDense(meta.M, meta.R, nil)
		if err := readFloats(in, b.RawMatrix().Data, buf); err != nil {
			return nil, err
		}
		if err := readFloats(in, cm.RawMatrix().Data, buf); err != nil {
			return nil, err
		}
	}
	if opFloats > 0 {
		meta.Operator.Floats = make([]float64, opFloats)
		if err := readFloats(in, meta.Operator.Floats, buf); err != nil {
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
		return nil, corrupt("metadata for %s R=%d %s does not match the request", meta.StrategyKey, meta.R, meta.Participation)
	case !meta.Factors && meta.Operator == nil && !k.lossOnly:
		return nil, corrupt("neither factors nor an operator in an entry for a full factorization")
	case meta.Factors && len(meta.Available) != meta.M:
		return nil, corrupt("%d availability rounds for %d noise rows", len(meta.Available), meta.M)
	case !meta.Factors && meta.Available != nil:
		return nil, corrupt("availability rounds without factors")
	case (meta.Semisep != nil) != (meta.Strategy == StrategySemisep):
		return nil, corrupt("semiseparable bounds in a %s entry", meta.Strategy)
	}
	f := &Factorization{
		Strategy:    meta.Strategy,
		Workload:    w,
		B:           b,
		C:           cm,
		Available:   meta.Available,
		Metrics:     meta.Metrics.metrics(k.participation),
		Iterations:  meta.Iterations,
		Evaluations: meta.Evaluations,
		Gap:         meta.Gap,
	}
	if meta.Operator != nil || meta.Factors {
		var form OperatorForm
		if meta.Operator != nil {
			form = *meta.Operator
		}
		if err := RestoreOperator(f, form, meta.Operator != nil); err != nil {
			return nil, corrupt("%s", strings.TrimPrefix(err.Error(), "factorize: "))
		}
		if !meta.Factors {
			f.Available = squareAvailable(meta.R)
		}
	}
	switch op := f.Operator.(type) {
	case *BLTParams:
		f.BLT = op
	case quasiSepOp:
		if meta.Semisep != nil {
			f.Semisep = &SemisepParams{C: op.c, OptimalLower: meta.Semisep[0], Excess: meta.Semisep[1]}
		}
	}
	if reason := verifyEntry(f); reason != "" {
		return nil, corrupt("%s", reason)
	}
	return f, nil
}

// staleTempAge is the age after which a temporary file in the cache
// directory is taken to belong to a killed writer and removed: entries are
// written in one go, so a live writer modifies its file far more often.
const staleTempAge = time.Hour

// verifyEntry checks the privacy-relevant content of an entry whose
// checksum is good, because a checksum only detects accidents: anyone who
// can write the cache directory can edit the metadata and recompute it. It
// returns why f cannot be used, or "".
//
// With factors, the metrics (gamma, the sensitivity under the participation,
// loss, RMSE, MaxSE) must be those that [ComputeMetrics] gives for the
// stored B and C under the entry's participation (to a relative 1e-12, see
// sameMetrics), the
// availability rounds must lie in [0, R) and match the factors' causal
// structure ([Factorization.CheckCausal]), B C must reproduce the workload
// (checked on a fixed pseudo-random vector: B (C x) against A x, relative
// error at most 1e-6), and a structured operator must stream C^{-1} (M C x
// against x, the same bound). Without factors, a quasiseparable
// operator's metrics must be those computed from its generators. A loss-only
// entry has no factors to check against: its metrics must be finite and
// consistent (loss = gamma^2 ||B||_F^2, RMSE = sqrt(loss/R), MaxSE <= loss)
// and the optimal strategy's sensitivity must be 1, as it is by
// construction; its loss itself is trusted.
func verifyEntry(f *Factorization) string {
	m := f.Metrics
	for _, v := range []float64{m.Gamma, m.UnitSensitivity.Value, m.FrobBSq, m.MaxRowBSq, m.Loss, m.RMSE, m.MaxSE, f.Gap} {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return fmt.Sprintf("metric %v out of range", v)
		}
	}
	if f.Iterations < 0 || f.Evaluations < 0 {
		return fmt.Sprintf("%d iterations, %d evaluations", f.Iterations, f.Evaluations)
	}
	r := f.Workload.R()
	if q, ok := f.Operator.(quasiSepOp); ok && f.B == nil {
		// A structured result: its metrics must be those of the C it
		// streams, computed from the generators.
		if inv, banded := f.Workload.InverseBand(); !banded || r < 2 {
			return "a quasiseparable operator for a workload without a bidiagonal inverse"
		} else if _, kb, _ := inv.TriBand(); kb != 1 {
			return "a quasiseparable operator for a workload without a bidiagonal inverse"
		}
		if m.Participation.Kind != KindSingle {
			return fmt.Sprintf("a quasiseparable entry without factors under %v", m.Participation)
		}
		if got := quasiSepResult(f.Strategy, f.Workload, f.Workload, 1, q.c).Metrics; !sameMetrics(got, m) {
			return fmt.Sprintf("metadata metrics (sensitivity %v, loss %v) are not those of the operator (sensitivity %v, loss %v)",
				m.UnitSensitivity.Value, m.Loss, got.UnitSensitivity.Value, got.Loss)
		}
		return ""
	}
	if f.B == nil {
		if f.Strategy == StrategyOptimal && (m.Gamma != 1 || m.UnitSensitivity.Value != 1 || !m.UnitSensitivity.Exact) {
			return fmt.Sprintf("sensitivity %v of a loss-only optimal entry (gamma %v), want 1", m.UnitSensitivity.Value, m.Gamma)
		}
		if m.Participation.Kind == KindSingle && m.UnitSensitivity.Value != m.Gamma {
			return fmt.Sprintf("sensitivity %v under single participation, want gamma %v", m.UnitSensitivity, m.Gamma)
		}
		want := metricsFrom(r, m.Gamma, m.Participation, m.UnitSensitivity, m.FrobBSq, m.MaxRowBSq)
		if !closeRel(m.Loss, want.Loss) || !closeRel(m.RMSE, want.RMSE) || m.MaxSE > m.Loss*(1+1e-12) {
			return "metrics of the loss-only entry are inconsistent"
		}
		return ""
	}
	for j, av := range f.Available {
		if av < 0 || av >= r {
			return fmt.Sprintf("availability round %d of noise row %d, want 0 <= round < %d", av, j, r)
		}
	}
	if err := f.CheckCausal(); err != nil {
		return strings.TrimPrefix(err.Error(), "factorize: ")
	}
	if got, err := ComputeMetrics(f.B, f.C, m.Participation); err != nil || !sameMetrics(got, m) {
		return fmt.Sprintf("metadata metrics (sensitivity %v, loss %v) are not those of the factors (sensitivity %v, loss %v)",
			m.UnitSensitivity.Value, m.Loss, got.UnitSensitivity.Value, got.Loss)
	}
	if e := reproductionError(f); !(e <= 1e-6) {
		return fmt.Sprintf("B C does not reproduce the workload (relative error %.3g)", e)
	}
	if _, structured := FormOf(f.Operator); structured {
		if e := operatorError(f.Operator, f.C, testVector(r)); !(e <= 1e-6) {
			return fmt.Sprintf("the operator does not stream C^{-1} (relative error %.3g)", e)
		}
	}
	return ""
}

// sameMetrics reports whether the stored metrics m are those computed from
// the factors, got: the participation, the sensitivity's exactness and rule
// exactly, the numbers to a relative 1e-12. A strategy may sum in another
// order than [ComputeMetrics] (the semiseparable one sums its structured
// factors), which changes the last bits and nothing else; an edit that
// matters changes far more.
func sameMetrics(got, m Metrics) bool {
	if got.Participation != m.Participation || got.UnitSensitivity.Exact != m.UnitSensitivity.Exact ||
		got.UnitSensitivity.Rule != m.UnitSensitivity.Rule {
		return false
	}
	for _, p := range [][2]float64{
		{got.Gamma, m.Gamma}, {got.UnitSensitivity.Value, m.UnitSensitivity.Value}, {got.FrobBSq, m.FrobBSq},
		{got.MaxRowBSq, m.MaxRowBSq}, {got.Loss, m.Loss}, {got.RMSE, m.RMSE}, {got.MaxSE, m.MaxSE},
	} {
		if !closeRel(p[0], p[1]) {
			return false
		}
	}
	return true
}

// finiteMetrics reports whether every metric is finite and >= 0.
func finiteMetrics(m Metrics) bool {
	for _, v := range []float64{m.Gamma, m.UnitSensitivity.Value, m.FrobBSq, m.MaxRowBSq, m.Loss, m.RMSE, m.MaxSE} {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return false
		}
	}
	return true
}

// closeRel reports whether a and b agree to a relative 1e-12.
func closeRel(a, b float64) bool {
	return math.Abs(a-b) <= 1e-12*math.Max(math.Abs(a), math.Abs(b))
}

// testVector returns a fixed vector of n entries in [-1, 1) from a
// linear congruential sequence: the same for every run, unrelated to any
// factorization's structure.
func testVector(n int) []float64 {
	x := make([]float64, n)
	s := uint64(0x9e3779b97f4a7c15)
	for i := range x {
		s = s*6364136223846793005 + 1442695040888963407
		x[i] = float64(s>>11)/(1<<53)*2 - 1
	}
	return x
}

// reproductionError returns ||B (C x) - A x|| / ||A x|| for the test
// vector x: a Freivalds-style check of B C = A in O(R m) time.
func reproductionError(f *Factorization) float64 {
	r := f.Workload.R()
	x := mat.NewVecDense(r, testVector(r))
	var cx, bcx, ax mat.VecDense
	cx.MulVec(f.C, x)
	bcx.MulVec(f.B, &cx)
	if inv, ok := f.Workload.InverseBand(); ok {
		// A x = L^{-1} x by forward substitution in the band of L:
		// O(R k), without forming A.
		_, k, _ := inv.TriBand()
		ax.ReuseAsVec(r)
		for i := 0; i < r; i++ {
			v := x.AtVec(i)
			for p := max(0, i-k); p < i; p++ {
				v -= inv.At(i, p) * ax.AtVec(p)
			}
			ax.SetVec(i, v/inv.At(i, i))
		}
	} else {
		ax.MulVec(f.Workload.Matrix(), x)
	}
	norm := mat.Norm(&ax, 2)
	bcx.SubVec(&bcx, &ax)
	return mat.Norm(&bcx, 2) / norm
}

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
