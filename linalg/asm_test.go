package linalg

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"
)

// The kernels with an assembly version, each as the package dispatches it
// (the assembly where the CPU has AVX2 and FMA, see dispatch_amd64_test.go)
// and as its Go fallback, are checked below against exact sums (big.Float)
// with the rounding bound of any order of summation, for every length up to
// 70 and a few long ones, slices at every offset 0..7 in a larger array
// with NaN before and after them (a read outside shows as NaN) and guard
// values around every destination (a write outside shows), aliased
// arguments, and NaN, +-Inf, -0, subnormal and overflowing entries.

// kernelSet is one implementation of every kernel.
type kernelSet struct {
	name         string
	dot          func(a, b []float64) float64
	dualDot      func(a, da, b, db []float64) (float64, float64)
	dualBlocks   func(a, da, b, db []float64, aStride, step, length int, out, dout []float64)
	dualRows4    func(a, da, b, db []float64, aStride, bStride, bStep, length, dlen int, out, dout []float64)
	dot32        func(a, b []float32) float64
	axpyDot32    func(alpha float64, x, y, z []float32) float64
	subDot4      func(x, h0, h1, h2, h3 []float64, p *[4]float64)
	update       func(h, x []float64, a, q float64)
	update4      func(h0, h1, h2, h3, x []float64, a, q *[4]float64)
	accScale4    func(out, f0, f1, f2, f3 []float64, p, a *[4]float64)
	fwdLanes     func(g2prev, h2 []float64, s, t *[nLanes]float64, p []float64)
	bwdLanes     func(g2, h2next []float64, s, u *[nLanes]float64, uout []float64)
	combineLanes func(p, u []float64, w *[nLanes]float64, out []float64)
	decayRow     func(w, g, a []float64, gr, ar float64)
	transformRow func(w, delta, za, zb, wy1, wy2, x []float64, c *[8]float64)
}

func kernelSets() []kernelSet {
	return []kernelSet{
		{"go", dotGo, dualDotGo, dualBlocksGo, dualRows4Go, dot32Go, axpyDot32Go, subDot4Go, updateGo, update4Go, accScale4Go, fwdLanesGo, bwdLanesGo, combineLanesGo, decayRowGo, transformRowGo},
		{"dispatched", dot, dualDotImpl, dualBlocksImpl, dualRows4Impl, dot32Impl, axpyDot32Impl, subDot4, update, update4, accScale4, fwdLanes, bwdLanes, combineLanes, decayRow, transformRow},
	}
}

// guardNaN fills the memory around the slices under test: a NaN with a
// payload no kernel produces.
var guardNaN = math.Float64frombits(0x7ff8_dead_beef_0001)

// inArray returns a copy of v at offset off of a larger array whose other
// entries are guardNaN (four after the end), and the array.
func inArray(v []float64, off int) (s, arr []float64) {
	arr = make([]float64, off+len(v)+4)
	for i := range arr {
		arr[i] = guardNaN
	}
	copy(arr[off:], v)
	return arr[off : off+len(v) : off+len(v)], arr
}

// inArray32 is inArray for float32.
func inArray32(v []float32, off int) (s, arr []float32) {
	arr = make([]float32, off+len(v)+8)
	for i := range arr {
		arr[i] = float32(guardNaN)
	}
	copy(arr[off:], v)
	return arr[off : off+len(v) : off+len(v)], arr
}

// checkGuards fails unless the entries of arr outside [off, off+n) are
// still guardNaN, bit for bit.
func checkGuards(t *testing.T, arr []float64, off, n int, msg string) {
	t.Helper()
	for i, v := range arr {
		if (i < off || i >= off+n) && math.Float64bits(v) != math.Float64bits(guardNaN) {
			t.Fatalf("%s: entry %d outside the destination [%d, %d) overwritten with %v", msg, i, off, off+n, v)
		}
	}
}

func checkGuards32(t *testing.T, arr []float32, off, n int, msg string) {
	t.Helper()
	for i, v := range arr {
		if (i < off || i >= off+n) && math.Float32bits(v) != math.Float32bits(float32(guardNaN)) {
			t.Fatalf("%s: entry %d outside the destination [%d, %d) overwritten with %v", msg, i, off, off+n, v)
		}
	}
}

// term is one product x y of a sum.
type term struct{ x, y float64 }

const unitRoundoff = 0x1p-53

