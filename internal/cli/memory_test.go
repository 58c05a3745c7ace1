package cli

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFormatBytes(t *testing.T) {
	assert.Equal(t, "512 bytes", FormatBytes(512))
	assert.Equal(t, "1.9 TB", FormatBytes(1.92e12))
	assert.Equal(t, "22.9 GB", FormatBytes(22.9e9))
	// Beyond the largest unit: in exponent form, not "4800000000.0 EB".
	assert.Equal(t, "4.8e+09 EB", FormatBytes(4.8e27))
	assert.Equal(t, "999.9 EB", FormatBytes(999.9e18))
}

func TestShort(t *testing.T) {
	have1000 := func() (uint64, error) { return 1000, nil }
	failing := func() (uint64, error) { return 0, errors.New("no /proc") }
	for _, tc := range []struct {
		need  float64
		avail func() (uint64, error)
		have  float64
		short bool
	}{
		{999, have1000, 1000, false},
		{1000, have1000, 1000, false},
		{1001, have1000, 1000, true},
		{1e30, nil, 0, false},
		{1e30, failing, 0, false},
	} {
		if have, short := Short(tc.need, tc.avail); have != tc.have || short != tc.short {
			t.Errorf("Short(%g) = %g, %v; want %g, %v", tc.need, have, short, tc.have, tc.short)
		}
	}
}
