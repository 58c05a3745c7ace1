package main

import (
	"math/big"
	"strings"
	"testing"

	dpcache "github.com/dpmf/dpmf/cache"
)

// sizeOracle reads a cache budget with exact rational arithmetic, by its
// own scan: "unlimited", or digits with at most one '.', then optional
// spaces and a unit K, M, G or T (powers of 1024) optionally followed by B
// or iB, or B, any case, around optional spaces. It returns the exact
// number of bytes (nil for unlimited), whether it is in plain bytes (no
// unit, or B) and whether the text has that form.
func sizeOracle(s string) (size *big.Rat, bytes, ok bool) {
	v := strings.ToLower(strings.TrimSpace(s))
	if v == "unlimited" {
		return nil, false, true
	}
	i := 0
	for i < len(v) && (v[i] >= '0' && v[i] <= '9' || v[i] == '.') {
		i++
	}
	num, unit := v[:i], strings.TrimSpace(v[i:])
	if strings.Count(num, ".") > 1 || strings.Trim(num, ".") == "" {
		return nil, false, false
	}
	x, ok := new(big.Rat).SetString(num)
	if !ok {
		return nil, false, false
	}
	exp := map[string]uint{"": 0, "b": 0}
	for k, u := range []string{"k", "m", "g", "t"} {
		exp[u], exp[u+"b"], exp[u+"ib"] = uint(10*(k+1)), uint(10*(k+1)), uint(10*(k+1))
	}
	e, ok := exp[unit]
	if !ok {
		return nil, false, false
	}
	return x.Mul(x, new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), e))), e == 0, true
}

// FuzzParseSize checks the cache budget parser (-cache-budget and
// DPMF_CACHE_BUDGET) against sizeOracle: text of another form is refused;
// "unlimited" is dpcache.Unlimited; a plain number of bytes that is not
// whole, a nonzero size below one byte and a size above 2^62 bytes are
// refused; any other size is read within a relative 1e-15 of the exact
// value (the parser works in float64) and is 0 only for 0. The seeds run
// in every plain go test.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"500M", "2G", "1.5GiB", "0", "unlimited", " Unlimited ", "5x", "1.5", "0.0001K",
		"4194304T", "4194303.99T", "1e3", ".", "..5K", "1.K", ".5kb", "10 mib", "-1", "+1", "0.0000K", "9223372036854775807",
		"4611686018427387904", "4611686018427387905", "1 b", "7iB", "4503599627370497.5", "1.000"} {
		f.Add(s)
	}
	limit := new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), 62))
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseSize(s)
		want, bytes, ok := sizeOracle(s)
		switch {
		case !ok:
			if err == nil {
				t.Fatalf("parseSize(%q) = %d, want an error", s, got)
			}
			return
		case want == nil:
			if err != nil || got != dpcache.Unlimited {
				t.Fatalf("parseSize(%q) = %d, %v; want Unlimited", s, got, err)
			}
			return
		}
		refuse := want.Cmp(limit) > 0 || (want.Sign() > 0 && want.Cmp(big.NewRat(1, 1)) < 0)
		// Plain bytes must be a whole number, however small the fraction.
		if bytes && !want.IsInt() {
			refuse = true
		}
		if refuse {
			// Within float64 rounding of a bound, either answer is right.
			if err == nil && !near(want, limit) && !near(want, big.NewRat(1, 1)) {
				t.Fatalf("parseSize(%q) = %d, want an error (exact size %s)", s, got, want.FloatString(3))
			}
			return
		}
		if err != nil {
			if near(want, limit) {
				return
			}
			t.Fatalf("parseSize(%q): %v; want %s bytes", s, err, want.FloatString(3))
		}
		if (got == 0) != (want.Sign() == 0) || got < 0 {
			t.Fatalf("parseSize(%q) = %d, want %s", s, got, want.FloatString(3))
		}
		diff := new(big.Rat).Sub(new(big.Rat).SetInt64(got), want)
		if diff.Abs(diff).Cmp(new(big.Rat).Mul(want, big.NewRat(1, 1e15))) > 0 && diff.Cmp(big.NewRat(1, 1)) >= 0 {
			t.Fatalf("parseSize(%q) = %d, want %s", s, got, want.FloatString(3))
		}
	})
}

// near reports whether x is within a relative 1e-15 of y.
func near(x, y *big.Rat) bool {
	d := new(big.Rat).Sub(x, y)
	return d.Abs(d).Cmp(new(big.Rat).Mul(y, big.NewRat(1, 1e15))) <= 0
}