// gamma is Higham's gamma_m = m u / (1 - m u).
func gamma(m int) float64 { return float64(m) * unitRoundoff / (1 - float64(m)*unitRoundoff) }

// checkSum fails unless got is a floating-point evaluation of sum x_i y_i
// over terms, in any order and with or without fused multiply-adds: NaN if
// a term is NaN, Inf times zero, or infinities of both signs are present;
// the infinity if only one sign is; otherwise, for finite entries, within
// gamma_{m+2} sum |x_i y_i| + (m+2) 2^-1074 of the exact sum (m the
// number of terms; the second part covers products that underflow), the
// bound of every summation order (Higham, Accuracy and Stability, 2nd ed.,
// section 3.1), computed exactly in big.Float. A non-finite result of
// finite entries is allowed only where sum |x_i y_i| overflows (a partial
// sum may then overflow too).
func checkSum(t *testing.T, got float64, terms []term, msg string) {
	t.Helper()
	var nan, posInf, negInf bool
	const prec = 2400 // exact for any sum of products of finite float64 values
	exact, abs := new(big.Float).SetPrec(prec), new(big.Float).SetPrec(prec)
	for _, tm := range terms {
		x, y := tm.x, tm.y
		switch {
		case math.IsNaN(x) || math.IsNaN(y):
			nan = true
		case math.IsInf(x, 0) || math.IsInf(y, 0):
			if x == 0 || y == 0 {
				nan = true
			} else if (x > 0) == (y > 0) {
				posInf = true
			} else {
				negInf = true
			}
		default:
			p := new(big.Float).SetPrec(prec).Mul(new(big.Float).SetPrec(prec).SetFloat64(x), new(big.Float).SetPrec(prec).SetFloat64(y))
			exact.Add(exact, p)
			abs.Add(abs, p.Abs(p))
		}
	}
	absF, _ := abs.Float64()
	overflows := math.IsInf(absF*(1+gamma(len(terms)+2)), 0)
	switch {
	case nan || (posInf && negInf):
		if !math.IsNaN(got) {
			t.Fatalf("%s: got %v, want NaN", msg, got)
		}
	case posInf || negInf:
		want := math.Inf(1)
		if negInf {
			want = math.Inf(-1)
		}
		if got != want && !(overflows && math.IsNaN(got)) {
			t.Fatalf("%s: got %v, want %v", msg, got, want)
		}
	case math.IsNaN(got) || math.IsInf(got, 0):
		if !overflows {
			t.Fatalf("%s: got %v for finite entries whose sum of |products| is %v", msg, got, absF)
		}
	default:
		m := len(terms) + 2
		bound := new(big.Float).SetPrec(prec).Mul(abs, new(big.Float).SetPrec(prec).SetFloat64(gamma(m)))
		bound.Add(bound, new(big.Float).SetPrec(prec).SetFloat64(float64(m)*0x1p-1074))
		diff := new(big.Float).SetPrec(prec).SetFloat64(got)
		diff.Sub(diff, exact).Abs(diff)
		if diff.Cmp(bound) > 0 {
			e, _ := exact.Float64()
			d, _ := diff.Float64()
			b, _ := bound.Float64()
			t.Fatalf("%s: got %v, exact %v: error %v above the bound %v", msg, got, e, d, b)
		}
	}
}

// testLengths are all the loop tails and a few long lengths.
func testLengths() []int { return append(seq(71), 127, 1000, 4099) }

// specialValues are the entries injected one at a time.
var specialValues = []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0, 0x1p-1074, -0x1p-1060, 0x1.fffffffffffffp+1023, -1e300}

// randomVec returns n entries: normal, or with probability 1/8 a value of
// specialValues when special is set.
func randomVec(rng *rand.Rand, n int, special bool) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = rng.NormFloat64()
		if special && rng.IntN(8) == 0 {
			v[i] = specialValues[rng.IntN(len(specialValues))]
		}
	}
	return v
}

func TestKernelDotExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, ks := range kernelSets() {
		for _, n := range testLengths() {
			for off := 0; off < 8; off++ {
				if n > 70 && off%3 != 0 {
					continue
				}
				special := off%2 == 1
				av, bv := randomVec(rng, n, special), randomVec(rng, n, special)
				a, _ := inArray(av, off)
				b, _ := inArray(bv, 7-off)
				terms := make([]term, n)
				for i := range terms {
					terms[i] = term{av[i], bv[i]}
				}
				msg := fmt.Sprintf("%s dot n=%d off=%d special=%v", ks.name, n, off, special)
				checkSum(t, ks.dot(a, b), terms, msg)
				// Aliased: the sum of squares.
				for i := range terms {
					terms[i] = term{av[i], av[i]}
				}
				checkSum(t, ks.dot(a, a), terms, msg+" aliased")
			}
		}
	}
}

