package dataset

import (
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestReadCSVErrors(t *testing.T) {
	for _, c := range []struct {
		name, text, want string
	}{
		{"empty", "", "data.csv: no data rows"},
		{"header only", "label,a,b\n", "data.csv: no data rows"},
		{"one column", "1\n-1\n", "data.csv:1: 1 field"},
		{"short row", "label,a,b\n1,2,3\n-1,2\n", "data.csv:3: 2 fields, want 3"},
		{"long row", "1,2,3\n-1,2,3,4\n", "data.csv:2: 4 fields, want 3"},
		{"NaN", "label,a,b\n1,2,3\n-1,NaN,3\n", "data.csv:3: feature 1 (a) is \"NaN\""},
		{"Inf", "1,2,3\n-1,2,+Inf\n", "data.csv:2: feature 2 is \"+Inf\""},
		{"not a number", "1,2,3\n-1,2,x\n", "data.csv:2: feature 2 is \"x\""},
		{"empty field", "1,2,3\n-1,,3\n", "data.csv:2: feature 1 is \"\""},
		{"bad label", "1,2,3\n2,2,3\n", "data.csv:2: label is \"2\""},
		{"label NaN", "1,2,3\nnan,2,3\n", "data.csv:2: label is \"nan\""},
		// Nonzero labels below the float64 range parse as 0 and were
		// read as label 0, that is -1.
		{"label 1e-400", "1,2,3\n1e-400,2,3\n", "data.csv:2: label is \"1e-400\", want +1 or -1 (or 1 or 0)"},
		{"label 0x1p-2000", "1,2,3\n0x1p-2000,2,3\n", "data.csv:2:1: label is \"0x1p-2000\", want a decimal number"},
		{"mixed labels", "1,2,3\n0,2,3\n-1,1,1\n", "data.csv:3: labels 0 (line 2) and -1 (line 3)"},
		{"bad quote", "1,2,3\n-1,\"2,3\n", "data.csv:"},
		// Found by FuzzReadCSV: a quoted header name with a newline
		// made the error two lines.
		{"name with a newline", "label,\"a\nb\"\n1,x\n", "data.csv:3: feature 1 (\"a\\nb\") is \"x\""},
	} {
		_, err := ReadCSV(strings.NewReader(c.text), "data.csv")
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %q, want one line containing %q", c.name, err, c.want)
		}
	}
}

func TestReadCSV(t *testing.T) {
	// Header optional; 0/1 labels read as -1/+1; spaces after commas; a
	// UTF-8 byte order mark (spreadsheets write one) is not part of the
	// first field: before it was, a numeric first row became a header and
	// its sample was dropped.
	for _, text := range []string{"y,f1,f2\n1,1,10\n0,3,20\n\n1, 5, 30\n", "1,1,10\n0,3,20\n1,5,30\n",
		"\ufeff1,1,10\n0,3,20\n1,5,30\n", "\ufeffy,f1,f2\n1,1,10\n0,3,20\n1,5,30\n"} {
		tab, err := ReadCSV(strings.NewReader(text), "x.csv")
		if err != nil {
			t.Fatal(err)
		}
		if tab.Len() != 3 || tab.Dim != 2 || !slices.Equal(tab.Labels, []float64{1, -1, 1}) || !slices.Equal(tab.Features, []float64{1, 10, 3, 20, 5, 30}) {
			t.Errorf("table %+v", tab)
		}
		tab.Standardize()
		// Columns (1,3,5) and (10,20,30): mean 3 and 20, population
		// standard deviations sqrt(8/3) and sqrt(200/3).
		s := math.Sqrt(1.5)
		want := []float64{-s, -s, 0, 0, s, s}
		for k := range want {
			if math.Abs(tab.Features[k]-want[k]) > 1e-15 {
				t.Errorf("standardised %v, want %v", tab.Features, want)
				break
			}
		}
	}
}

