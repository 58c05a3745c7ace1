package main

import (
	"context"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dpmf/dpmf/factorize"
)

// momentumFrobSq is ||A||_F^2 of the R-round momentum workload with
// parameter beta, from its closed form: A[i][j] = sum_{k=0}^{i-j} beta^k,
// so the diagonal m = i - j (R - m entries) holds (1 - beta^{m+1}) /
// (1 - beta), summed here as the series itself (no division, exact for
// beta = 0). It is the loss of the identity factorization (C = I, B = A).
func momentumFrobSq(R int, beta float64) float64 {
	var total, a, p float64 = 0, 0, 1
	for m := 0; m < R; m++ {
		a += p // sum_{k<=m} beta^k
		p *= beta
		total += float64(R-m) * a * a
	}
	return total
}

// nonzeroText reports whether the number strconv.ParseFloat read from s
// has a nonzero digit in its mantissa (the part before the exponent: 'e'
// for decimal, 'p' for hexadecimal), that is, whether the number written
// is nonzero.
func nonzeroText(s string) bool {
	m := strings.ToLower(strings.TrimLeft(s, "+-"))
	digits, exp := "123456789", "e"
	if strings.HasPrefix(m, "0x") {
		m, digits, exp = m[2:], "123456789abcdef", "p"
	}
	if i := strings.Index(m, exp); i >= 0 {
		m = m[:i]
	}
	return strings.ContainsAny(m, digits)
}

// FuzzMomentumWorkload runs mfsolve in process with -workload
// momentum:BETA for arbitrary BETA text, on small problems (R <= 24,
// no cache), under the identity strategy or the optimal one (loss only).
// Whatever the text, it must not panic or hang; it refuses (exit 2, one
// "mfsolve: " line naming -workload) exactly the BETA that strconv does
// not read as a number in [0, 1), and the nonzero numbers it would round
// to 0; and a run that succeeds prints one JSON object whose loss under
// identity is ||A||_F^2 by the closed form, and under optimal lies between
// R (the least loss of any square causal factorization of a workload with
// a unit diagonal) and that. The cache key of the workload reads back
// (cache list's name for it) as momentum:BETA in the shortest form, which
// parses to the same bits. The seeds run in every plain go test.
func FuzzMomentumWorkload(f *testing.F) {
	for _, s := range []struct {
		r       uint8
		beta    string
		optimal bool
	}{
		{8, "0.9", false},
		{8, "0.9", true},
		{12, "0", true},
		{5, "-0", false},
		{3, "0x1p-1074", false},
		{16, "1e-400", false},
		{6, "0.99999999999999989", true},
		{6, "1", false},
		{4, "-0.5", false},
		{4, "NaN", false},
		{4, "inf", false},
		{4, " 0.5", false},
		{4, "0.5\n", false},
		{4, "1_0", false},
		{4, "", false},
		{24, "0.5", true},
	} {
		f.Add(s.r, s.beta, s.optimal)
	}
	f.Fuzz(func(t *testing.T, r uint8, beta string, optimal bool) {
		R := 1 + int(r)%24
		args := []string{"-workload", "momentum:" + beta, "-R", strconv.Itoa(R), "-strategy", "identity", "-no-cache", "-json"}
		if optimal {
			args[5] = "optimal"
			args = append(args, "-loss-only")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res := runIn(ctx, t.TempDir(), args...)
		if ctx.Err() != nil {
			t.Fatalf("%q: still running after 30 s (R <= 24)", args)
		}
		b, perr := strconv.ParseFloat(beta, 64)
		if perr == nil && b == 0 && nonzeroText(beta) {
			perr = strconv.ErrRange // nonzero, below the float64 range: refused, not read as 0
		}
		valid := perr == nil && b >= 0 && b < 1
		if res.code != 0 {
			if valid {
				t.Fatalf("%q: a valid beta %v refused: exit %d, stderr %q", args, b, res.code, res.stderr)
			}
			if res.code != 2 || res.stdout != "" || !strings.HasPrefix(res.stderr, "mfsolve: -workload ") || strings.Count(res.stderr, "\n") != 1 || !strings.HasSuffix(res.stderr, "\n") {
				t.Fatalf("%q: exit %d, stdout %q, stderr %q", args, res.code, res.stdout, res.stderr)
			}
			return
		}
		if !valid {
			t.Fatalf("%q: beta %q (%v, %v) accepted: %s", args, beta, b, perr, res.stdout)
		}
		var out struct {
			R    int     `json:"R"`
			Loss float64 `json:"loss"`
			Sens float64 `json:"unit_sensitivity"`
		}
		if err := json.Unmarshal([]byte(res.stdout), &out); err != nil || strings.Count(res.stdout, "\n") != 1 {
			t.Fatalf("%q: stdout %q: %v", args, res.stdout, err)
		}
		want := momentumFrobSq(R, b)
		switch {
		case out.R != R:
			t.Fatalf("%q: R %d", args, out.R)
		case !optimal && math.Abs(out.Loss-want) > 1e-12*want:
			t.Fatalf("%q: identity loss %v, want ||A||_F^2 = %v", args, out.Loss, want)
		case optimal && !(out.Loss >= float64(R)*(1-1e-12) && out.Loss <= want*(1+1e-9)):
			t.Fatalf("%q: optimal loss %v outside [R = %d, ||A||_F^2 = %v]", args, out.Loss, R, want)
		case out.Sens != 1:
			t.Fatalf("%q: unit sensitivity %v, want 1 (unit column norms, one participation)", args, out.Sens)
		}
		// The cache key of the workload, as cache list names it.
		w, err := factorize.Momentum(R, b)
		if err != nil {
			t.Fatalf("%q: accepted, but Momentum(%d, %v): %v", args, R, b, err)
		}
		name := workloadName(w.Key())
		got, ok := strings.CutPrefix(name, "momentum:")
		if b == 0 {
			if ok {
				t.Fatalf("%q: beta 0 keyed as %q, want the prefix workload's key", args, name)
			}
			return
		}
		if !ok || got != strconv.FormatFloat(b, 'g', -1, 64) {
			t.Fatalf("%q: key %q named %q, want momentum:%s", args, w.Key(), name, strconv.FormatFloat(b, 'g', -1, 64))
		}
		if back, err := strconv.ParseFloat(got, 64); err != nil || math.Float64bits(back) != math.Float64bits(b) {
			t.Fatalf("%q: name %q reads back as %v (%v), not %v", args, name, back, err, b)
		}
	})
}
