package factorize

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"
)

// fuzzBytes reads a fuzz input as a stream of choices; past its end every
// read is 0, so that every input decodes to something.
type fuzzBytes struct {
	b []byte
	i int
}

// huge is 2^40 where int has 64 bits, and the largest int on 32-bit
// platforms (the fuzz targets build there too).
const huge = int(min(uint64(math.MaxInt), 1<<40))

func (f *fuzzBytes) byte() byte {
	if f.i >= len(f.b) {
		return 0
	}
	f.i++
	return f.b[f.i-1]
}

// intn returns a number in [0, n).
func (f *fuzzBytes) intn(n int) int { return int(f.byte()) % n }

// hostileFloats are the values a fuzzed float is most often drawn from.
var hostileFloats = []float64{0, 1, -1, 0.5, 0.9, 0.999999, 2, -0.5, 1e300, 1e-300, 5e-324, -1e300, 1e-8, 1e8, 3,
	math.NaN(), math.Inf(1), math.Inf(-1), math.MaxFloat64, 1e154, 1e-154, 0.1}

// float returns one of hostileFloats, or (for a first byte past them) the
// float64 of the next 8 bytes.
func (f *fuzzBytes) float() float64 {
	k := int(f.byte())
	if k < len(hostileFloats) {
		return hostileFloats[k]
	}
	if k < 128 {
		return float64(k-len(hostileFloats)) / 16 // small exact values
	}
	var b [8]byte
	for i := range b {
		b[i] = f.byte()
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(b[:]))
}

// fuzzWorkload decodes a workload of 1..12 rounds: prefix sums, momentum,
// weighted prefix sums or a general matrix, with hostile entries. It
// returns the constructor's error, or the workload and a description.
func fuzzWorkload(in *fuzzBytes) (*Workload, string, error) {
	r := 1 + in.intn(12)
	switch in.intn(4) {
	case 0:
		w, err := Prefix(r)
		return w, fmt.Sprintf("Prefix(%d)", r), err
	case 1:
		beta := in.float()
		w, err := Momentum(r, beta)
		return w, fmt.Sprintf("Momentum(%d, %v)", r, beta), err
	case 2:
		ws := make([]float64, r)
		for i := range ws {
			ws[i] = in.float()
		}
		w, err := WeightedPrefix(ws)
		return w, fmt.Sprintf("WeightedPrefix(%v)", ws), err
	}
	a := mat.NewDense(r, r, nil)
	upper := in.intn(8) == 0 // sometimes a nonzero above the diagonal
	for i := 0; i < r; i++ {
		for j := 0; j <= i || (upper && j == i+1 && j < r); j++ {
			a.Set(i, j, in.float())
		}
	}
	w, err := NewWorkload(a)
	return w, fmt.Sprintf("NewWorkload(%v)", mat.Formatted(a, mat.FormatPython())), err
}

// fuzzStrategy decodes a registered strategy with some of its settings set
// from the bytes (hostile values included), and sometimes loss-only.
func fuzzStrategy(in *fuzzBytes, r int) (Strategy, string, error) {
	reg := Registry()
	info := reg[in.intn(len(reg))]
	s := info.proto
	desc := info.Name
	for _, set := range info.Settings {
		if in.intn(2) == 0 {
			continue
		}
		var v string
		switch set.Type {
		case "int":
			v = strconv.Itoa([]int{-1, 0, 1, 2, 3, r - 1, r, r + 1, huge, math.MaxInt, 64, 65, 5, 8}[in.intn(14)])
		case "float":
			v = strconv.FormatFloat(in.float(), 'g', -1, 64)
		default:
			words := append(strings.Split(set.Type, "|"), "", "bogus")
			v = words[in.intn(len(words))]
		}
		desc += fmt.Sprintf(" %s=%s", set.Name, v)
		var err error
		if s, err = WithSetting(s, set.Name, v); err != nil {
			return nil, desc, err
		}
	}
	if lo := in.intn(4); lo >= 2 && info.HasLossOnly() {
		on := lo == 3 // 2: factors formed (semiseparable's default is loss-only)
		desc += fmt.Sprintf(" loss-only=%v", on)
		var err error
		if s, err = WithLossOnly(s, on); err != nil {
			return nil, desc, err
		}
	}
	return s, desc, nil
}

