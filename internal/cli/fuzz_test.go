package cli

import (
	"math"
	"strconv"
	"strings"
	"testing"
)

// zeroText reports whether s, which strconv.ParseFloat accepts, is the text
// of zero, by its own scan of the mantissa's digits (Go's float syntax:
// an optional sign, then decimal digits with an e exponent, or 0x and
// hexadecimal digits with a p exponent, underscores between digits; or
// inf, infinity, nan in any case). It does not use math/big, which
// ParseFloat relies on, so it checks that independently.
func zeroText(s string) bool {
	m := strings.ToLower(strings.TrimLeft(s, "+-"))
	if strings.HasPrefix(m, "inf") || m == "nan" {
		return false
	}
	digits, exp := "0123456789", byte('e')
	if strings.HasPrefix(m, "0x") {
		m, digits, exp = m[2:], "0123456789abcdef", 'p'
	}
	for i := 0; i < len(m) && m[i] != exp; i++ {
		if c := m[i]; c != '0' && strings.IndexByte(digits, c) >= 0 {
			return false
		}
	}
	return true
}

// FuzzParseFloat checks ParseFloat against strconv.ParseFloat and an
// independent scan of the digits: text strconv refuses is refused; text
// of a nonzero number that strconv rounds to 0 is refused as below the
// float64 range; text strconv reads out of range is refused; everything
// else is strconv's value bit for bit. The float64 flags of Parse
// (strictFloat) must agree with it. The seeds run in every plain go test.
func FuzzParseFloat(f *testing.F) {
	for _, s := range []string{"1", "0", "-0", "1e-400", "0x1p-2000", "1e-9999999999", "0.000e-99999999999",
		"0x0.8p-9999999999", "1e400", "inf", "-Infinity", "NaN", "0x_1p-1080", "1_0", "4.9e-324", "2e-324",
		"0e0", "0x0p0", "00000.0000001e-999999", ".e1", "1e", "0x", "+.5", "0X1P-1075", "0x.8p-1074"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseFloat(s)
		want, werr := strconv.ParseFloat(s, 64)
		var fv float64
		fs := NewFlagSet("fuzz")
		fs.Float64Var(&fv, "x", 7, "")
		ferr := Parse(fs, []string{"-x=" + s})
		switch {
		case werr != nil && strings.Contains(werr.Error(), "invalid syntax"):
			if err == nil || ferr == nil {
				t.Fatalf("%q: ParseFloat %v, %v and the flag %v; strconv refuses it (%v)", s, v, err, ferr, werr)
			}
		case werr != nil: // out of range
			if err == nil || err.Error() != "out of the float64 range" || ferr == nil {
				t.Fatalf("%q: ParseFloat %v, %v and the flag %v; want out of the float64 range (%v)", s, v, err, ferr, werr)
			}
		case want == 0 && !zeroText(s):
			if err == nil || err.Error() != "nonzero but below the float64 range" || ferr == nil {
				t.Fatalf("%q: ParseFloat %v, %v and the flag %v; want nonzero but below the float64 range", s, v, err, ferr)
			}
		default:
			if err != nil || math.Float64bits(v) != math.Float64bits(want) || ferr != nil || math.Float64bits(fv) != math.Float64bits(want) {
				t.Fatalf("%q: ParseFloat %v, %v and the flag %v, %v; want %v", s, v, err, fv, ferr, want)
			}
		}
	})
}
