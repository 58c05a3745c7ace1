package dataset

import (
	"bufio"
	"cmp"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/dpmf/dpmf/internal/sysmem"
)

// Table is a labelled data set read from a file, before it is dealt to
// learners: Len rows of Dim features and a label in {-1, +1}.
type Table struct {
	// Source names the file the table was read from.
	Source string
	// Names holds the feature names from the header, or nil.
	Names []string
	// Dim is the number of features.
	Dim int
	// Features holds the rows, row-major.
	Features []float64
	// Labels holds one label in {-1, +1} per row.
	Labels []float64
}

// Len returns the number of rows.
func (t *Table) Len() int { return len(t.Labels) }

// LoadCSV reads a CSV file with [ReadCSV] and standardises its features
// with [Table.Standardize].
func LoadCSV(path string) (*Table, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	defer f.Close()
	t, err := ReadCSV(f, path)
	if err != nil {
		return nil, err
	}
	t.Standardize()
	return t, nil
}

// MaxCSVLine is the longest row, in bytes, that [ReadCSV] accepts (a row
// may span several lines only inside quotes), and MaxCSVField the longest
// field. They bound the memory a malformed input can take: a file without
// a newline is an error after MaxCSVLine bytes, not an allocation of its
// whole size.
//
// MaxCSVValues is the most values (labels and features, 2 GiB as float64)
// a table may hold: an endless stream of valid rows (`yes 1,0.5 | ofl -data
// /dev/stdin`) is an error when it reaches it, not a runtime crash when
// memory runs out. The table's room never exceeds it either (it grows by
// doubling, capped there), so reading holds fewer than 2 MaxCSVValues
// values (4 GiB) at once, while the rows are copied to a larger room; a
// room that, with the rows beside it, would exceed the machine's memory
// (physical memory and swap) is an error before it is allocated.
const (
	MaxCSVLine   = 1 << 20
	MaxCSVField  = 4096
	MaxCSVValues = 1 << 28
)

// maxCSVValues is MaxCSVValues, lowered by tests.
var maxCSVValues = MaxCSVValues