// Every special value at every position of short vectors, for every
// length of the loop tails: NaN and the infinities propagate as IEEE 754
// says whatever lane they fall in.
func TestKernelDotSpecialEveryPosition(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	for _, ks := range kernelSets() {
		for n := 1; n <= 40; n++ {
			for pos := 0; pos < n; pos++ {
				for _, sv := range specialValues {
					av, bv := randomVec(rng, n, false), randomVec(rng, n, false)
					av[pos] = sv
					da, db := randomVec(rng, n, false), randomVec(rng, n, false)
					terms := make([]term, n)
					dterms := make([]term, 0, 2*n)
					for i := range terms {
						terms[i] = term{av[i], bv[i]}
						dterms = append(dterms, term{da[i], bv[i]}, term{av[i], db[i]})
					}
					msg := fmt.Sprintf("%s n=%d a[%d]=%v", ks.name, n, pos, sv)
					checkSum(t, ks.dot(av, bv), terms, "dot "+msg)
					s, ds := ks.dualDot(av, da, bv, db)
					checkSum(t, s, terms, "dualDot s "+msg)
					checkSum(t, ds, dterms, "dualDot ds "+msg)
				}
			}
		}
	}
}

func TestKernelDualDotExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	for _, ks := range kernelSets() {
		for _, n := range testLengths() {
			for off := 0; off < 8; off++ {
				if n > 70 && off%3 != 0 {
					continue
				}
				special := off%2 == 1
				vals := [4][]float64{}
				var sl [4][]float64
				for q := range vals {
					vals[q] = randomVec(rng, n, special)
					sl[q], _ = inArray(vals[q], (off+q)%8)
				}
				av, dav, bv, dbv := vals[0], vals[1], vals[2], vals[3]
				terms := make([]term, n)
				dterms := make([]term, 0, 2*n)
				for i := range terms {
					terms[i] = term{av[i], bv[i]}
					dterms = append(dterms, term{dav[i], bv[i]}, term{av[i], dbv[i]})
				}
				msg := fmt.Sprintf("%s dualDot n=%d off=%d special=%v", ks.name, n, off, special)
				s, ds := ks.dualDot(sl[0], sl[1], sl[2], sl[3])
				checkSum(t, s, terms, msg+" s")
				checkSum(t, ds, dterms, msg+" ds")
				// Aliased: a = b and da = db, the square and twice its derivative.
				for i := range terms {
					terms[i] = term{av[i], av[i]}
					dterms[2*i], dterms[2*i+1] = term{dav[i], av[i]}, term{av[i], dav[i]}
				}
				s, ds = ks.dualDot(sl[0], sl[1], sl[0], sl[1])
				checkSum(t, s, terms, msg+" aliased s")
				checkSum(t, ds, dterms, msg+" aliased ds")
			}
		}
	}
}