// fuzzParticipation decodes a participation pattern, valid or not for r
// rounds.
func fuzzParticipation(in *fuzzBytes, r int) Participation {
	switch in.intn(3) {
	case 0:
		return SingleParticipation()
	case 1:
		return FixedEpochs([]int{1, 2, 3, 4, 0, -1, r, r + 1}[in.intn(8)])
	}
	return MinSeparation([]int{1, 2, 3, 5, r - 1, r, r + 1, 0, math.MaxInt}[in.intn(9)], []int{0, 1, 2, 3, -1, r}[in.intn(6)])
}

// checkOneLineError fails t unless err is a one-line error that names what
// was wrong: a *ParamError with its Param, a context error, or a
// "factorize: ..." error.
func checkOneLineError(t *testing.T, in string, err error) {
	t.Helper()
	msg := err.Error()
	if msg == "" || strings.ContainsAny(msg, "\n\r") {
		t.Fatalf("%s: error %q is not one line", in, msg)
	}
	var pe *ParamError
	switch {
	case errors.As(err, &pe):
		if pe.Param == "" {
			t.Fatalf("%s: *ParamError %q names no parameter", in, msg)
		}
	case errors.Is(err, context.DeadlineExceeded), strings.HasPrefix(msg, "factorize: "):
	default:
		t.Fatalf("%s: error %T %q is neither a *ParamError nor a factorize error", in, err, msg)
	}
}

// fuzzSets calls fn with every participation set of p over r <= 12
// rounds (as a bit mask): for epochs, the residue classes; for
// min-separation, every set with gaps of at least b and at most k
// members.
func fuzzSets(r int, p Participation, fn func(set []int)) {
	k := p.Participations(r)
	for mask := 1; mask < 1<<r; mask++ {
		var set []int
		for j := 0; j < r; j++ {
			if mask>>j&1 == 1 {
				set = append(set, j)
			}
		}
		ok := len(set) <= k
		switch p.Kind {
		case KindSingle:
			ok = len(set) == 1
		case KindEpochs:
			period := r / p.K
			ok = len(set) == p.K && set[0] < period
			for i := 1; ok && i < len(set); i++ {
				ok = set[i]-set[i-1] == period
			}
		case KindMinSep:
			for i := 1; ok && i < len(set); i++ {
				ok = set[i]-set[i-1] >= p.B
			}
		}
		if ok {
			fn(set)
		}
	}
}

// FuzzFactorize factorizes a small workload decoded from the fuzz bytes
// (prefix sums, momentum with any beta, weighted prefix sums with any
// weights, a general lower-triangular matrix with hostile entries) with a
// registered strategy whose settings come from the bytes, under a
// participation from the bytes. Whatever they are, the result is either a
// one-line error that names its input or a factorization with finite
// metrics that are right against values computed here from its dense
// factors:
//
//   - the loss of a square (causal) factorization is at least
//     sum_i A[i][i]^2 (|B[i][i]| = |A[i][i] / C[i][i]| >= |A[i][i]| /
//     sens), loss-only results included;
//   - B C = A entrywise within 1e-8 (|B| |C|)_ij (a backward-stable B = A
//     C^{-1} satisfies |BC - A| <= gamma_R |B| |C|, Higham Thm. 8.5; 1e-8
//     leaves room for the strategies' own recurrences), plus 1e-12 of the
//     row's largest (|B| |C|)_ij (the structured paths form row i of B
//     from row i of A, accurate normwise in the row: weights 1e-142 and 5
//     in one row), and 1e-8 of the largest (|B| |C|)_ij for a general
//     matrix whose inverse NewWorkload found banded (it drops the entries
//     below 1e-13 of the largest);
//   - gamma is C's largest column norm, and the sensitivity lies between
//     the brute-force bounds over every participation set S,
//     sqrt(sum_S X_ab) <= sens <= sqrt(sum_S |X_ab|), X = C^T C (equal to
//     the lower one when it is reported exact and X >= 0; the upper one
//     relaxed as MinSepBound's dynamic program relaxes it when that rule
//     gave it), and >= gamma;
//   - loss = sens^2 ||B||_F^2, RMSE = sqrt(loss / R) and MaxSE =
//     sens^2 max_r ||B[r, :]||^2 to a relative 1e-9;
//   - the operator streams M = A^{-1} B: for a test vector z, its output y
//     has A y = B z to a relative 1e-8 of (|A| |y| + |B| |z|).
//
// Each Factorize runs under a 5 s context deadline and must return within
// 20 s.
func FuzzFactorize(f *testing.F) {
	// Seeds: each kind of workload with a few strategies and patterns.
	f.Add([]byte{3, 0, 0, 0, 0})                                 // Prefix(4), identity, single
	f.Add([]byte{7, 0, 10, 0, 0})                                // Prefix(8), optimal
	f.Add([]byte{5, 1, 4, 1, 6, 1, 1})                           // Momentum(6, 0.9), optimal, epochs:2
	f.Add([]byte{5, 1, 1, 5})                                    // Momentum(6, 1), refused
	f.Add([]byte{3, 2, 1, 10, 9, 12, 4, 0, 2, 2, 0})             // WeightedPrefix(1, 1e300, 1e-300, 1e-8), banded bands=2, minsep
	f.Add([]byte{3, 2, 1, 0, 1, 1, 9})                           // a zero weight
	f.Add([]byte{2, 3, 1, 1, 1, 1, 9, 1, 8, 0})                  // a general 3 x 3 matrix, bsr
	f.Add([]byte{2, 3, 1, 1, 1, 15, 1, 1, 1})                    // NaN entry
	f.Add([]byte{3, 3, 1, 200, 1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 9}) // raw float entry
	f.Add([]byte{5, 0, 9, 1, 0, 2, 1, 1, 0})                     // blt with settings
	f.Add([]byte{5, 0, 1, 0, 0})                                 // tree
	f.Add([]byte{7, 0, 2, 0, 2, 2, 2})                           // sqrt under minsep
	f.Add([]byte{7, 0, 7, 1, 6, 0, 1, 3})                        // bisr bands=r
	f.Add([]byte{7, 0, 8, 1, 4, 0, 2, 1, 1})                     // bandinv
	f.Add([]byte{7, 0, 9, 1, 1, 0, 2, 0, 0, 0})                  // semiseparable, loss-only
	f.Add([]byte{5, 0, 10, 1, 3, 1, 1, 1, 2, 0, 0})              // optimal path=dense, max-iter
	f.Fuzz(fuzzFactorizeOne)
}

