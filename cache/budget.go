package cache

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/dpmf/dpmf/internal/atomicfile"
)

// DefaultBudget is the size budget of a [Cache] whose Budget is 0:
// 1 GiB, about a hundred entries of R = 800 with B and C.
const DefaultBudget int64 = 1 << 30

// Unlimited, as [Cache.Budget], turns eviction off: entries are
// kept until they are removed by hand or with [Cache.Clear].
const Unlimited int64 = -1

// BudgetError is the error of storing an entry larger than the whole
// budget of the cache: it is not stored (storing it would leave the cache
// over its budget, or evict every other entry for one that does not fit).
type BudgetError struct {
	// Size is the size of the entry in bytes.
	Size int64
	// Budget is the budget of the cache in bytes.
	Budget int64
}

// Error implements error.
func (e *BudgetError) Error() string {
	return fmt.Sprintf("the entry (%s) is larger than the cache budget (%s)", FormatSize(e.Size), FormatSize(e.Budget))
}

// FormatSize formats a number of bytes with a binary unit, for example
// "512 B", "15.3 MiB" or "1.0 GiB".
func FormatSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n)/unit, 0
	for v >= unit && i < 4 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTP"[i])
}

// budget returns the effective budget in bytes; negative means no limit.
func (c *Cache) budget() int64 {
	return cmp.Or(c.Budget, DefaultBudget)
}

// touch records a use of the entry at path: its modification time, which
// eviction orders entries by, becomes now. A failure (a read-only cache
// directory) is ignored: the entry is still usable, only its rank is older.
func (c *Cache) touch(path string) {
	t := time.Now()
	if c.now != nil {
		t = c.now()
	}
	_ = os.Chtimes(path, t, t)
}

// isEntryName reports whether name is the file name of a cache entry:
// 64 lowercase hexadecimal digits and the extension. Other files in the
// directory (temporary files of writers, anything a user put there) are
// never counted, listed or removed as entries.
func isEntryName(name string) bool {
	key, ok := strings.CutSuffix(name, cacheExt)
	return ok && len(key) == 64 && strings.Trim(key, "0123456789abcdef") == ""
}

// entryFile is one entry file as the directory listing shows it.
type entryFile struct {
	name  string
	size  int64
	mtime time.Time
}

// entryFiles returns the regular entry files of the directory (none if it
// does not exist), least recently used first; ties are ordered by name so
// that eviction is deterministic.
func (c *Cache) entryFiles() ([]entryFile, error) {
	des, err := os.ReadDir(c.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var files []entryFile
	for _, de := range des {
		if !isEntryName(de.Name()) || !de.Type().IsRegular() {
			continue
		}
		fi, err := de.Info()
		if err != nil {
			continue // removed meanwhile
		}
		files = append(files, entryFile{de.Name(), fi.Size(), fi.ModTime()})
	}
	slices.SortFunc(files, func(a, b entryFile) int {
		return cmp.Or(a.mtime.Compare(b.mtime), strings.Compare(a.name, b.name))
	})
	return files, nil
}

// trim removes the least recently used entries until the entries take at
// most limit bytes together, but never the entry named keep (the one just
// written). It returns the removed entries.
//
// A reader that has opened an entry keeps reading it after it is removed
// (a POSIX file lives on until its last descriptor is closed), so removing
// never corrupts a load in progress, in this process or another one; a
// reader touches an entry as soon as it has opened it, and an entry whose
// modification time changed since the listing is removed only if removing
// the others does not bring the cache within the limit, so an entry loaded
// while trim runs is usually kept. Entries that another process removed
// meanwhile count as removed. trim is safe to run in several goroutines and
// processes at once: each removes what it sees over the budget, and when
// all have finished the entries fit the budget.
func (c *Cache) trim(limit int64, keep string) ([]entryFile, error) {
	if limit < 0 {
		return nil, nil
	}
	files, err := c.entryFiles()
	if err != nil {
		return nil, err
	}
	var total int64
	for _, f := range files {
		total += f.size
	}
	var removed []entryFile
	var first error
	var inUse []entryFile
	remove := func(f entryFile) {
		err := os.Remove(filepath.Join(c.Dir, f.name))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			first = cmp.Or(first, err)
			return
		}
		total -= f.size
		if err == nil {
			removed = append(removed, f)
		}
	}
	for _, f := range files {
		if total <= limit {
			break
		}
		if f.name == keep {
			continue
		}
		fi, err := os.Lstat(filepath.Join(c.Dir, f.name))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			total -= f.size
		case err != nil:
			first = cmp.Or(first, err)
		case !fi.ModTime().Equal(f.mtime) || fi.Size() != f.size:
			// Loaded or rewritten since the listing: in use, so it
			// goes last.
			inUse = append(inUse, f)
		default:
			remove(f)
		}
	}
	// Still over the budget: the entries used meanwhile go too (their
	// readers have them open and read them to the end).
	for _, f := range inUse {
		if total <= limit {
			break
		}
		remove(f)
	}
	return removed, first
}

// Trim removes the least recently used entries until the cache fits its
// budget (see [Cache.Budget]) and returns how many it removed and how many
// bytes they took. Compute and Store trim the cache after each store, so
// Trim is needed only after lowering the budget.
func (c *Cache) Trim() (removed int, freed int64, err error) {
	if c == nil {
		return 0, 0, errNilCache
	}
	files, err := c.trim(c.budget(), "")
	for _, f := range files {
		freed += f.size
	}
	return len(files), freed, err
}