func TestDeal(t *testing.T) {
	// 24 rows: feature 0 is the row number, feature 1 its negative, labels
	// alternate.
	var b strings.Builder
	for j := 0; j < 24; j++ {
		y := 1
		if j%2 == 1 {
			y = -1
		}
		b.WriteString(strings.Join([]string{strconv.Itoa(y), strconv.Itoa(j), strconv.Itoa(-j)}, ",") + "\n")
	}
	tab, err := ReadCSV(strings.NewReader(b.String()), "t.csv")
	if err != nil {
		t.Fatal(err)
	}
	const n, R, tau = 3, 2, 3 // 18 of 24 rows
	rowsOf := func(ds *Dataset, i int) []float64 {
		var v []float64
		for r := 0; r < R; r++ {
			for s := 0; s < tau; s++ {
				a, y := ds.Sample(i, r, s)
				if a[1] != -a[0] || (int(a[0])%2 == 0) != (y == 1) {
					t.Fatalf("row %v with label %v is not a row of the table", a, y)
				}
				v = append(v, a[0])
			}
		}
		slices.Sort(v)
		return v
	}
	seen := map[float64]bool{}
	iid, err := tab.Deal(n, R, tau, Split{Kind: IID}, 5)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		for _, v := range rowsOf(iid, i) {
			if seen[v] {
				t.Errorf("row %v dealt twice", v)
			}
			seen[v] = true
		}
	}
	// By feature 0: learner i's rows all lie below learner i+1's.
	byf, err := tab.Deal(n, R, tau, Split{Kind: ByFeature, Feature: 0}, 5)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < n; i++ {
		a, b := rowsOf(byf, i), rowsOf(byf, i+1)
		if a[len(a)-1] >= b[0] {
			t.Errorf("learners %d and %d overlap in feature 0: %v, %v", i, i+1, a, b)
		}
	}
	// By feature 1 (the negative): the order reverses.
	byneg, _ := tab.Deal(n, R, tau, Split{Kind: ByFeature, Feature: 1}, 5)
	if a, b := rowsOf(byneg, 0), rowsOf(byneg, n-1); a[0] <= b[len(b)-1] {
		t.Errorf("sorting by the negated feature did not reverse the order")
	}
	// By label: the first learner holds only -1, the last only +1.
	byl, _ := tab.Deal(n, R, tau, Split{Kind: ByLabel}, 5)
	for s := 0; s < R*tau; s++ {
		_, y0 := byl.Sample(0, s/tau, s%tau)
		_, y2 := byl.Sample(n-1, s/tau, s%tau)
		if y0 != -1 || y2 != 1 {
			t.Fatalf("label split: learner 0 has %v, learner %d has %v", y0, n-1, y2)
		}
	}
	if _, err := tab.Deal(n, R, tau, Split{Kind: ByFeature, Feature: 2}, 5); err == nil {
		t.Error("split by a missing feature: no error")
	}
	for _, s := range []string{"iid", "label", "feature:3"} {
		sp, err := ParseSplit(s)
		if err != nil || sp.String() != s {
			t.Errorf("ParseSplit(%q) = %v, %v", s, sp, err)
		}
	}
	for _, s := range []string{"", "feature:", "feature:-1", "skew"} {
		if _, err := ParseSplit(s); err == nil {
			t.Errorf("ParseSplit(%q): no error", s)
		}
	}
}