// ReadCSV reads comma-separated rows "label,feature_1,...,feature_d" from r;
// name is used in errors. The label is +1 or -1, or 1 or 0 (0 is read as
// -1; a nonzero number that rounds to 0, such as 1e-400, is no label);
// a file may not mix 0 and -1. A UTF-8 byte order mark at the start
// is skipped. The first line is a header if its first field is not a
// number. Every row must have the same number of fields, at
// least two; every value must be a finite decimal number (an optional
// sign, digits with an optional point, an optional exponent: not Go's
// hexadecimal or underscore forms, which strconv.ParseFloat also reads).
// Any violation is one error naming the file and line (and the column,
// for a number in another syntax). Blank lines are skipped. Rows longer than
// [MaxCSVLine] bytes, fields longer than [MaxCSVField] and more than
// [MaxCSVValues] values in all are errors.
func ReadCSV(r io.Reader, name string) (*Table, error) {
	if r == nil {
		return nil, &ParamError{Param: "reader", Want: "a non-nil io.Reader"}
	}
	// A UTF-8 byte order mark goes before the CSV reader sees it: left
	// in, it makes a quoted first field ("\ufeff\"label\",...", as
	// spreadsheets and R's write.csv write) a bare quote.
	br := bufio.NewReader(r)
	if b, err := br.Peek(len(utf8BOM)); err == nil && string(b) == utf8BOM {
		br.Discard(len(utf8BOM))
	}
	lim := &rowLimiter{r: br, max: MaxCSVLine}
	cr := csv.NewReader(lim)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = true
	t := &Table{Source: name}
	cols := 0 // fields per row, set by the first row
	zeroLine, minusLine := 0, 0
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			if errors.Is(err, errLongRow) {
				return nil, fmt.Errorf("dataset: %s:%d: row longer than %d bytes (no newline?), want at most %d", name, lim.line, MaxCSVLine, MaxCSVLine)
			}
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, fmt.Errorf("dataset: %s:%d: %v", name, pe.Line, pe.Err)
			}
			return nil, fmt.Errorf("dataset: %s: %w", name, err)
		}
		line, _ := cr.FieldPos(0)
		for k, f := range rec {
			if len(f) > MaxCSVField {
				return nil, fmt.Errorf("dataset: %s:%d: field %d is %d bytes long, want at most %d", name, line, k+1, len(f), MaxCSVField)
			}
		}
		if cols == 0 {
			cols = len(rec)
			if cols < 2 {
				return nil, fmt.Errorf("dataset: %s:%d: %d field, want a label and at least one feature", name, line, cols)
			}
			t.Dim = cols - 1
			if _, err := strconv.ParseFloat(strings.TrimSpace(rec[0]), 64); err != nil {
				t.Names = make([]string, t.Dim)
				for k := range t.Names {
					t.Names[k] = strings.TrimSpace(rec[k+1])
				}
				continue
			}
		}
		if len(rec) != cols {
			return nil, fmt.Errorf("dataset: %s:%d: %d fields, want %d (a label and %d features)", name, line, len(rec), cols, t.Dim)
		}
		if len(t.Labels)+len(t.Features)+cols > maxCSVValues {
			return nil, fmt.Errorf("dataset: %s:%d: more than %d values (labels and features), want at most %d: the data set is larger than ReadCSV accepts", name, line, maxCSVValues, maxCSVValues)
		}
		if len(t.Labels) == cap(t.Labels) {
			if err := t.grow(cols, name, line); err != nil {
				return nil, err
			}
		}
		for k, f := range rec {
			v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if bad := err != nil || math.IsNaN(v) || math.IsInf(v, 0); bad || !decimalText(strings.TrimSpace(f)) {
				what := "label"
				if k > 0 {
					what = fmt.Sprintf("feature %d", k)
					if t.Names != nil {
						// A header name may hold a newline or control
						// characters (a quoted field): quoted then, so
						// that the error stays one line.
						nm := t.Names[k-1]
						if q := strconv.Quote(nm); q != `"`+nm+`"` {
							nm = q
						}
						what += fmt.Sprintf(" (%s)", nm)
					}
				}
				if bad {
					return nil, fmt.Errorf("dataset: %s:%d: %s is %q, want a finite number", name, line, what, f)
				}
				// strconv.ParseFloat reads Go's literals too
				// (0x1p-3, 1_000); a data file is not Go source.
				_, col := cr.FieldPos(k)
				return nil, fmt.Errorf("dataset: %s:%d:%d: %s is %q, want a decimal number (an optional sign, digits with an optional point, an optional exponent, as -1.5e-3; not hexadecimal, not with underscores)", name, line, col, what, f)
			}
			if k == 0 {
				if v == 0 && !isZeroText(strings.TrimSpace(f)) {
					// 1e-400 rounds to 0 as a float64, but is no
					// label 0: refused as the label outside the
					// classes it is (it was read as -1).
					v = math.NaN()
				}
				switch v {
				case 1:
				case 0:
					zeroLine = cmp.Or(zeroLine, line)
					v = -1
				case -1:
					minusLine = cmp.Or(minusLine, line)
				default:
					return nil, fmt.Errorf("dataset: %s:%d: label is %q, want +1 or -1 (or 1 or 0)", name, line, f)
				}
				if zeroLine != 0 && minusLine != 0 {
					return nil, fmt.Errorf("dataset: %s:%d: labels 0 (line %d) and -1 (line %d) both occur, want +1/-1 or 1/0", name, max(zeroLine, minusLine), zeroLine, minusLine)
				}
				t.Labels = append(t.Labels, v)
				continue
			}
			t.Features = append(t.Features, v)
		}
	}
	if t.Len() == 0 {
		return nil, fmt.Errorf("dataset: %s: no data rows", name)
	}
	return t, nil
}

// grow makes room in t for more rows of cols values: twice the rows it
// has room for (at least 1024), but never more than maxCSVValues values
// in all, so that the table's capacity stays within its limit where
// append would round past it. The old rows and the new room are both held
// while the rows are copied (fewer than 2 maxCSVValues values): more than
// the machine has in all (machineBytes) is an error before allocating.
func (t *Table) grow(cols int, name string, line int) error {
	rows := cap(t.Labels)
	next := min(max(2*rows, 1024), maxCSVValues/cols)
	if have, need := machineBytes(), 8*float64(rows+next)*float64(cols); have > 0 && need > have {
		return fmt.Errorf("dataset: %s:%d: reading past %d rows of %d values needs %.3g GB, more than this machine's %.3g GB of memory: want a smaller file", name, line, rows, cols, need/1e9, have/1e9)
	}
	labels := make([]float64, len(t.Labels), next)
	copy(labels, t.Labels)
	features := make([]float64, len(t.Features), next*(cols-1))
	copy(features, t.Features)
	t.Labels, t.Features = labels, features
	return nil
}