// fuzzFactorizeOne is FuzzFactorize's check of one input.
func fuzzFactorizeOne(t *testing.T, data []byte) {
	in := &fuzzBytes{b: data}
	w, wdesc, err := fuzzWorkload(in)
	if err != nil {
		t.Logf("%s: %v", wdesc, err)
		checkOneLineError(t, wdesc, err)
		return
	}
	s, sdesc, err := fuzzStrategy(in, w.R())
	desc := wdesc + " " + sdesc
	if err != nil {
		t.Logf("%s: %v", desc, err)
		checkOneLineError(t, desc, err)
		return
	}
	p := fuzzParticipation(in, w.R())
	desc += " " + p.String()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	type result struct {
		f   *Factorization
		err error
	}
	done := make(chan result, 1)
	go func() {
		fz, err := s.Factorize(ctx, w, p)
		done <- result{fz, err}
	}()
	var res result
	select {
	case res = <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: Factorize did not return 15 s after its context's deadline", desc)
	}
	t.Logf("%s: %v", desc, res.err)
	if res.err != nil {
		checkOneLineError(t, desc, res.err)
		return
	}
	if !IsLossOnly(s) {
		checkFuzzed(t, desc, w, p, res.f, false)
		return
	}
	// A loss-only result: its metrics against those of the same strategy
	// with its factors formed (a second computation), checked as above.
	checkFuzzed(t, desc, w, p, res.f, true)
	full, err := WithLossOnly(s, false)
	if err != nil {
		t.Fatalf("%s: WithLossOnly(false): %v", desc, err)
	}
	fz, err := full.Factorize(ctx, w, p)
	if err != nil {
		checkOneLineError(t, desc+" with factors", err)
		return
	}
	checkFuzzed(t, desc+" with factors", w, p, fz, false)
	// Both are within the certified gaps of the optimum where the solver
	// is iterative (the loss-only loss is the certified upper bound); the
	// loss-only gamma may be its bound 1 (fixed epochs) and MaxSE 0 (not
	// computed), as documented.
	lo, fm := res.f.Metrics, fz.Metrics
	tol := 1e-6 + 2*math.Max(res.f.Gap, fz.Gap)
	if !(lo.Gamma >= fm.Gamma*(1-1e-9)) {
		t.Fatalf("%s: loss-only gamma %v below the factors' %v", desc, lo.Gamma, fm.Gamma)
	}
	for _, q := range []struct {
		name     string
		lo, full float64
	}{{"sensitivity", lo.UnitSensitivity.Value, fm.UnitSensitivity.Value},
		{"||B||_F^2", lo.FrobBSq, fm.FrobBSq}, {"max_r ||B[r, :]||^2", lo.MaxRowBSq, fm.MaxRowBSq},
		{"loss", lo.Loss, fm.Loss}, {"MaxSE", lo.MaxSE, fm.MaxSE}} {
		if q.lo == 0 && strings.HasPrefix(q.name, "max") || q.name == "MaxSE" && q.lo == 0 {
			continue // not computed
		}
		if !(math.Abs(q.lo-q.full) <= tol*q.full) {
			t.Fatalf("%s: loss-only %s %v, with factors %v (gaps %v, %v)", desc, q.name, q.lo, q.full, res.f.Gap, fz.Gap)
		}
	}
}

