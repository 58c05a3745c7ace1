package plan

import (
	"bytes"
	"math"
	"reflect"
	"testing"

	"github.com/dpmf/dpmf/factorize"
)

// Every strategy of the registry, calibrated at extreme but valid values
// (a budget and a clip near the ends of the float64 range, values whose
// shortest form has 17 significant digits, a subnormal step size), writes
// a plan that Parse reads back equal, field for field and bit for bit, and
// that writes the same bytes again: TestJSONRoundTrip checks one plan, this
// one each strategy's spec and record.
func TestRoundTripEveryStrategyExtremeValues(t *testing.T) {
	seventeen := 0.1 + 0.2 // 0.30000000000000004
	targets := []Target{
		{Eps: 1e-300, Delta: 1e-300},
		{Eps: 1e300, Delta: math.Nextafter(1, 0), Relation: "add-remove"},
		{Eps: seventeen, Delta: 1.0000000000000002e-5, Calibration: Paper},
	}
	for _, name := range factorize.Strategies() {
		for i, tg := range targets {
			tg := tg
			p := &Plan{Rounds: 8, Algorithm: AlgoCorrelated, Strategy: name, Learners: 3, Tau: 1,
				Clip: []float64{1e-300, 1e300, seventeen}[i], Eta: 5e-324, EtaG: math.MaxFloat64,
				Model: &Model{Name: "logistic", Features: 2, L2: math.SmallestNonzeroFloat64}, Target: &tg}
			if _, err := p.Build(t.Context()); err != nil {
				t.Errorf("%s, target %+v: %v", name, tg, err)
				continue
			}
			data, err := p.Marshal()
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			q, err := Parse(data)
			if err != nil {
				t.Errorf("%s, target %+v: the calibrated plan does not read back: %v", name, tg, err)
				continue
			}
			p.Format, p.Participation, p.Workload = Format, "single", WorkloadPrefix
			if !reflect.DeepEqual(p, q) {
				t.Errorf("%s: read back %+v %+v, want %+v %+v", name, q, q.Privacy, p, p.Privacy)
			}
			for _, v := range [][2]float64{{p.Privacy.NoiseStd, q.Privacy.NoiseStd}, {p.Privacy.Sigma, q.Privacy.Sigma},
				{p.Privacy.Loss, q.Privacy.Loss}, {p.Model.L2, q.Model.L2}, {p.Eta, q.Eta}} {
				if math.Float64bits(v[0]) != math.Float64bits(v[1]) {
					t.Errorf("%s: %v read back as %v", name, v[0], v[1])
				}
			}
			if again, err := q.Marshal(); err != nil || !bytes.Equal(again, data) {
				t.Errorf("%s: second encoding differs (%v):\n%s\n%s", name, err, data, again)
			}
		}
	}
}
