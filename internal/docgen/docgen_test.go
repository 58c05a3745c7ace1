package docgen

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseInts(t *testing.T) {
	got, err := ParseInts("sizes", "1000, 20,3")
	require.NoError(t, err)
	assert.Equal(t, []int{1000, 20, 3}, got)
	got, err = ParseInts("d", "1e6,2.5e1")
	require.NoError(t, err)
	assert.Equal(t, []int{1000000, 25}, got)
	for _, bad := range []string{"", "0", "1,-2", "x", "1,,2", "1.5", "1e300", "NaN", "Inf"} {
		_, err := ParseInts("sizes", bad)
		assert.ErrorContains(t, err, "-sizes", bad)
	}
}

// The section between the markers is replaced, the rest kept byte for
// byte with the file's mode; a file without the section is an error and
// stays as it was.
func TestSection(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "doc.md")
	require.NoError(t, os.WriteFile(path, []byte("head\n<!-- b -->\nold\n<!-- e -->\ntail\n"), 0o640))
	s := Section{Path: path, Begin: "<!-- b -->", End: "<!-- e -->"}
	require.NoError(t, s.Open())
	require.NoError(t, s.Replace([]byte("<!-- b -->\nnew\n")))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "head\n<!-- b -->\nnew\n<!-- e -->\ntail\n", string(got))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o640), fi.Mode().Perm())

	none := filepath.Join(dir, "none.md")
	require.NoError(t, os.WriteFile(none, []byte("no markers\n"), 0o644))
	s = Section{Path: none, Begin: "<!-- b -->", End: "<!-- e -->"}
	assert.ErrorContains(t, s.Open(), "no <!-- b --> ... <!-- e --> section")
	assert.Error(t, s.Replace([]byte("x")))
	got, _ = os.ReadFile(none)
	assert.Equal(t, "no markers\n", string(got))

	var b bytes.Buffer
	Notes(&b, nil)
	assert.Empty(t, b.String())
	Notes(&b, []string{"a: why"})
	assert.Equal(t, "\nn/a:\n\n- a: why\n", b.String())
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{7}, 7},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{10, 1, 1, 1, 10}, 1},
	} {
		orig := append([]float64(nil), tc.xs...)
		if got := Median(tc.xs); got != tc.want {
			t.Errorf("Median(%v) = %v, want %v", tc.xs, got, tc.want)
		}
		for i := range orig {
			if tc.xs[i] != orig[i] {
				t.Fatalf("Median modified its input: %v, was %v", tc.xs, orig)
			}
		}
	}
}
