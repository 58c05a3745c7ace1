package plan

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// A plan's data record reads back field for field and writes the same
// bytes again; a plan without one (as every plan before the record
// existed) has no "data" key and reads back with none; an unknown key
// inside the record, a key in other case, a record of no known source, a
// split where none belongs (or none where one does) and a digest that is
// not 64 lower-case hexadecimal digits are refused, each naming its field.
func TestDataRecord(t *testing.T) {
	digest := strings.Repeat("0123456789abcdef", 4)
	for _, d := range []*Data{
		{Source: "csv:breast_cancer.csv", Split: "feature:3", SHA256: digest},
		{Source: "synthetic:alpha=0.1,beta=0.1", SHA256: digest},
		nil,
	} {
		p := &Plan{Format: Format, Workload: WorkloadPrefix, Rounds: 4, Participation: "single", Algorithm: AlgoNonPrivate, Learners: 2, Tau: 1,
			Model: &Model{Name: "logistic", Features: 3, L2: 1e-4}, SeedSHA256: SeedDigest(1), Data: d}
		data, err := p.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if d == nil && bytes.Contains(data, []byte(`"data"`)) {
			t.Errorf("a plan without a data record writes %s", data)
		}
		q, err := Parse(data)
		if err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		if !reflect.DeepEqual(p, q) {
			t.Errorf("read back %+v (data %+v), want %+v (data %+v)", q, q.Data, p, p.Data)
		}
		if again, _ := q.Marshal(); !bytes.Equal(again, data) {
			t.Errorf("second encoding differs:\n%s\n%s", data, again)
		}
		if d == nil {
			continue
		}
		src := `"source":"` + d.Source + `"`
		for _, c := range []struct{ from, to, want string }{
			{src, src + `,"rows":3`, "unknown field"},
			{src, `"Source":"` + d.Source + `"`, `key "Source"`},
			{src, `"source":"file.csv"`, "data.source"},
			{src, `"source":"csv:"`, "data.source"},
			{`"sha256":"` + digest, `"sha256":"` + strings.ToUpper(digest), "data.sha256"},
			{`"sha256":"` + digest, `"sha256":"` + digest[1:], "data.sha256"},
		} {
			bad := strings.Replace(string(data), c.from, c.to, 1)
			if bad == string(data) {
				t.Fatalf("%s has no %s", data, c.from)
			}
			if _, err := Parse([]byte(bad)); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: %v, want an error with %q", bad, err, c.want)
			}
		}
		// A split added to synthetic data, or removed from a CSV file's.
		bad := strings.Replace(string(data), src, src+`,"split":"iid"`, 1)
		if d.Split != "" {
			bad = strings.Replace(string(data), `,"split":"`+d.Split+`"`, "", 1)
		}
		if _, err := Parse([]byte(bad)); err == nil || !strings.Contains(err.Error(), "data.split") {
			t.Errorf("%s: %v, want an error naming data.split", bad, err)
		}
	}
}
