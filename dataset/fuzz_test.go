package dataset

import (
	"bytes"
	"encoding/csv"
	"math"
	"strconv"
	"strings"
	"testing"
)

// FuzzReadCSV reads arbitrary bytes as a CSV data file. A refused file
// gives one error, on one line, that names the file; an accepted one is a
// consistent table (Dim >= 1, Len rows of Dim finite features, labels +1 or
// -1) that survives a round trip: written back as CSV (header, labels and
// features with strconv's shortest exact form) and read again, it is the
// same table, bit for bit (a header name's \r\n read back as \n, as
// encoding/csv reads it). Standardize then leaves every feature finite.
func FuzzReadCSV(f *testing.F) {
	for _, s := range []string{
		"label,a,b\n1,2,3\n-1,0.5,-7e300\n",
		"\ufeff\"label\",\"x y\"\n0,1\n1,2\n",
		"1,2\n\n-1,3\n",
		"label,\"a\nb\"\n1,x\n",
		"1,2,3\n-1,\"2,3\n",
		"1,2\n0,3\n-1,4\n",
		"label, a ,\"b\"\"c\"\n1, 2 ,3\r\n",
	} {
		f.Add([]byte(s))
	}
	const name = "fuzz.csv"
	f.Fuzz(func(t *testing.T, data []byte) {
		tab, err := ReadCSV(bytes.NewReader(data), name)
		if err != nil {
			msg := err.Error()
			if !strings.HasPrefix(msg, "dataset: "+name) || strings.ContainsAny(msg, "\n\r") {
				t.Fatalf("error %q, want one line naming %s", msg, name)
			}
			return
		}
		n, d := tab.Len(), tab.Dim
		if n < 1 || d < 1 || len(tab.Features) != n*d || tab.Source != name || tab.Names != nil && len(tab.Names) != d {
			t.Fatalf("table of %d rows, dim %d, %d features, %d names, source %q", n, d, len(tab.Features), len(tab.Names), tab.Source)
		}
		for _, y := range tab.Labels {
			if y != 1 && y != -1 {
				t.Fatalf("label %v, want +1 or -1", y)
			}
		}
		for _, v := range tab.Features {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("feature %v, want finite", v)
			}
		}
		// Write the table back with encoding/csv and read it again.
		var buf bytes.Buffer
		w := csv.NewWriter(&buf)
		if tab.Names != nil {
			w.Write(append([]string{"label"}, tab.Names...))
		}
		rec := make([]string, d+1)
		for j := range n {
			rec[0] = strconv.FormatFloat(tab.Labels[j], 'g', -1, 64)
			for k := range d {
				rec[k+1] = strconv.FormatFloat(tab.Features[j*d+k], 'g', -1, 64)
			}
			w.Write(rec)
		}
		w.Flush()
		back, err := ReadCSV(&buf, name)
		if err != nil {
			t.Fatalf("the table read from %q, written back, is refused: %v", data, err)
		}
		same := back.Dim == d && back.Len() == n && len(back.Names) == len(tab.Names)
		for k := 0; same && k < len(tab.Names); k++ {
			// encoding/csv reads \r\n inside a quoted field as \n: a
			// name holding \r\n is written back as such and read as \n.
			same = back.Names[k] == strings.ReplaceAll(tab.Names[k], "\r\n", "\n")
		}
		for j := 0; same && j < n; j++ {
			same = back.Labels[j] == tab.Labels[j]
		}
		for k := 0; same && k < n*d; k++ {
			same = math.Float64bits(back.Features[k]) == math.Float64bits(tab.Features[k])
		}
		if !same {
			t.Fatalf("round trip of %q: %+v, read back as %+v", data, tab, back)
		}
		tab.Standardize()
		for _, v := range tab.Features {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("standardised feature %v, want finite", v)
			}
		}
	})
}