// Entry describes one entry of a cache directory, as [Cache.List]
// reads it from the entry's header and metadata.
type Entry struct {
	// Key is the entry's key, the hex SHA-256 of its inputs ([Key]).
	Key string `json:"key"`
	// Path is the entry's file.
	Path string `json:"path"`
	// Size is the file's size in bytes.
	Size int64 `json:"size"`
	// LastUsed is when the entry was last stored or loaded: eviction
	// removes the entries with the oldest LastUsed first.
	LastUsed time.Time `json:"last_used"`
	// Strategy, StrategyKey, Workload, R, M and Participation are the
	// entry's metadata: the strategy's name and [factorize.CacheKey], the
	// workload's [factorize.Workload.Key], the rounds, the rows of C and the
	// participation.
	Strategy      string `json:"strategy,omitempty"`
	StrategyKey   string `json:"strategy_key,omitempty"`
	Workload      string `json:"workload,omitempty"`
	R             int    `json:"R,omitempty"`
	M             int    `json:"m,omitempty"`
	Participation string `json:"participation,omitempty"`
	// Factors reports whether the entry holds B and C (false for a
	// loss-only result).
	Factors bool `json:"factors"`
	// Operator is the kind of the structured noise operator the entry
	// keeps ([factorize.OperatorForm] Kind: "semiseparable", "blt", ...),
	// or "" when it keeps none (a dense operator is rebuilt from B). An
	// entry without factors but with an operator streams its noise and
	// forms B and C from it on request.
	Operator string `json:"operator,omitempty"`
	// Problem is why the header or metadata cannot be read, or "". Such
	// an entry is never used: a load reports it corrupt and replaces it.
	Problem string `json:"problem,omitempty"`
}

// List returns the entries of the cache directory, most recently used
// first; a directory that does not exist has none. It reads each entry's
// header and metadata but not its factors, so the checksum and the
// metadata's agreement with the factors are not verified here: a load
// verifies them (see [Cache.Compute]) and never uses an entry that fails.
func (c *Cache) List() ([]Entry, error) {
	if c == nil {
		return nil, errNilCache
	}
	files, err := c.entryFiles()
	if err != nil {
		return nil, err
	}
	entries := make([]Entry, 0, len(files))
	for i := len(files) - 1; i >= 0; i-- {
		f := files[i]
		e := Entry{
			Key:      strings.TrimSuffix(f.name, cacheExt),
			Path:     filepath.Join(c.Dir, f.name),
			Size:     f.size,
			LastUsed: f.mtime,
		}
		file, err := atomicfile.OpenRegular(e.Path)
		var meta *cacheMeta
		if err == nil {
			meta, _, _, err = decodeMeta(file, e.Size)
			file.Close()
		}
		if err != nil {
			e.Problem = err.Error()
		} else {
			e.Strategy, e.StrategyKey, e.Workload = meta.Strategy, meta.StrategyKey, meta.Workload
			e.R, e.M, e.Participation, e.Factors = meta.R, meta.M, meta.Participation, meta.Factors
			if meta.Operator != nil {
				e.Operator = meta.Operator.Kind
			}
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// decodeMeta reads an entry's header and metadata from r, the entry's
// file of size bytes, and returns the metadata and its length; an error
// says what is wrong, and metaJSON that the header was good but the
// metadata was not.
func decodeMeta(r io.Reader, size int64) (meta *cacheMeta, metaLen int64, metaJSON bool, err error) {
	var hdr [cacheHeader]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, 0, false, fmt.Errorf("truncated: %d bytes", size)
	}
	if string(hdr[:8]) != cacheMagic {
		return nil, 0, false, fmt.Errorf("bad magic %q", hdr[:8])
	}
	if v := binary.LittleEndian.Uint32(hdr[8:]); v != cacheVersion {
		return nil, 0, false, fmt.Errorf("format version %d, want %d", v, cacheVersion)
	}
	metaLen = int64(binary.LittleEndian.Uint32(hdr[12:]))
	if metaLen > maxMetaLength || cacheHeader+metaLen+cacheSumLen > size {
		return nil, 0, false, fmt.Errorf("metadata length %d in a file of %d bytes", metaLen, size)
	}
	js := make([]byte, metaLen)
	if _, err := io.ReadFull(r, js); err != nil {
		return nil, 0, false, fmt.Errorf("truncated metadata: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	meta = new(cacheMeta)
	if err := dec.Decode(meta); err != nil {
		return nil, 0, true, fmt.Errorf("bad metadata: %v", err)
	}
	return meta, metaLen, false, nil
}

// Clear removes every entry of the cache directory, and the temporary files
// that killed writers of entries left there more than an hour ago (those of writers
// still running are left to them), and returns how many entries it removed
// and how many bytes they took. A load in progress is not disturbed: it has
// the file open and reads it to the end. The directory itself and files
// that are not entries are left. A directory that does not exist is empty.
func (c *Cache) Clear() (removed int, freed int64, err error) {
	if c == nil {
		return 0, 0, errNilCache
	}
	files, err := c.entryFiles()
	if err != nil {
		return 0, 0, err
	}
	var first error
	for _, f := range files {
		if err := os.Remove(filepath.Join(c.Dir, f.name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			first = cmp.Or(first, err)
			continue
		}
		removed++
		freed += f.size
	}
	if _, err := atomicfile.RemoveStaleOf(c.Dir, staleTempAge, isEntryName); !errors.Is(err, fs.ErrNotExist) {
		first = cmp.Or(first, err)
	}
	return removed, freed, first
}
