package dataset

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

// The digest of a data set of one sample with features (1.5, -2) and label
// 1 is the SHA-256 of bytes written out by hand: the domain string, the
// shape (1, 1, 1, 2) and the three values' IEEE 754 bit patterns
// (0x3FF8000000000000, 0xC000000000000000, 0x3FF0000000000000), all
// little-endian. A larger one agrees with a change of any value, of the
// order of samples or of the shape, and not with a change of Name.
func TestSHA256(t *testing.T) {
	d, want := handDataset(t)
	if got := d.SHA256(); got != want {
		t.Errorf("SHA256 = %s, want %s (the bytes written out by hand)", got, want)
	}

	// More values than the 8 KiB buffer holds, so that it is flushed.
	base, err := Synthetic{Alpha: 0.1, Beta: 0.1, Dim: 30}.Dataset(3, 20, 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref := base.SHA256()
	renamed, _ := base.Epochs(1)
	renamed.Name = "another name"
	if renamed.SHA256() != ref {
		t.Error("the name changed the digest")
	}
	for _, c := range []struct {
		name string
		edit func(d *Dataset)
	}{
		{"last label", func(d *Dataset) { d.Labels[len(d.Labels)-1] *= -1 }},
		{"first feature", func(d *Dataset) { d.Features[0] += 1e-12 }},
		{"two samples swapped", func(d *Dataset) {
			a, la := d.Sample(0, 0, 0)
			b, lb := d.Sample(1, 0, 0)
			for k := range a {
				a[k], b[k] = b[k], a[k]
			}
			d.Labels[d.Index(0, 0, 0)], d.Labels[d.Index(1, 0, 0)] = lb, la
		}},
		{"shape (learners and tau swapped)", func(d *Dataset) { d.Learners, d.Tau = d.Tau, d.Learners }},
	} {
		e, _ := base.Epochs(1)
		c.edit(e)
		if e.SHA256() == ref {
			t.Errorf("%s: same digest", c.name)
		}
	}
}

// Every learner's stream reports its data set's digest, the bytes written
// out by hand above for the one-sample set: a stream tells which data set
// it deals from, not which learner's part it is.
func TestStreamDataSHA256(t *testing.T) {
	d, want := handDataset(t)
	if got := d.Stream(0).DataSHA256(); got != want {
		t.Errorf("DataSHA256 = %s, want %s (the bytes written out by hand)", got, want)
	}
	base, err := Synthetic{Alpha: 0.1, Beta: 0.1, Dim: 3}.Dataset(3, 2, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if got := base.Stream(i).DataSHA256(); got != base.SHA256() {
			t.Errorf("learner %d's stream reports %s, its data set's digest is %s", i, got, base.SHA256())
		}
	}
}

// handDataset returns the data set of one sample with features (1.5, -2)
// and label 1, and its digest from bytes written out by hand: the domain
// string, the shape (1, 1, 1, 2) and the three values' IEEE 754 bit
// patterns (0x3FF8000000000000, 0xC000000000000000, 0x3FF0000000000000),
// all little-endian.
func handDataset(t *testing.T) (*Dataset, string) {
	t.Helper()
	d, err := NewDataset("by hand", 1, 1, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	d.Features[0], d.Features[1], d.Labels[0] = 1.5, -2, 1
	hand := "dpmf dataset v1\x00" +
		"\x01\x00\x00\x00\x00\x00\x00\x00" + "\x01\x00\x00\x00\x00\x00\x00\x00" +
		"\x01\x00\x00\x00\x00\x00\x00\x00" + "\x02\x00\x00\x00\x00\x00\x00\x00" +
		"\x00\x00\x00\x00\x00\x00\xf8\x3f" + "\x00\x00\x00\x00\x00\x00\x00\xc0" +
		"\x00\x00\x00\x00\x00\x00\xf0\x3f"
	sum := sha256.Sum256([]byte(hand))
	return d, hex.EncodeToString(sum[:])
}