func TestLoadCSVFileError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.csv")
	if err := os.WriteFile(path, []byte("label,a\n1,2\n-1,oops\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadCSV(path)
	if err == nil || !strings.Contains(err.Error(), path+":3:") {
		t.Errorf("error %v, want one naming %s:3", err, path)
	}
}

// A row without a newline is refused after MaxCSVLine bytes: the reader
// consumes at most a little more than the limit, whatever the input's size.
func TestReadCSVLongRow(t *testing.T) {
	src := &countingReader{r: io.MultiReader(strings.NewReader("label,x\n1,2\n1,"), infiniteDigits{})}
	_, err := ReadCSV(src, "endless.csv")
	if err == nil || !strings.Contains(err.Error(), "endless.csv:3: row longer than") {
		t.Fatalf("err = %v, want a row-length error on line 3", err)
	}
	if src.n > MaxCSVLine+64<<10 {
		t.Errorf("read %d bytes, want about MaxCSVLine = %d", src.n, MaxCSVLine)
	}
	// A long field within the row limit is refused by the field limit.
	_, err = ReadCSV(strings.NewReader("1,"+strings.Repeat("1", MaxCSVField+1)+"\n"), "wide.csv")
	if err == nil || !strings.Contains(err.Error(), "wide.csv:1: field 2 is") {
		t.Fatalf("err = %v, want a field-length error", err)
	}
	// Newlines inside quotes do not end a row; the row limit still applies.
	_, err = ReadCSV(io.MultiReader(strings.NewReader("1,\""), infiniteNewlines{}), "quoted.csv")
	if err == nil || !strings.Contains(err.Error(), "row longer than") {
		t.Fatalf("err = %v, want a row-length error", err)
	}
}

type infiniteDigits struct{}

func (infiniteDigits) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = '7'
	}
	return len(p), nil
}

type infiniteNewlines struct{}

func (infiniteNewlines) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = '\n'
	}
	return len(p), nil
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// Standardising columns of huge or tiny values gives the values computed by
// hand, where the plain formulas overflow (the sum of squares of 1e200 is
// Inf, which used to zero the feature) or underflow.
func TestStandardizeExtremeScales(t *testing.T) {
	r3 := math.Sqrt(3)
	for _, c := range []struct {
		col, want []float64
	}{
		{[]float64{1e200, 3e200}, []float64{-1, 1}},
		{[]float64{0, 0, 0, 1e308}, []float64{-1 / r3, -1 / r3, -1 / r3, r3}},
		{[]float64{1e308, 1e308, -1e308, -1e308}, []float64{1, 1, -1, -1}},
		{[]float64{1e-170, 3e-170}, []float64{-1, 1}},
		{[]float64{5e-324, 0, 5e-324, 0}, []float64{1, -1, 1, -1}},
		{[]float64{7, 7}, []float64{0, 0}},
		{[]float64{0, 0}, []float64{0, 0}},
	} {
		tb := &Table{Dim: 1, Features: append([]float64(nil), c.col...), Labels: make([]float64, len(c.col))}
		tb.Standardize()
		for j, v := range tb.Features {
			if math.Abs(v-c.want[j]) > 1e-15 {
				t.Errorf("Standardize(%v) = %v, want %v", c.col, tb.Features, c.want)
				break
			}
		}
	}
}

// endlessRows is an endless stream of valid rows.
type endlessRows struct{ n int }

func (e *endlessRows) Read(p []byte) (int, error) {
	const row = "1,0.5,0.25\n"
	k := 0
	for k+len(row) <= len(p) {
		k += copy(p[k:], row)
	}
	e.n += k
	return k, nil
}

// An endless stream of valid rows stops at maxCSVValues values (lowered
// here to 3000: 1000 rows of 3), with an error, having read about that
// much: before, it was read until memory ran out and the runtime crashed.
func TestReadCSVEndlessRowsStop(t *testing.T) {
	old := maxCSVValues
	maxCSVValues = 3000
	defer func() { maxCSVValues = old }()
	e := &endlessRows{}
	_, err := ReadCSV(e, "endless")
	if err == nil || !strings.Contains(err.Error(), "endless:1001: more than 3000 values") {
		t.Fatalf("err = %v, want one at line 1001", err)
	}
	if e.n > 1<<20 {
		t.Errorf("read %d bytes for 1001 rows", e.n)
	}
}