// dualBlocks and dualRows4 in the shapes of the band kernels, with NaN
// before and after every operand and guards around out and dout, and one
// special value injected: each output is checked against its own exact sum.
func TestKernelDualBlocksRowsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 28))
	for _, ks := range kernelSets() {
		for _, rows := range []int{1, 4, 5, 8, 11} {
			for _, step := range []int{0, 1, 4} {
				for length := (rows - 1) / 4 * step; length <= 9+(rows-1)/4*step; length++ {
					off := (rows + step + length) % 8
					special := length%2 == 1
					aStride := length + 2
					na := (rows-1)*aStride + length
					av, dav := randomVec(rng, na, special), randomVec(rng, na, special)
					bv, dbv := randomVec(rng, length, special), randomVec(rng, length, special)
					a, _ := inArray(av, off)
					da, _ := inArray(dav, 7-off)
					b, _ := inArray(bv, (off+3)%8)
					db, _ := inArray(dbv, (off+5)%8)
					out, outArr := inArray(make([]float64, rows), off)
					dout, doutArr := inArray(make([]float64, rows), 7-off)
					ks.dualBlocks(a, da, b, db, aStride, step, length, out, dout)
					msg := fmt.Sprintf("%s dualBlocks rows=%d step=%d length=%d off=%d", ks.name, rows, step, length, off)
					checkGuards(t, outArr, off, rows, msg+" out")
					checkGuards(t, doutArr, 7-off, rows, msg+" dout")
					for r := 0; r < rows; r++ {
						o := r / 4 * step
						var terms, dterms []term
						for u := o; u < length; u++ {
							x, dx := av[r*aStride+u], dav[r*aStride+u]
							terms = append(terms, term{x, bv[u]})
							dterms = append(dterms, term{dx, bv[u]}, term{x, dbv[u]})
						}
						checkSum(t, out[r], terms, fmt.Sprintf("%s row %d out", msg, r))
						checkSum(t, dout[r], dterms, fmt.Sprintf("%s row %d dout", msg, r))
					}
				}
			}
		}
		for _, rows := range []int{1, 2, 5} {
			for _, c := range []struct{ bStep, dlen int }{{0, 0}, {1, -1}, {3, 1}} {
				for length := max(0, -(rows-1)*c.dlen); length <= 9+max(0, -(rows-1)*c.dlen); length++ {
					off := (rows + c.bStep + length) % 8
					special := length%2 == 0
					maxLen := max(length, length+(rows-1)*c.dlen)
					aStride, bStride := maxLen+1, maxLen+3
					na := (rows-1)*aStride + maxLen
					nb := 3*bStride + (rows-1)*c.bStep + maxLen
					av, dav := randomVec(rng, na, special), randomVec(rng, na, special)
					bv, dbv := randomVec(rng, nb, special), randomVec(rng, nb, special)
					a, _ := inArray(av, off)
					da, _ := inArray(dav, 7-off)
					b, _ := inArray(bv, (off+3)%8)
					db, _ := inArray(dbv, (off+5)%8)
					out, outArr := inArray(make([]float64, 4*rows), off)
					dout, doutArr := inArray(make([]float64, 4*rows), 7-off)
					ks.dualRows4(a, da, b, db, aStride, bStride, c.bStep, length, c.dlen, out, dout)
					msg := fmt.Sprintf("%s dualRows4 rows=%d %+v length=%d off=%d", ks.name, rows, c, length, off)
					checkGuards(t, outArr, off, 4*rows, msg+" out")
					checkGuards(t, doutArr, 7-off, 4*rows, msg+" dout")
					for r := 0; r < rows; r++ {
						for s := 0; s < 4; s++ {
							var terms, dterms []term
							for u := 0; u < length+r*c.dlen; u++ {
								x, dx := av[r*aStride+u], dav[r*aStride+u]
								y, dy := bv[r*c.bStep+s*bStride+u], dbv[r*c.bStep+s*bStride+u]
								terms = append(terms, term{x, y})
								dterms = append(dterms, term{dx, y}, term{x, dy})
							}
							checkSum(t, out[4*r+s], terms, fmt.Sprintf("%s row %d vector %d out", msg, r, s))
							checkSum(t, dout[4*r+s], dterms, fmt.Sprintf("%s row %d vector %d dout", msg, r, s))
						}
					}
				}
			}
		}
	}
}

// float32 special values.
var specialValues32 = []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.Copysign(0, -1)), 0x1p-149, -0x1p-130, math.MaxFloat32, -1e38}

func randomVec32(rng *rand.Rand, n int, special bool) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
		if special && rng.IntN(8) == 0 {
			v[i] = specialValues32[rng.IntN(len(specialValues32))]
		}
	}
	return v
}

// roundTo32 is float32(y + alpha x) of the exact value, or NaN.
func exactAxpy32(alpha float64, x, y float32) float64 {
	v := new(big.Float).SetPrec(200).SetFloat64(alpha)
	if math.IsNaN(float64(x)) || math.IsNaN(float64(y)) || math.IsInf(alpha*float64(x)+float64(y), 0) || math.IsNaN(alpha*float64(x)+float64(y)) {
		return alpha*float64(x) + float64(y) // non-finite: IEEE 754 decides
	}
	v.Mul(v, new(big.Float).SetPrec(200).SetFloat64(float64(x)))
	v.Add(v, new(big.Float).SetPrec(200).SetFloat64(float64(y)))
	f, _ := v.Float64()
	return f
}

