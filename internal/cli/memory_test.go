package cli

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFormatBytes(t *testing.T) {
	assert.Equal(t, "512 bytes", FormatBytes(512))
	assert.Equal(t, "1.9 TB", FormatBytes(1.92e12))
	assert.Equal(t, "22.9 GB", FormatBytes(22.9e9))
}

func TestParseMeminfo(t *testing.T) {
	tests := []struct {
		name, in string
		want     uint64
		err      bool
	}{
		{"available", "MemTotal:       24684084 kB\nMemFree:        24192756 kB\nMemAvailable:   24349272 kB\n", 24349272 * 1024, false},
		{"old kernel", "MemTotal:       1000 kB\nMemFree:        500 kB\n", 1000 * 1024, false},
		{"garbage", "hello\nMemAvailable: lots kB\n", 0, true},
		{"empty", "", 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseMeminfo(strings.NewReader(tc.in))
			if tc.err {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
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