// docs/privacy.md ("Data as dealt"): the guarantee is about the stream of
// samples the learners see, and two CSV files that differ in one row do
// not give streams that differ in one sample. Standardize uses every
// row's statistics, so replacing row 0 changes every dealt sample (8 of
// 8 here, counted by comparing the streams position by position); and a
// sorted split moves rows between learners. An iid deal by itself keeps
// neighbours neighbours: without standardising, the streams differ at
// exactly one position.
func TestNeighbouringFilesAreNotNeighbouringStreams(t *testing.T) {
	const n, R, tau = 2, 2, 2
	file := func(first string) *Table {
		rows := []string{first, "1,2", "-1,3", "1,4", "-1,5", "1,6", "-1,7", "1,8"}
		tab, err := ReadCSV(strings.NewReader(strings.Join(rows, "\n")), "t.csv")
		if err != nil {
			t.Fatal(err)
		}
		return tab
	}
	differ := func(a, b *Table, split Split) int {
		da, err := a.Deal(n, R, tau, split, 7)
		if err != nil {
			t.Fatal(err)
		}
		db, err := b.Deal(n, R, tau, split, 7)
		if err != nil {
			t.Fatal(err)
		}
		k := 0
		for j := range da.Labels {
			if da.Labels[j] != db.Labels[j] || da.Features[j] != db.Features[j] {
				k++
			}
		}
		return k
	}
	a, b := file("-1,1"), file("-1,100")
	if k := differ(a, b, Split{Kind: IID}); k != 1 {
		t.Errorf("iid deal of raw rows: streams differ at %d positions, want 1", k)
	}
	if k := differ(a, b, Split{Kind: ByFeature}); k != 8 {
		t.Errorf("sorted by the feature: streams differ at %d positions, want 8 (row 0 moves to the end)", k)
	}
	a.Standardize()
	b.Standardize()
	if k := differ(a, b, Split{Kind: IID}); k != 8 {
		t.Errorf("standardised: streams differ at %d positions, want all 8", k)
	}
}

// A byte order mark before a quoted first field (R's write.csv with
// fileEncoding "UTF-8-BOM", spreadsheets quoting their fields) is skipped
// like any other: before, encoding/csv saw the mark as the start of an
// unquoted field and refused the file with `bare " in non-quoted-field`.
func TestReadCSVBOMBeforeQuote(t *testing.T) {
	for _, text := range []string{
		"\ufeff\"y\",\"f1\"\r\n\"1\",\"2\"\r\n\"0\",\"3\"\r\n",
		"\ufeff\"1\",\"2\"\r\n\"0\",\"3\"\r\n",
	} {
		tab, err := ReadCSV(strings.NewReader(text), "x.csv")
		if err != nil {
			t.Errorf("%q: %v", text, err)
			continue
		}
		if tab.Len() != 2 || tab.Dim != 1 || !slices.Equal(tab.Labels, []float64{1, -1}) || !slices.Equal(tab.Features, []float64{2, 3}) {
			t.Errorf("%q: table %+v, want labels 1, -1 and features 2, 3", text, tab)
		}
		if tab.Names != nil && !slices.Equal(tab.Names, []string{"f1"}) {
			t.Errorf("%q: names %q, want [f1]", text, tab.Names)
		}
	}
}

// Every decimal spelling of zero is label 0 (read as -1) and of one label
// 1; a nonzero number that rounds to 0 is not (TestReadCSVErrors), nor is
// a hexadecimal one (TestReadCSVDecimalOnly).
func TestReadCSVZeroLabelSpellings(t *testing.T) {
	tab, err := ReadCSV(strings.NewReader("0.0,1\n-0,2\n0e5,3\n+0.,4\n1.0,5\n1e0,6\n"), "z.csv")
	if err != nil {
		t.Fatal(err)
	}
	if want := []float64{-1, -1, -1, -1, 1, 1}; !slices.Equal(tab.Labels, want) {
		t.Errorf("labels %v, want %v", tab.Labels, want)
	}
}

