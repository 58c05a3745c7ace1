package dataset

import "testing"

// TestStreamEpochs: a learner's stream reports how often its clients are
// dealt: once for a data set dealt once, k times Rounds apart after
// Epochs(k), and k1 k2 times after Epochs(k1) then Epochs(k2), whose
// sample of round r is, by the definition of Epochs, that of round r mod
// the first data set's Rounds.
func TestStreamEpochs(t *testing.T) {
	d, err := Synthetic{Alpha: 0.1, Beta: 0.1, Dim: 2}.Dataset(2, 3, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	e2, err := d.Epochs(2)
	if err != nil {
		t.Fatal(err)
	}
	e6, err := e2.Epochs(3)
	if err != nil {
		t.Fatal(err)
	}
	one, err := d.Epochs(1)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		d         *Dataset
		k, period int
	}{{"dealt once", d, 1, 3}, {"Epochs(1)", one, 1, 3}, {"Epochs(2)", e2, 2, 3}, {"Epochs(2).Epochs(3)", e6, 6, 3}} {
		k, period := c.d.Stream(1).Epochs()
		if k != c.k || period != c.period {
			t.Errorf("%s: Epochs() = %d, %d, want %d, %d", c.name, k, period, c.k, c.period)
		}
		// Round r's samples are those of round r mod period of d.
		for r := range c.d.Rounds {
			a, y := c.d.Sample(1, r, 0)
			b, z := d.Sample(1, r%c.period, 0)
			if y != z || a[0] != b[0] || a[1] != b[1] {
				t.Errorf("%s: round %d is not round %d of the data dealt once", c.name, r, r%c.period)
			}
		}
	}
}