// machineBytes returns the memory the machine can give a process in all,
// physical memory and swap ([sysmem.Limit]); 0 where it is unknown, which
// turns the check off. Tests replace it.
var machineBytes = sysmem.Limit

// Standardize shifts and scales every feature to mean 0 and standard
// deviation 1 over the rows (population standard deviation). A constant
// feature becomes 0. The computation is scale-safe: each column is first
// divided by its largest magnitude, so that neither the sum for the mean
// nor the squares for the standard deviation overflow or underflow (a
// column with values near 1e200, or one entry of 1e308, is standardised,
// not zeroed).
func (t *Table) Standardize() {
	n, d := t.Len(), t.Dim
	for k := 0; k < d; k++ {
		big := 0.0
		for j := 0; j < n; j++ {
			big = math.Max(big, math.Abs(t.Features[j*d+k]))
		}
		if !(big > 0) || math.IsInf(big, 0) {
			// An all-zero column is constant; ReadCSV refuses
			// non-finite values, so big is never Inf or NaN here.
			for j := 0; j < n; j++ {
				t.Features[j*d+k] = 0
			}
			continue
		}
		// y = x / big lies in [-1, 1]: its mean and squared deviations
		// are sums of at most n terms of size <= 4.
		mean := 0.0
		for j := 0; j < n; j++ {
			mean += t.Features[j*d+k] / big
		}
		mean /= float64(n)
		ss := 0.0
		for j := 0; j < n; j++ {
			c := t.Features[j*d+k]/big - mean
			ss += c * c
		}
		sd := math.Sqrt(ss / float64(n))
		scale := 0.0
		if sd > 0 {
			scale = 1 / sd
		}
		for j := 0; j < n; j++ {
			t.Features[j*d+k] = (t.Features[j*d+k]/big - mean) * scale
		}
	}
}

// SplitKind says how a table's rows are dealt to learners.
type SplitKind int

const (
	// IID deals a uniformly random subset of rows to learners at random.
	IID SplitKind = iota
	// ByFeature sorts the rows by one feature and gives each learner a
	// contiguous block: learner i sees the i-th range of that feature.
	ByFeature
	// ByLabel sorts the rows by label and gives each learner a contiguous
	// block: the first learners see mostly -1, the last mostly +1.
	ByLabel
)

// Split is how [Table.Deal] assigns rows to learners. The zero value is
// [IID]; [ParseSplit] reads "iid", "label" or "feature:K".
type Split struct {
	// Kind is IID, ByLabel or ByFeature.
	Kind SplitKind
	// Feature is the 0-based feature index for ByFeature.
	Feature int
}

// String returns "iid", "label" or "feature:K".
func (s Split) String() string {
	switch s.Kind {
	case IID:
		return "iid"
	case ByLabel:
		return "label"
	case ByFeature:
		return "feature:" + strconv.Itoa(s.Feature)
	}
	return fmt.Sprintf("SplitKind(%d)", int(s.Kind))
}

// ParseSplit parses "iid", "label" or "feature:K" (K a 0-based feature
// index).
func ParseSplit(s string) (Split, error) {
	switch {
	case s == "iid":
		return Split{Kind: IID}, nil
	case s == "label":
		return Split{Kind: ByLabel}, nil
	case strings.HasPrefix(s, "feature:"):
		k, err := strconv.Atoi(strings.TrimPrefix(s, "feature:"))
		if err != nil || k < 0 {
			return Split{}, &ParamError{Param: "split", Value: strconv.Quote(s), Want: "feature:K with K a feature index >= 0"}
		}
		return Split{Kind: ByFeature, Feature: k}, nil
	}
	return Split{}, &ParamError{Param: "split", Value: strconv.Quote(s), Want: "iid, label or feature:K"}
}