// A data file is not Go source: strconv.ParseFloat reads Go's hexadecimal
// floats and underscores between digits, and ReadCSV took 0x1p-3 as
// 0.125 and 1_000 as 1000. They are one error naming the file, line and
// column; decimal spellings (signs, a leading or trailing point, either
// exponent letter) are read as before, and NaN and Inf are refused as
// before ("want a finite number").
func TestReadCSVDecimalOnly(t *testing.T) {
	for _, c := range []struct{ name, text, want string }{
		{"hex feature", "1,2,3\n-1,0x1p-3,3\n", `data.csv:2:4: feature 1 is "0x1p-3", want a decimal number`},
		{"hex upper", "1,2,3\n-1,2,0X1P-3\n", `data.csv:2:6: feature 2 is "0X1P-3", want a decimal number`},
		{"underscore", "label,a,b\n1,1_000,3\n", `data.csv:2:3: feature 1 (a) is "1_000", want a decimal number`},
		{"underscore exponent", "1,2,1e1_0\n", `data.csv:1:5: feature 2 is "1e1_0", want a decimal number`},
		{"hex label", "0x1p0,2,3\n", `data.csv:1:1: label is "0x1p0", want a decimal number`},
		{"padded", "1,2,3\n-1, 0x1p-3,3\n", `data.csv:2:5: feature 1 is "0x1p-3", want a decimal number`},
		{"NaN as before", "1,2,3\n-1,NaN,3\n", `data.csv:2: feature 1 is "NaN", want a finite number`},
		{"Inf as before", "1,2,3\n-1,2,infinity\n", `data.csv:2: feature 2 is "infinity", want a finite number`},
	} {
		_, err := ReadCSV(strings.NewReader(c.text), "data.csv")
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line containing %q", c.name, err, c.want)
		}
	}
	tb, err := ReadCSV(strings.NewReader("+1,.5,5.,-2.5e+2\n0,1E-3,-.25,+7e0\n"), "data.csv")
	if err != nil {
		t.Fatal(err)
	}
	if want := []float64{0.5, 5, -250, 0.001, -0.25, 7}; !slices.Equal(tb.Features, want) || !slices.Equal(tb.Labels, []float64{1, -1}) {
		t.Errorf("features %v labels %v, want %v and [1 -1]", tb.Features, tb.Labels, want)
	}
}

// The table's room stays within its value limit: with the limit lowered
// to 999 values, 333 rows of 3 values fill it exactly, and the labels' and
// features' capacities add up to at most 999 (append's growth rounded
// them up to 512 + 848 = 1360 before). And growing past the machine's
// memory (lowered to 100 kB) is one error naming the file and line before
// the allocation, not the runtime's out-of-memory crash.
func TestReadCSVRoomBounded(t *testing.T) {
	oldMax, oldMachine := maxCSVValues, machineBytes
	defer func() { maxCSVValues, machineBytes = oldMax, oldMachine }()
	maxCSVValues = 999
	machineBytes = func() float64 { return 0 } // unknown: no check
	text := strings.Repeat("1,0.5,2\n-1,0.25,3\n", 166) + "1,7,8\n"
	tb, err := ReadCSV(strings.NewReader(text), "data.csv")
	if err != nil {
		t.Fatal(err)
	}
	if tb.Len() != 333 || cap(tb.Labels)+cap(tb.Features) > 999 {
		t.Errorf("%d rows in room for %d labels and %d features, want 333 rows in at most 999 values", tb.Len(), cap(tb.Labels), cap(tb.Features))
	}
	if !slices.Equal(tb.Features[len(tb.Features)-4:], []float64{0.25, 3, 7, 8}) || tb.Labels[332] != 1 {
		t.Errorf("last rows %v, label %v: the rows were not kept in order", tb.Features[len(tb.Features)-4:], tb.Labels[332])
	}
	// 1024 rows of 3 values are 24576 bytes, with the next 2048 rows
	// 73728: above 50000 bytes, at row 1025.
	maxCSVValues = MaxCSVValues
	machineBytes = func() float64 { return 50000 }
	_, err = ReadCSV(strings.NewReader(strings.Repeat("1,0.5,2\n", 2000)), "big.csv")
	if want := "dataset: big.csv:1025: reading past 1024 rows of 3 values needs 7.37e-05 GB, more than this machine's 5e-05 GB of memory"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("err = %v, want one starting %q", err, want)
	}
}
