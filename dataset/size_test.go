package dataset

import (
	"math"
	"strings"
	"testing"
)

// TestTooLargeForPlatform checks that a data set whose slices an int
// cannot count is an error, not a panic: on a 32-bit platform a shape of
// at most 2^31 feature values but more than 2^28 values in all (2 GiB of
// float64) made makeslice panic (len out of range), in NewDataset and in
// Epochs. On a 64-bit platform those shapes are tens of GiB and are not
// allocated here: the limit is checked at its ends instead, 2^31 feature
// values accepted and one more refused, against the documented 2^31.
func TestTooLargeForPlatform(t *testing.T) {
	if math.MaxInt > 1<<40 {
		if tooLarge(1<<31, 1<<31) || !tooLarge(1<<31+1, 1) {
			t.Errorf("tooLarge: 2^31 feature values refused or 2^31+1 accepted, want the limit at 2^31")
		}
		return
	}
	for _, c := range [][4]int{
		{1 << 15, 1 << 16, 1, 1}, // 2^31 features: the old limit, exactly
		{1 << 13, 1 << 14, 1, 8}, // 2^30
		{1, 1, 1, 1<<31 - 1},     // one sample of the largest int dimension
		{1 << 14, 1 << 14, 1, 1}, // 2^28 features and 2^28 labels: 4 GiB
	} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("NewDataset%v panicked: %v", c, r)
				}
			}()
			_, err := NewDataset("x", c[0], c[1], c[2], c[3])
			if err == nil || !strings.Contains(err.Error(), "too large") {
				t.Errorf("NewDataset%v: %v, want a too-large error", c, err)
			}
		}()
	}
	d, err := NewDataset("x", 1<<10, 1<<8, 1, 32) // 2^23 features: 64 MiB
	if err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Errorf("Epochs(64) of 2^23 values panicked: %v", r)
			}
		}()
		if _, err := d.Epochs(64); err == nil || !strings.Contains(err.Error(), "too large") {
			t.Errorf("Epochs(64) of 2^23 values: %v, want a too-large error", err)
		}
	}()
}
