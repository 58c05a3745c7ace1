package audit

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzReportJSON reads arbitrary bytes as each of the audits' JSON types
// (ReplayReport, CanaryReport, Observer, MuEstimate), as a program reading
// dpaudit -json would. Whatever the bytes, reading must not panic, and an
// error is one line of at most 1 KiB; what is read writes again without
// error (numbers that JSON cannot hold as strings), reads back, and writes
// the very same bytes the second time (the writer and the reader agree on
// every field, non-finite numbers included). The seeds, and those in
// testdata/fuzz/FuzzReportJSON, run in every plain go test.
func FuzzReportJSON(f *testing.F) {
	for _, s := range []struct {
		kind uint8
		data string
	}{
		{0, `{"algorithm":"correlated","strategy":"optimal","participation":"single","learners":3,"rounds":4,"tau":2,"dim":5,"clip":1,"eps":"+Inf","delta":1e-3,"noise_std":0.25,"declared_sensitivity":0.5,"declared_rule":"column-norm","measured_distance":"NaN","ratio":"-Inf","expected_distance":0.375,"audited_learner":1,"audited_rounds":[0,2],"dropped":1,"audited_rounds_dropped":0,"network":true,"checks":[{"name":"sensitivity","ok":true,"detail":"d"}],"ok":true,"seconds":1.5}`},
		{1, `{"algorithm":"correlated","sensitivity":2,"mu_claimed":1,"canaries":4,"all_iterates":{"threat":"t","mu":{"mu_hat":"+Inf","mu_lo":-0,"mu_hi":3,"level":0.99,"score_std":"NaN"},"one_run":{"eps_lower_bound":0.5,"delta":1e-5,"confidence":0.95,"guesses":10,"correct":9},"scores":[1,-2],"in":[true,false],"weights":[1,0.5]},"violation":false,"seconds":2}`},
		{2, `{"threat":"t","mu_analytic":2,"eps_analytic":"+Inf","mu":{"mu_hat":1.25},"eps_of_mu_hat":1e308,"scores":null}`},
		{3, `{"mu_hat":"+Inf","mu_lo":"-Inf","mu_hi":"NaN","level":5e-324,"score_std":null}`},
		{3, `{"mu_hat":"Infinity"}`},
		{2, `{"mu":{"mu_lo":"+Inf"},"mu":{"mu_hi":1}}`},
	} {
		f.Add(s.kind, []byte(s.data))
	}
	f.Fuzz(func(t *testing.T, kind uint8, data []byte) {
		fresh := []func() any{
			func() any { return new(ReplayReport) },
			func() any { return new(CanaryReport) },
			func() any { return new(Observer) },
			func() any { return new(MuEstimate) },
		}[kind%4]
		v := fresh()
		if err := json.Unmarshal(data, v); err != nil {
			if msg := err.Error(); strings.ContainsAny(msg, "\n\r") || len(msg) > 1<<10 {
				t.Fatalf("%q: an error of %d bytes over %d lines: %.300q", data, len(msg), strings.Count(msg, "\n")+1, msg)
			}
			return
		}
		first, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%q read as %+v, which does not write: %v", data, v, err)
		}
		back := fresh()
		if err := json.Unmarshal(first, back); err != nil {
			t.Fatalf("%q written as %s, which does not read back: %v", data, first, err)
		}
		second, err := json.Marshal(back)
		if err != nil || !bytes.Equal(first, second) {
			t.Fatalf("%q written as %s, read back and written as %s (%v)", data, first, second, err)
		}
	})
}
