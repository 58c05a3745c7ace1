package main

import (
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/dpmf/dpmf/dataset"
	"github.com/dpmf/dpmf/plan"
)

// dataRecord returns what a run's plan records of the data set ds that
// c's data flags gave: the source as given (synthetic with its
// parameters, or a CSV file's base name and the split) and ds's SHA-256.
func dataRecord(c config, ds *dataset.Dataset) *plan.Data {
	d := dataSource(c)
	d.SHA256 = ds.SHA256()
	return d
}

// dataSource returns the record of c's data flags without a digest: the
// source as given and, for a CSV file, the split.
func dataSource(c config) *plan.Data {
	d := &plan.Data{}
	if c.data.file == "" {
		g := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
		d.Source = "synthetic:alpha=" + g(c.data.alpha) + ",beta=" + g(c.data.beta)
	} else {
		d.Source, d.Split = "csv:"+filepath.Base(c.data.file), c.split.String()
	}
	return d
}

// describeData words a data record for a message: "SOURCE, split S,
// SHA-256 H" (no split for synthetic data).
func describeData(d *plan.Data) string {
	split := ""
	if d.Split != "" {
		split = ", split " + d.Split
	}
	return fmt.Sprintf("%s%s, SHA-256 %s", d.Source, split, d.SHA256)
}

// sameData reports whether two data records (either may be nil: none)
// are equal.
func sameData(a, b *plan.Data) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}

// dataFlags returns c's data flags as given: "-data X", and " -split S"
// for a CSV file.
func dataFlags(c config) string {
	if c.data.file == "" {
		return "-data " + c.raw.data
	}
	return "-data " + c.raw.data + " -split " + c.split.String()
}