// Dot32 and AxpyDot32: the products of float32 entries are exact in
// float64, so the sums obey checkSum's bound; the update of y is the exact
// y + alpha x rounded to float32 after at most two roundings in float64
// (within 2^-24 (1 + 2^-28) of it, relative, or 2^-150 absolute below
// the normal range), and the inner product is that of z with the y
// written.
func TestKernelDot32Exact(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 30))
	for _, ks := range kernelSets() {
		for _, n := range testLengths() {
			for off := 0; off < 8; off++ {
				if n > 70 && off%3 != 0 {
					continue
				}
				special := off%2 == 1
				av, bv := randomVec32(rng, n, special), randomVec32(rng, n, special)
				a, _ := inArray32(av, off)
				b, _ := inArray32(bv, 7-off)
				terms := make([]term, n)
				for i := range terms {
					terms[i] = term{float64(av[i]), float64(bv[i])}
				}
				msg := fmt.Sprintf("%s n=%d off=%d special=%v", ks.name, n, off, special)
				checkSum(t, ks.dot32(a, b), terms, "dot32 "+msg)

				const alpha = -0.37
				yv, zv := randomVec32(rng, n, special), randomVec32(rng, n, special)
				y, yArr := inArray32(yv, (off+2)%8)
				z, _ := inArray32(zv, (off+4)%8)
				got := ks.axpyDot32(alpha, a, y, z)
				checkGuards32(t, yArr, (off+2)%8, n, "axpyDot32 y "+msg)
				for i := 0; i < n; i++ {
					want := exactAxpy32(alpha, av[i], yv[i])
					g := float64(y[i])
					switch {
					case math.IsNaN(want) || math.IsInf(want, 0):
						if !(math.IsNaN(want) && math.IsNaN(g)) && g != want {
							t.Fatalf("axpyDot32 %s: y[%d] = %v, want %v", msg, i, g, want)
						}
					case math.Abs(want) > math.MaxFloat32:
						if !math.IsInf(g, 0) && math.Abs(g) != math.MaxFloat32 {
							t.Fatalf("axpyDot32 %s: y[%d] = %v, want overflow of %v", msg, i, g, want)
						}
					case math.Abs(g-want) > 0x1p-24*(1+0x1p-28)*math.Abs(want)+0x1p-150:
						t.Fatalf("axpyDot32 %s: y[%d] = %v, want float32(%v)", msg, i, g, want)
					}
					terms[i] = term{float64(zv[i]), g}
				}
				checkSum(t, got, terms, "axpyDot32 sum "+msg)

				// Aliased: z = y (the sum of the squares of the new y) and
				// x = y (y scaled by 1 + alpha).
				yv = randomVec32(rng, n, special)
				y, _ = inArray32(yv, off)
				got = ks.axpyDot32(alpha, a, y, y)
				for i := 0; i < n; i++ {
					terms[i] = term{float64(y[i]), float64(y[i])}
				}
				checkSum(t, got, terms, "axpyDot32 z=y "+msg)
				yv = randomVec32(rng, n, special)
				y, _ = inArray32(yv, off)
				ks.axpyDot32(alpha, y, y, a)
				for i := 0; i < n; i++ {
					want, g := exactAxpy32(alpha, yv[i], yv[i]), float64(y[i])
					if math.IsNaN(want) != math.IsNaN(g) || (!math.IsNaN(g) && !math.IsInf(want, 0) && math.Abs(g-want) > 0x1p-24*(1+0x1p-28)*math.Abs(want)+0x1p-150) {
						t.Fatalf("axpyDot32 x=y %s: y[%d] = %v, want float32(%v)", msg, i, g, want)
					}
				}
			}
		}
	}
}