// Deal makes a data set of n learners, R rounds and tau steps from N = n R
// tau rows of t. The rows are shuffled with the seed and the first N kept
// (the rest are not used, and do not count in the loss error). With IID
// each learner gets a random block; otherwise the kept rows are sorted
// (stably) by the split's key and learner i gets the i-th block of R tau
// rows. Each learner's clients then arrive in random order. It is an error
// for the table to have fewer than N rows, or for a ByFeature split to name
// a feature it does not have.
func (t *Table) Deal(learners, rounds, tau int, split Split, seed uint64) (*Dataset, error) {
	if t == nil {
		return nil, &ParamError{Param: "table", Want: "a Table from ReadCSV or LoadCSV"}
	}
	ds, err := NewDataset(t.Source, learners, rounds, tau, t.Dim)
	if err != nil {
		return nil, err
	}
	need := ds.Len()
	if t.Len() < need {
		return nil, fmt.Errorf("dataset: %s: %d samples, need learners x rounds x tau = %d x %d x %d = %d", t.Source, t.Len(), learners, rounds, tau, need)
	}
	if split.Kind == ByFeature && (split.Feature < 0 || split.Feature >= t.Dim) {
		return nil, fmt.Errorf("dataset: %s: split by feature %d, want a feature index in [0, %d)", t.Source, split.Feature, t.Dim)
	}
	rng := rand.New(rand.NewPCG(seed, 0x5851f42d4c957f2d))
	idx := rng.Perm(t.Len())[:need]
	var key func(j int) float64
	switch split.Kind {
	case IID:
	case ByLabel:
		key = func(j int) float64 { return t.Labels[j] }
	case ByFeature:
		key = func(j int) float64 { return t.Features[j*t.Dim+split.Feature] }
	default:
		return nil, fmt.Errorf("dataset: unknown split %v", split)
	}
	if key != nil {
		slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(key(a), key(b)) })
	}
	per := rounds * tau
	for i := 0; i < learners; i++ {
		block := idx[i*per : (i+1)*per]
		rng.Shuffle(len(block), func(a, b int) { block[a], block[b] = block[b], block[a] })
		for s, j := range block {
			r, st := s/tau, s%tau
			a, _ := ds.Sample(i, r, st)
			copy(a, t.Features[j*t.Dim:(j+1)*t.Dim])
			ds.Labels[ds.Index(i, r, st)] = t.Labels[j]
		}
	}
	ds.Name = fmt.Sprintf("%s (%s)", t.Source, split)
	return ds, nil
}

// decimalText reports whether s is a decimal number: an optional sign,
// digits with at most one point (at least one digit), and an optional
// exponent, e or E with an optional sign and at least one digit. It is
// the syntax strconv.ParseFloat reads less Go's own forms (hexadecimal
// mantissas, underscores between digits) and the words Inf and NaN.
func decimalText(s string) bool {
	sign := func(s string) string { return strings.TrimLeft(s[:min(len(s), 1)], "+-") + s[min(len(s), 1):] }
	digits := func(s string) (n int, rest string) {
		rest = strings.TrimLeft(s, "0123456789")
		return len(s) - len(rest), rest
	}
	s = sign(s)
	n, s := digits(s)
	if strings.HasPrefix(s, ".") {
		var m int
		m, s = digits(s[1:])
		n += m
	}
	if n == 0 {
		return false
	}
	if s == "" {
		return true
	}
	if s[0] != 'e' && s[0] != 'E' {
		return false
	}
	n, s = digits(sign(s[1:]))
	return n > 0 && s == ""
}

// isZeroText reports whether s, a number strconv.ParseFloat read as 0,
// is 0 exactly, not a nonzero value below the float64 range (1e-400).
func isZeroText(s string) bool {
	f, _, err := big.ParseFloat(s, 0, 64, big.ToNearestEven)
	return err == nil && f.Sign() == 0
}

// utf8BOM is the UTF-8 byte order mark.
const utf8BOM = "\ufeff"

// errLongRow is returned by rowLimiter for a row longer than its limit.
var errLongRow = errors.New("row too long")

// rowLimiter passes r through and fails with errLongRow once a row (the
// bytes since the last newline outside double quotes) exceeds max bytes, so
// that encoding/csv, which has no limit of its own, never buffers more than
// about max bytes. Quote parity tells whether a newline ends a row: in CSV
// a quote opens or closes a quoted field, and an escaped quote is a pair.
type rowLimiter struct {
	r       io.Reader
	max     int
	row     int  // bytes in the current row
	line    int  // 1-based number of the line being read
	inQuote bool // inside a quoted field
}

func (l *rowLimiter) Read(p []byte) (int, error) {
	l.line = cmp.Or(l.line, 1)
	if l.row > l.max {
		return 0, errLongRow
	}
	n, err := l.r.Read(p)
	for i, b := range p[:n] {
		switch b {
		case '"':
			l.inQuote = !l.inQuote
		case '\n':
			l.line++
			if !l.inQuote {
				l.row = 0
				continue
			}
		}
		l.row++
		if l.row > l.max {
			// Hand over what precedes the long row; the next call fails.
			return i + 1, nil
		}
	}
	return n, err
}
