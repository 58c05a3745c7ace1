package plan

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/factorize"
)

// TestOperatorDigestRecorded: Calibrate records the digest of its
// factorization, which reads back bit for bit through Marshal and Parse;
// a malformed digest is refused naming the field. The digest of the
// identity over R = 3 rounds is the SHA-256, computed here by hand, of the
// domain, the kind "form:independent" and the form's one size (R); a
// factorization with neither a structured operator nor factors has none.
func TestOperatorDigestRecorded(t *testing.T) {
	p := &Plan{Algorithm: AlgoCorrelated, Strategy: "identity", Rounds: 3, Learners: 2, Tau: 1, Clip: 1, Target: &Target{Eps: 1, Delta: 1e-5}}
	f, err := p.Build(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var b []byte
	b = append(b, "dpmf operator v1\x00"...)
	b = binary.LittleEndian.AppendUint64(b, uint64(len("form:independent")))
	b = append(b, "form:independent"...)
	for _, v := range []uint64{1, 3, 0} { // one size, R = 3, no coefficients
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	sum := sha256.Sum256(b)
	if want := hex.EncodeToString(sum[:]); p.Privacy.OperatorSHA256 != want {
		t.Errorf("identity R = 3: recorded digest %s, want %s", p.Privacy.OperatorSHA256, want)
	}
	if d, _ := OperatorDigest(f); d != p.Privacy.OperatorSHA256 {
		t.Errorf("OperatorDigest %s, recorded %s", d, p.Privacy.OperatorSHA256)
	}
	data, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	q, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if q.Privacy.OperatorSHA256 != p.Privacy.OperatorSHA256 {
		t.Errorf("read back digest %q, want %q", q.Privacy.OperatorSHA256, p.Privacy.OperatorSHA256)
	}
	bad := strings.Replace(string(data), p.Privacy.OperatorSHA256, strings.ToUpper(p.Privacy.OperatorSHA256), 1)
	if _, err := Parse([]byte(bad)); err == nil || !strings.Contains(err.Error(), "operator_sha256") {
		t.Errorf("an upper-case digest: error %v, want a refusal naming operator_sha256", err)
	}
	// The digest changes with a coefficient's last bit.
	w, _ := factorize.Prefix(4)
	bl, err := factorize.BLTStrategy{}.Factorize(context.Background(), w, factorize.SingleParticipation())
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := OperatorDigest(bl)
	op := bl.Operator.(*factorize.BLTParams)
	op.Weights[0] = math.Nextafter(op.Weights[0], math.Inf(1))
	if d2, _ := OperatorDigest(bl); d2 == d1 {
		t.Error("BLT weights one ulp apart: the same digest")
	}
	if _, err := OperatorDigest(&factorize.Factorization{Strategy: "loss-only", Workload: w}); err == nil {
		t.Error("a factorization without operator or factors has a digest")
	}
}

// formDigest is the SHA-256, in hexadecimal, of the bytes OperatorDigest's
// documentation gives for a structured form, computed over FormOf's copy
// of the form in one piece: the domain, the length and bytes of
// "form:"+kind, the number of sizes and each size, the number of
// coefficients and each one's bits, all little-endian 64-bit words.
func formDigest(form factorize.OperatorForm) string {
	word := func(b []byte, v uint64) []byte { return binary.LittleEndian.AppendUint64(b, v) }
	b := []byte("dpmf operator v1\x00")
	kind := "form:" + form.Kind
	b = append(word(b, uint64(len(kind))), kind...)
	b = word(b, uint64(len(form.Ints)))
	for _, v := range form.Ints {
		b = word(b, uint64(v))
	}
	b = word(b, uint64(len(form.Floats)))
	for _, v := range form.Floats {
		b = word(b, math.Float64bits(v))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// TestOperatorDigestOfFormCopy: for every strategy of the registry under
// single participation, two epochs and min-separation 3, on prefix sums
// and weighted prefix sums over R = 12 rounds (and the optimum's
// structured path), OperatorDigest, which hashes the coefficients a
// chunk at a time, equals the SHA-256 computed here over FormOf's copy of the
// form: the digest stored in run records is the one it was when it
// hashed that copy. Every strategy gives at least one form.
func TestOperatorDigestOfFormCopy(t *testing.T) {
	ctx := context.Background()
	const r = 12
	prefix, _ := factorize.Prefix(r)
	ws := make([]float64, r)
	for i := range ws {
		ws[i] = 1 + float64(i%3)
	}
	weighted, _ := factorize.WeightedPrefix(ws)
	names := append(factorize.Strategies(), "optimal:path=structured")
	for _, name := range names {
		s, err := factorize.ParseStrategy(name)
		if err != nil {
			t.Fatal(err)
		}
		forms := 0
		for _, w := range []*factorize.Workload{prefix, weighted} {
			for _, p := range []factorize.Participation{factorize.SingleParticipation(), factorize.FixedEpochs(2), factorize.MinSeparation(3, 0)} {
				f, err := s.Factorize(ctx, w, p)
				if err != nil {
					continue // not served
				}
				form, ok := factorize.FormOf(f.Operator)
				if !ok {
					continue
				}
				forms++
				got, err := OperatorDigest(f)
				if err != nil {
					t.Fatalf("%s under %v: %v", name, p, err)
				}
				if want := formDigest(form); got != want {
					t.Errorf("%s under %v (%s form, %d coefficients): digest %s, over FormOf's copy %s", name, p, form.Kind, len(form.Floats), got, want)
				}
			}
		}
		if forms == 0 {
			t.Errorf("%s: no structured form compared", name)
		}
	}
}

// TestOperatorDigestCopiesNothing: OperatorDigest of an operator with R =
// 20000 rounds of each kind with coefficients (semiseparable with 4
// buffers: 3 R K + R floats, 2.1 MB; banded with 8 bands; BLT; Toeplitz;
// banded inverse) allocates less than 64 KiB (its 8 KiB buffer,
// FormParts' 8 KiB chunk and a few small
// values), well below one copy of the coefficients, counted by
// runtime.MemStats' TotalAlloc around the call (no other goroutine of
// this test allocates meanwhile).
func TestOperatorDigestCopiesNothing(t *testing.T) {
	const r = 20000
	const bound = 64 << 10
	for _, form := range []factorize.OperatorForm{
		{Kind: "semiseparable", Ints: []int{r, 4}},
		{Kind: "banded", Ints: []int{r, 8}},
		{Kind: "blt", Ints: []int{r, 4}},
		{Kind: "toeplitz", Ints: []int{r}},
		{Kind: "banded-inverse", Ints: []int{r, 3}},
	} {
		n, err := form.FloatCount()
		if err != nil {
			t.Fatal(err)
		}
		form.Floats = make([]float64, n)
		for i := range form.Floats {
			form.Floats[i] = 1 + float64(i%7)/16 // finite and nonzero
		}
		if form.Kind == "blt" || form.Kind == "semiseparable" {
			for i := range form.Floats[:n-r] {
				form.Floats[i] /= 64 // small decays and weights
			}
		}
		op, err := form.Operator(r)
		if err != nil {
			t.Fatalf("%s: %v", form.Kind, err)
		}
		f := &factorize.Factorization{Strategy: form.Kind, Operator: op}
		if _, err := OperatorDigest(f); err != nil { // warm up
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		d, err := OperatorDigest(f)
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > bound {
			t.Errorf("%s over R = %d (%d coefficients, %d bytes): OperatorDigest allocated %d bytes, want at most %d", form.Kind, r, n, 8*n, alloc, bound)
		}
		if want := formDigest(form); d != want {
			t.Errorf("%s over R = %d: digest %s, over the form %s", form.Kind, r, d, want)
		}
	}
}

// TestOperatorDigestHandMadeBLT: BLT parameters assembled by hand whose
// slices disagree with their sizes (fewer decays than weights, or a scale
// of another length than the rounds) are hashed with the number of
// coefficients they hold, as the documented bytes over FormOf's copy
// say, although the sizes predict another count.
func TestOperatorDigestHandMadeBLT(t *testing.T) {
	for _, p := range []*factorize.BLTParams{
		{Weights: []float64{0.1, 0.2, 0.3}, Lambdas: []float64{0.5, 0.6}, Scale: []float64{1, 1, 1, 1}},
		{Weights: []float64{0.1}, Lambdas: []float64{0.5, 0.6, 0.7}, Scale: []float64{1, 2}},
		{Weights: []float64{0.1, 0.2}, Lambdas: []float64{0.5, 0.6}, Scale: []float64{1, 2, 3}},
	} {
		form, ok := factorize.FormOf(p)
		if !ok {
			t.Fatalf("%+v: no form", p)
		}
		got, err := OperatorDigest(&factorize.Factorization{Strategy: "blt", Operator: p})
		if err != nil {
			t.Fatal(err)
		}
		if want := formDigest(form); got != want {
			t.Errorf("%+v (%d coefficients): digest %s, over FormOf's copy %s", p, len(form.Floats), got, want)
		}
	}
}

// BenchmarkOperatorDigest measures OperatorDigest of a semiseparable
// form with R = 10^5 rounds and K = 16 buffers (4.9 M coefficients, 39
// MB), in bytes hashed per second.
func BenchmarkOperatorDigest(b *testing.B) {
	const r = 100000
	form := factorize.OperatorForm{Kind: "semiseparable", Ints: []int{r, 16}}
	n, err := form.FloatCount()
	if err != nil {
		b.Fatal(err)
	}
	form.Floats = make([]float64, n)
	for i := range form.Floats {
		form.Floats[i] = (1 + float64(i%7)/16) / 64 // finite, nonzero, small decays
	}
	op, err := form.Operator(r)
	if err != nil {
		b.Fatal(err)
	}
	f := &factorize.Factorization{Strategy: "semiseparable", Operator: op}
	b.SetBytes(int64(8 * n))
	for i := 0; i < b.N; i++ {
		if _, err := OperatorDigest(f); err != nil {
			b.Fatal(err)
		}
	}
}