// subDot4, update and accScale4: each entry against its exact value
// (five, two, five and one products); update4: the bits of update, every length up to 70 and long ones, every offset, guards
// around the destination, special values, and aliased arguments.
func TestKernelSolveStepExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for _, ks := range kernelSets() {
		for _, n := range testLengths() {
			for off := 0; off < 8; off++ {
				if n > 70 && off%3 != 0 {
					continue
				}
				special := off%2 == 1
				var hv [4][]float64
				var h [4][]float64
				for q := range hv {
					hv[q] = randomVec(rng, n, special)
					h[q], _ = inArray(hv[q], (off+2*q+1)%8)
				}
				p := [4]float64{0.3, -1.2, 0.7, 2.1}
				if special {
					p[rng.IntN(4)] = specialValues[rng.IntN(len(specialValues))]
				}
				xv := randomVec(rng, n, special)
				x, xArr := inArray(xv, off)
				ks.subDot4(x, h[0], h[1], h[2], h[3], &p)
				msg := fmt.Sprintf("%s n=%d off=%d p=%v", ks.name, n, off, p)
				checkGuards(t, xArr, off, n, "subDot4 "+msg)
				for j := 0; j < n; j++ {
					terms := []term{{xv[j], 1}, {-p[0], hv[0][j]}, {-p[1], hv[1][j]}, {-p[2], hv[2][j]}, {-p[3], hv[3][j]}}
					checkSum(t, x[j], terms, fmt.Sprintf("subDot4 %s x[%d]", msg, j))
				}
				// Aliased: every h the same slice as x.
				x, _ = inArray(xv, off)
				ks.subDot4(x, x, x, x, x, &p)
				for j := 0; j < n; j++ {
					terms := []term{{xv[j], 1}, {-p[0], xv[j]}, {-p[1], xv[j]}, {-p[2], xv[j]}, {-p[3], xv[j]}}
					checkSum(t, x[j], terms, fmt.Sprintf("subDot4 aliased %s x[%d]", msg, j))
				}

				a, q := 0.9, -0.4
				if special {
					a = specialValues[rng.IntN(len(specialValues))]
				}
				as4 := [4]float64{a, 0.5, -1, 0.99}
				hu, hArr := inArray(hv[0], off)
				ks.update(hu, h[1], a, q)
				checkGuards(t, hArr, off, n, "update "+msg)
				for j := 0; j < n; j++ {
					checkSum(t, hu[j], []term{{a, hv[0][j]}, {q, hv[1][j]}}, fmt.Sprintf("update %s a=%v h[%d]", msg, a, j))
				}
				hu, _ = inArray(hv[0], off)
				ks.update(hu, hu, a, q)
				for j := 0; j < n; j++ {
					checkSum(t, hu[j], []term{{a, hv[0][j]}, {q, hv[0][j]}}, fmt.Sprintf("update aliased %s a=%v h[%d]", msg, a, j))
				}

				// update4: the bits of four updates (the same kernel set's).
				qs := [4]float64{-0.4, 1.5, 0.2, -2}
				var h4, h4Arr [4][]float64
				for r := range h4 {
					h4[r], h4Arr[r] = inArray(hv[r], (off+r+3)%8)
				}
				ks.update4(h4[0], h4[1], h4[2], h4[3], xv, &as4, &qs)
				for r := range h4 {
					checkGuards(t, h4Arr[r], (off+r+3)%8, n, fmt.Sprintf("update4 h%d %s", r, msg))
					one := slices.Clone(hv[r])
					ks.update(one, xv, as4[r], qs[r])
					for j := range one {
						if math.Float64bits(one[j]) != math.Float64bits(h4[r][j]) && !(math.IsNaN(one[j]) && math.IsNaN(h4[r][j])) {
							t.Fatalf("update4 %s: h%d[%d] = %v, update gives %v", msg, r, j, h4[r][j], one[j])
						}
					}
				}

				// accScale4: out gains the four products, and each f is
				// scaled by its a (one rounding: the exact product's
				// bound for one term).
				as := [4]float64{0.9, -0.5, 1, 0.25}
				if special {
					as[rng.IntN(4)] = specialValues[rng.IntN(len(specialValues))]
				}
				var fs [4][]float64
				var fArr [4][]float64
				for q := range fs {
					fs[q], fArr[q] = inArray(hv[q], (off+2*q+1)%8)
				}
				out, outArr := inArray(xv, off)
				ks.accScale4(out, fs[0], fs[1], fs[2], fs[3], &p, &as)
				checkGuards(t, outArr, off, n, "accScale4 "+msg)
				for q := range fs {
					checkGuards(t, fArr[q], (off+2*q+1)%8, n, fmt.Sprintf("accScale4 f%d %s", q, msg))
				}
				for j := 0; j < n; j++ {
					terms := []term{{xv[j], 1}, {p[0], hv[0][j]}, {p[1], hv[1][j]}, {p[2], hv[2][j]}, {p[3], hv[3][j]}}
					checkSum(t, out[j], terms, fmt.Sprintf("accScale4 %s out[%d]", msg, j))
					for q := range fs {
						checkSum(t, fs[q][j], []term{{as[q], hv[q][j]}}, fmt.Sprintf("accScale4 %s a=%v f%d[%d]", msg, as, q, j))
					}
				}
			}
		}
	}
}