// checkFuzzed checks fz against values computed here from its
// dense factors (see FuzzFactorize).
func checkFuzzed(t *testing.T, desc string, w *Workload, p Participation, fz *Factorization, lossOnly bool) {
	t.Helper()
	m := fz.Metrics
	if !FiniteMetrics(m) {
		t.Fatalf("%s: metrics not finite: %+v", desc, m)
	}
	if m.Participation != p {
		t.Fatalf("%s: metrics under %v, want %v", desc, m.Participation, p)
	}
	// |B[i][i]| = |A[i][i] / C[i][i]| >= |A[i][i]| / sens for a square
	// causal factorization, so its loss is at least sum_i A[i][i]^2.
	if fz.Strategy != StrategyTree {
		d := 0.0
		for i := 0; i < w.R(); i++ {
			d += w.Matrix().At(i, i) * w.Matrix().At(i, i)
		}
		if !(m.Loss >= d*(1-1e-6)) {
			t.Fatalf("%s: loss %v below sum_i A[i][i]^2 = %v", desc, m.Loss, d)
		}
	}
	if lossOnly {
		return // no factors to check against
	}
	b, c, err := fz.Factors()
	if err != nil {
		t.Fatalf("%s: Factors: %v", desc, err)
	}
	r := w.R()
	a := w.Matrix()
	br, bm := b.Dims()
	cm, cr := c.Dims()
	if br != r || cr != r || bm != cm {
		t.Fatalf("%s: B is %d x %d and C %d x %d for R = %d", desc, br, bm, cm, cr, r)
	}
	// B C = A, entrywise against |B| |C|; for a general matrix whose
	// inverse NewWorkload found banded (entries below 1e-13 of its largest
	// dropped), normwise: the factors are those of the banded inverse's A.
	prod, abs := mat.NewDense(r, r, nil), mat.NewDense(r, r, nil)
	floor := 1e-300
	for i := 0; i < r; i++ {
		for j := 0; j < r; j++ {
			for k := 0; k < bm; k++ {
				prod.Set(i, j, prod.At(i, j)+b.At(i, k)*c.At(k, j))
				abs.Set(i, j, abs.At(i, j)+math.Abs(b.At(i, k)*c.At(k, j)))
			}
		}
	}
	if _, banded := w.InverseBand(); banded && w.Name() == "matrix" {
		floor = 1e-8 * mat.Max(abs)
	}
	for i := 0; i < r; i++ {
		rowFloor := math.Max(floor, 1e-12*mat.Max(abs.RowView(i)))
		for j := 0; j < r; j++ {
			if d := math.Abs(prod.At(i, j) - a.At(i, j)); !(d <= 1e-8*abs.At(i, j)+rowFloor) {
				t.Fatalf("%s: (B C)[%d][%d] = %v, A = %v (|B||C| = %v)", desc, i, j, prod.At(i, j), a.At(i, j), abs.At(i, j))
			}
		}
	}
	// gamma and the sensitivity, against brute force over X = C^T C.
	gamma := 0.0
	for j := 0; j < r; j++ {
		s := 0.0
		for k := 0; k < cm; k++ {
			s += c.At(k, j) * c.At(k, j)
		}
		gamma = math.Max(gamma, math.Sqrt(s))
	}
	if !(math.Abs(m.Gamma-gamma) <= 1e-9*gamma) {
		t.Fatalf("%s: gamma %v, want the largest column norm %v", desc, m.Gamma, gamma)
	}
	x := make([][]float64, r)
	for i := range x {
		x[i] = make([]float64, r)
		for j := range x[i] {
			for k := 0; k < cm; k++ {
				x[i][j] += c.At(k, i) * c.At(k, j)
			}
		}
	}
	// lower^2 = max_S sum_S X_ab (every g_a the same unit vector), upper^2
	// = max_S sum_S |X_ab| (Cauchy-Schwarz), relaxed^2 = max_S sum_{a in
	// S} v_a with v_a = max_{S' containing a} sum_{b in S'} |X_ab| (the
	// relaxation MinSepBound's dynamic program computes).
	lower, upper, relaxed, signed := 0.0, 0.0, 0.0, false
	v := make([]float64, r)
	fuzzSets(r, p, func(set []int) {
		s, sa := 0.0, 0.0
		for _, i := range set {
			si := 0.0
			for _, j := range set {
				s += x[i][j]
				si += math.Abs(x[i][j])
				signed = signed || x[i][j] < 0
			}
			sa += si
			v[i] = math.Max(v[i], si)
		}
		lower, upper = math.Max(lower, s), math.Max(upper, sa)
	})
	fuzzSets(r, p, func(set []int) {
		s := 0.0
		for _, i := range set {
			s += v[i]
		}
		relaxed = math.Max(relaxed, s)
	})
	lower, upper, relaxed = math.Sqrt(lower), math.Sqrt(upper), math.Sqrt(relaxed)
	sens := m.UnitSensitivity.Value
	if m.UnitSensitivity.Rule == RuleMinSepBound {
		upper = relaxed
	}
	if !(sens >= lower*(1-1e-9)) || !(sens >= gamma*(1-1e-9)) || !(sens <= upper*(1+1e-9)) {
		t.Fatalf("%s: sensitivity %v outside the brute-force bounds [%v, %v] (gamma %v)", desc, m.UnitSensitivity, lower, upper, gamma)
	}
	if m.UnitSensitivity.Exact && !signed && !(sens <= lower*(1+1e-9)) {
		t.Fatalf("%s: exact sensitivity %v, brute force %v", desc, m.UnitSensitivity, lower)
	}
	// loss, RMSE and MaxSE from B, its squares summed scaled by its
	// largest entry (so that they neither underflow nor overflow).
	scale := 0.0
	for i := 0; i < r; i++ {
		for k := 0; k < bm; k++ {
			scale = math.Max(scale, math.Abs(b.At(i, k)))
		}
	}
	frob, maxRow := 0.0, 0.0
	for i := 0; i < r; i++ {
		s := 0.0
		for k := 0; k < bm; k++ {
			s += (b.At(i, k) / scale) * (b.At(i, k) / scale)
		}
		frob += s
		maxRow = math.Max(maxRow, s)
	}
	ss := sens * scale
	for _, q := range []struct {
		name      string
		got, want float64
	}{{"loss", m.Loss, ss * ss * frob}, {"RMSE", m.RMSE, ss * math.Sqrt(frob/float64(r))},
		{"MaxSE", m.MaxSE, ss * ss * maxRow}} {
		if !(math.Abs(q.got-q.want) <= 1e-9*q.want+1e-290) {
			t.Fatalf("%s: %s %v, want %v", desc, q.name, q.got, q.want)
		}
	}
	// The operator: A y = B z for its output y on noise rows z.
	op := fz.Operator
	if op == nil {
		t.Fatalf("%s: no operator", desc)
	}
	if op.Rounds() != r || op.NoiseRows() != bm {
		t.Fatalf("%s: operator %v of %d rounds and %d noise rows, want %d and %d", desc, op, op.Rounds(), op.NoiseRows(), r, bm)
	}
	z := testVector(bm)
	src := &vectorNoise{z: z}
	st := op.NewState(1)
	y := make([]float64, r)
	for i := range y {
		st.Prepare(i)
		st.Block(src, i, 0, y[i:i+1])
	}
	for i := 0; i < r; i++ {
		if math.IsNaN(y[i]) || math.IsInf(y[i], 0) {
			t.Fatalf("%s: operator %v: y[%d] = %v", desc, op, i, y[i])
		}
		ay, bz, scale := 0.0, 0.0, 0.0
		for j := 0; j <= i; j++ {
			ay += a.At(i, j) * y[j]
			scale += math.Abs(a.At(i, j) * y[j])
		}
		for k := 0; k < bm; k++ {
			bz += b.At(i, k) * z[k]
			scale += math.Abs(b.At(i, k) * z[k])
		}
		if d := math.Abs(ay - bz); !(d <= 1e-8*scale+1e-300) {
			t.Fatalf("%s: operator %v: (A y)[%d] = %v, (B z)[%d] = %v (scale %v)", desc, op, i, ay, i, bz, scale)
		}
	}
}
