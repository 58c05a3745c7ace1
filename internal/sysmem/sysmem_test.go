package sysmem

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     Info
		err      bool
	}{
		{"current kernel", "MemTotal:       24684084 kB\nMemFree:        24192756 kB\nMemAvailable:   24349272 kB\nSwapTotal:       1048572 kB\n",
			Info{Total: 24684084 * 1024, Available: 24349272 * 1024, Swap: 1048572 * 1024}, false},
		{"old kernel, no swap line", "MemTotal:       1000 kB\nMemFree:        500 kB\n", Info{Total: 1000 * 1024}, false},
		{"garbage", "hello\nMemTotal: lots kB\n", Info{}, true},
		{"empty", "", Info{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(strings.NewReader(tc.in))
			if tc.err {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