// The sixteen-shift recurrences: the dispatched kernels give the same bits
// as the Go loops (the documented claim, NaN for NaN), for every length
// up to 20, at every offset, with guards around every destination,
// including the state arrays, and special values in the inputs.
func TestKernelLanesSameBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 34))
	sameBits := func(x, y float64) bool {
		return math.Float64bits(x) == math.Float64bits(y) || (math.IsNaN(x) && math.IsNaN(y))
	}
	state := func(v []float64, off int) (*[nLanes]float64, []float64) {
		s, arr := inArray(v, off)
		return (*[nLanes]float64)(s), arr
	}
	positive := func(n int, special bool) []float64 {
		v := randomVec(rng, n, special)
		for i := range v {
			if !special || rng.IntN(2) == 0 {
				v[i] = math.Abs(v[i]) + 0.1
			}
		}
		return v
	}
	ref, ks := kernelSets()[0], kernelSets()[1]
	for n := 0; n <= 20; n++ {
		for off := 0; off < 8; off++ {
			special := off%2 == 1
			g2v, h2v, sv, tv := positive(n, special), positive(n, special), positive(nLanes, special), positive(nLanes, special)
			g2, _ := inArray(g2v, off)
			h2, _ := inArray(h2v, 7-off)
			s, _ := state(sv, (off+1)%8)
			msg := fmt.Sprintf("n=%d off=%d special=%v", n, off, special)

			tw, _ := state(tv, 0)
			pw := make([]float64, n*nLanes)
			ref.fwdLanes(g2, h2, s, tw, pw)
			tg, tArr := state(tv, (off+2)%8)
			pg, pArr := inArray(make([]float64, n*nLanes), (off+3)%8)
			ks.fwdLanes(g2, h2, s, tg, pg)
			checkGuards(t, tArr, (off+2)%8, nLanes, "fwdLanes t "+msg)
			checkGuards(t, pArr, (off+3)%8, n*nLanes, "fwdLanes p "+msg)
			for i := range pw {
				if !sameBits(pw[i], pg[i]) {
					t.Fatalf("fwdLanes %s: p[%d] = %v, Go %v", msg, i, pg[i], pw[i])
				}
			}
			for l := range nLanes {
				if !sameBits(tw[l], tg[l]) {
					t.Fatalf("fwdLanes %s: t[%d] = %v, Go %v", msg, l, tg[l], tw[l])
				}
			}

			uw, _ := state(tv, 0)
			uoutW := make([]float64, n*nLanes)
			ref.bwdLanes(g2, h2, s, uw, uoutW)
			ug, uArr := state(tv, (off+4)%8)
			uoutG, uoutArr := inArray(make([]float64, n*nLanes), (off+5)%8)
			ks.bwdLanes(g2, h2, s, ug, uoutG)
			checkGuards(t, uArr, (off+4)%8, nLanes, "bwdLanes u "+msg)
			checkGuards(t, uoutArr, (off+5)%8, n*nLanes, "bwdLanes uout "+msg)
			for i := range uoutW {
				if !sameBits(uoutW[i], uoutG[i]) {
					t.Fatalf("bwdLanes %s: uout[%d] = %v, Go %v", msg, i, uoutG[i], uoutW[i])
				}
			}
			for l := range nLanes {
				if !sameBits(uw[l], ug[l]) {
					t.Fatalf("bwdLanes %s: u[%d] = %v, Go %v", msg, l, ug[l], uw[l])
				}
			}

			w, _ := state(positive(nLanes, special), (off+6)%8)
			pv, uv := positive(n*nLanes, special), positive(n*nLanes, special)
			pIn, _ := inArray(pv, off)
			uIn, _ := inArray(uv, 7-off)
			o0 := randomVec(rng, n, special)
			outW := append([]float64(nil), o0...)
			ref.combineLanes(pIn, uIn, w, outW)
			outG, outArr := inArray(o0, (off+7)%8)
			ks.combineLanes(pIn, uIn, w, outG)
			checkGuards(t, outArr, (off+7)%8, n, "combineLanes out "+msg)
			for i := range outW {
				if !sameBits(outW[i], outG[i]) {
					t.Fatalf("combineLanes %s: out[%d] = %v, Go %v", msg, i, outG[i], outW[i])
				}
			}
		}
	}
}
