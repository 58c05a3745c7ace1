package factorize

import (
	"fmt"
	"iter"
	"math"
	"math/bits"
	"slices"

	"github.com/dpmf/dpmf/linalg"
	"gonum.org/v1/gonum/mat"
)

// OperatorForm is the structured form of an [Operator], for storage (the
// cache): a kind, a few integers and the coefficients, stored bit for bit,
// so that an operator read back streams the same noise as the one
// written. The dense operator has no form: it is rebuilt from the factors.
type OperatorForm struct {
	// Kind is "independent", "tree", "banded", "blt", "banded-inverse",
	// "semiseparable" or "toeplitz".
	Kind string `json:"kind"`
	// Ints are the sizes: R, and the bands, buffers or order where the
	// kind has one.
	Ints []int `json:"ints"`
	// Floats are the coefficients, in an order fixed by the kind.
	Floats []float64 `json:"-"`
}

// FormOf returns the structured form of op, and false for the dense
// operator (and operators of other packages, and nil BLT parameters),
// which have none. Its
// Floats are a copy of the coefficients in one piece ([FormParts] yields
// them a chunk at a time).
func FormOf(op Operator) (OperatorForm, bool) {
	kind, ints, parts, ok := ownParts(op)
	if !ok {
		return OperatorForm{}, false
	}
	n := 0
	for p := range parts {
		n += len(p)
	}
	var fl []float64 // nil for a form without coefficients
	if n > 0 {
		fl = make([]float64, 0, n)
		for p := range parts {
			fl = append(fl, p...)
		}
	}
	return OperatorForm{Kind: kind, Ints: ints, Floats: fl}, true
}

// formChunk is the most coefficients [FormParts] yields at once (8 KiB).
const formChunk = 1024

// FormParts returns the structured form of op as [FormOf] does, but
// without a copy of all its coefficients at once: the kind, the sizes,
// and parts, which yields the coefficients in order, copied a chunk of
// at most 1024 at a time into one buffer of its own; their concatenation
// is FormOf's Floats. A caller that writes to a yielded slice changes no
// operator (op's coefficients, which its noise and its recorded digest
// rest on, are never handed out); a yielded slice is overwritten by the
// next one, so keep a copy, not the slice. It returns false for an
// operator without a form.
func FormParts(op Operator) (kind string, ints []int, parts iter.Seq[[]float64], ok bool) {
	kind, ints, own, ok := ownParts(op)
	if !ok {
		return "", nil, nil, false
	}
	return kind, ints, func(yield func([]float64) bool) {
		var buf []float64
		for p := range own {
			for len(p) > 0 {
				if buf == nil {
					buf = make([]float64, formChunk)
				}
				n := copy(buf, p)
				p = p[n:]
				if !yield(buf[:n]) {
					return
				}
			}
		}
	}, true
}

// ownParts is FormParts yielding op's own coefficient slices, which its
// callers in this package neither modify nor keep.
func ownParts(op Operator) (kind string, ints []int, parts iter.Seq[[]float64], ok bool) {
	seq := func(s ...[]float64) iter.Seq[[]float64] {
		return func(yield func([]float64) bool) {
			for _, p := range s {
				if !yield(p) {
					return
				}
			}
		}
	}
	switch o := op.(type) {
	case identityOp:
		return "independent", []int{o.r}, seq(), true
	case treeOp:
		return "tree", []int{o.r}, seq(), true
	case bandedOp:
		// diag, then each row's sub
		return "banded", []int{len(o.diag), o.bands}, func(yield func([]float64) bool) {
			if !yield(o.diag) {
				return
			}
			for _, p := range o.sub {
				if !yield(p) {
					return
				}
			}
		}, true
	case *BLTParams:
		if o == nil {
			break // parameters assembled by hand, and missing: no form
		}
		return "blt", []int{len(o.Scale), len(o.Weights)}, seq(o.Weights, o.Lambdas, o.Scale), true
	case bandInverseOp:
		return "banded-inverse", []int{o.r, len(o.u)}, seq(o.u), true
	case quasiSepOp:
		c := o.c
		return "semiseparable", []int{c.N, c.K}, seq(c.P, c.A, c.Q, c.Diag), true
	case toeplitzOp:
		return "toeplitz", []int{len(o.s)}, seq(o.u, o.s), true
	}
	return "", nil, nil, false
}

// HasForm reports whether op has a structured form, as [FormOf] does,
// without building it: [FormParts]'s answer, which copies nothing until
// its parts are read (FormOf copies the coefficients: 3 R K + R floats
// for the optimum's quasiseparable operator, 137 MB at R = 10^5).
func HasForm(op Operator) bool {
	_, _, _, ok := ownParts(op)
	return ok
}

// FloatCount returns the number of coefficients a form of this kind and
// these sizes has, and an error for an unknown kind or sizes out of range
// (R from 1 to 2^30, from 1 to R bands, from 1 to [MaxSemisepBuffers]^2
// buffers or order, no buffers for a one-round BLT): a reader checks it
// before reading the coefficients.
func (f OperatorForm) FloatCount() (int, error) {
	bad := fmt.Errorf("factorize: operator form %q with sizes %v", f.Kind, f.Ints)
	// The number of sizes: R, and the bands, buffers or order.
	n := map[string]int{"independent": 1, "tree": 1, "toeplitz": 1, "banded": 2, "blt": 2, "banded-inverse": 2, "semiseparable": 2}[f.Kind]
	if n == 0 || len(f.Ints) != n || f.Ints[0] < 1 || f.Ints[0] > 1<<30 {
		return 0, bad
	}
	r, k := f.Ints[0], 0
	if n == 2 {
		k = f.Ints[1]
		least, limit := 1, r // bands
		if f.Kind == "blt" || f.Kind == "semiseparable" {
			limit = MaxSemisepBuffers * MaxSemisepBuffers
		}
		if f.Kind == "blt" && r == 1 {
			least = 0 // BLT fits at most R-1 buffers
		}
		if k < least || k > limit {
			return 0, bad
		}
	}
	switch f.Kind {
	case "banded":
		// diag plus sum_i min(b-1, i).
		s := r
		for i := 0; i < r; i++ {
			s += min(k-1, i)
		}
		return s, nil
	case "blt":
		return 2*k + r, nil
	case "banded-inverse":
		return k, nil
	case "semiseparable":
		return 3*r*k + r, nil
	case "toeplitz":
		return 2 * r, nil
	}
	return 0, nil
}

// Operator returns the operator of the form for a workload of R rounds.
// Coefficients must be finite, and the number of coefficients that of
// [OperatorForm.FloatCount]; C's diagonal (banded, semiseparable) and the
// scales must be nonzero. The operator keeps f.Floats, not a copy (at
// R = 10^6 the optimum's are 1.4 GB): the caller must not modify them
// afterwards, or the operator streams other noise than the one its record
// names (a mechanism already made by mechanism.New is not affected: it
// streams its own copy).
func (f OperatorForm) Operator(rounds int) (Operator, error) {
	n, err := f.FloatCount()
	if err != nil {
		return nil, err
	}
	if len(f.Floats) != n {
		return nil, fmt.Errorf("factorize: operator form %q with %d coefficients, want %d", f.Kind, len(f.Floats), n)
	}
	if f.Ints[0] != rounds {
		return nil, fmt.Errorf("factorize: operator form %q for %d rounds, want %d", f.Kind, f.Ints[0], rounds)
	}
	for _, v := range f.Floats {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("factorize: operator form %q with a coefficient %v", f.Kind, v)
		}
	}
	nonzero := func(name string, v []float64) error {
		if i := slices.Index(v, 0); i >= 0 {
			return fmt.Errorf("factorize: operator form %q with %s[%d] = 0", f.Kind, name, i)
		}
		return nil
	}
	r, fl := rounds, f.Floats
	switch f.Kind {
	case "independent":
		return identityOp{r}, nil
	case "tree":
		return newTreeOp(r), nil
	case "banded":
		b := f.Ints[1]
		o := bandedOp{bands: b, diag: fl[:r], sub: make([][]float64, r)}
		off := r
		for i := range o.sub {
			o.sub[i] = fl[off : off+min(b-1, i)]
			off += min(b-1, i)
		}
		return o, nonzero("diagonal", o.diag)
	case "blt":
		k := f.Ints[1]
		p := &BLTParams{Weights: fl[:k], Lambdas: fl[k : 2*k], Scale: fl[2*k:]}
		return p, nonzero("scale", p.Scale)
	case "banded-inverse":
		return bandInverseOp{u: fl, r: r}, nonzero("coefficient", fl[:1]) // C^{-1} = T_u
	case "semiseparable":
		k := r * f.Ints[1]
		c := linalg.QuasiSep{N: r, K: f.Ints[1], P: fl[:k], A: fl[k : 2*k], Q: fl[2*k : 3*k], Diag: fl[3*k:]}
		return quasiSepOp{c}, nonzero("diagonal", c.Diag)
	case "toeplitz":
		return toeplitzOp{u: fl[:r], s: fl[r:]}, nonzero("diagonal", fl[r:])
	}
	return nil, fmt.Errorf("factorize: unknown operator form %q", f.Kind)
}

// gammaSqOf returns the largest squared column norm of the C that the
// structured operator op streams (gamma^2, the sensitivity under single
// participation), computed from op's coefficients alone, so that a stored
// result without factors can be checked against its operator; false for
// an operator without a form, and for a Toeplitz operator whose
// coefficients are not those of the square root's inverse (see
// [toeplitzOfOp]). A quasiseparable operator is checked by its own metrics.
func gammaSqOf(op Operator) (float64, bool) {
	switch o := op.(type) {
	case identityOp:
		return 1, true
	case treeOp:
		// Column 0 lies in [0, 2^l) for every 2^l <= R, and every other
		// column in at most as many nodes.
		return float64(bits.Len(uint(o.r))), true
	case bandedOp:
		return slices.Max(bandedColSq(o)), true
	case bandInverseOp:
		if o.u[0] == 0 {
			return math.Inf(1), true
		}
	}
	if st, ok := toeplitzOfOp(op); ok {
		return slices.Max(st.colSq()), true
	}
	return 0, false
}

// bandedColSq returns the squared column norms of the banded C that o
// streams.
func bandedColSq(o bandedOp) []float64 {
	colSq := make([]float64, len(o.diag))
	for j := range colSq {
		colSq[j] = o.diag[j] * o.diag[j]
		for d := 0; j+d+1 < len(o.diag) && d < len(o.sub[j+d+1]); d++ {
			colSq[j] += o.sub[j+d+1][d] * o.sub[j+d+1][d]
		}
	}
	return colSq
}

// toeplitzOfOp returns C = T_c diag(1/scale) of a Toeplitz-type operator
// from its coefficients: the banded inverse (C = T_c, c the series of
// 1/u(x)), the BLT (c its impulse response, [bltInverse]), a banded C of
// that form (bsr) and the Toeplitz operator when its coefficients are the
// square root's inverse (the only Toeplitz operator stored without
// factors: for another, T_u^{-1} costs O(R^2)); false otherwise.
func toeplitzOfOp(op Operator) (*scaledToeplitz, bool) {
	switch o := op.(type) {
	case bandedOp:
		// c from C's first column, scale_j = C[0][0] / C[j][j], if every
		// C[i][j] is c_{i-j} / scale_j to a relative 1e-12.
		r := len(o.diag)
		c := make([]float64, r)
		c[0] = o.diag[0]
		for k := 1; k < min(o.bands, r); k++ {
			c[k] = o.sub[k][k-1]
		}
		scale := make([]float64, r)
		for j, v := range o.diag {
			scale[j] = o.diag[0] / v
		}
		for i, row := range o.sub {
			for d, v := range row {
				j := i - d - 1
				if want := c[d+1] / scale[j]; !(math.Abs(v-want) <= 1e-12*math.Abs(o.diag[j])) {
					return nil, false
				}
			}
		}
		return &scaledToeplitz{c: c, scale: scale}, true
	case bandInverseOp:
		if o.u[0] == 0 {
			return nil, false
		}
		return &scaledToeplitz{c: linalg.SeriesInverse(o.u, o.r), scale: ones(o.r)}, true
	case *BLTParams:
		return &scaledToeplitz{c: bltInverse(o, len(o.Scale)), scale: o.Scale}, true
	case toeplitzOp:
		// C = T_c diag(s), c the square root's coefficients when u is
		// their inverse series.
		r := len(o.s)
		for k, v := range InverseSqrtCoefficients(r) {
			if !(math.Abs(o.u[k]-v) <= 1e-12*math.Abs(v)) {
				return nil, false
			}
		}
		scale := make([]float64, r)
		for i, v := range o.s {
			scale[i] = 1 / v
		}
		return &scaledToeplitz{c: SqrtCoefficients(r), scale: scale}, true
	}
	return nil, false
}

// minSepOf returns the sensitivity under the min-separation p of the C
// that the structured operator op streams, computed from op's
// coefficients by the rules the loss-only strategies report (exact for a
// tree, a C banded within the separation and a non-negative non-increasing
// Toeplitz C, else the bound over X's rows), and false where it cannot
// (a banded C wider than the separation that is not a scaled Toeplitz
// matrix; a Toeplitz operator that is not the square root's, as in
// gammaSqOf). k <= 1 participations give gamma.
func minSepOf(op Operator, r int, p Participation) (Sensitivity, bool) {
	b, k := min(p.B, r), p.Participations(r)
	if k <= 1 {
		g2, ok := gammaSqOf(op)
		return Sensitivity{Value: math.Sqrt(g2), Exact: true, Rule: RuleColumnNorm}, ok
	}
	switch o := op.(type) {
	case treeOp:
		return treeMinSep(r, b, k), true
	case bandedOp:
		if o.bands <= b {
			// Columns b apart are orthogonal: the best k of them.
			return Sensitivity{Value: math.Sqrt(bestSeparated(bandedColSq(o), b, k)), Exact: true, Rule: RuleMinSepBanded}, true
		}
		// Wider than the separation: by the Toeplitz rules when C is a
		// scaled Toeplitz matrix (bsr).
	}
	st, ok := toeplitzOfOp(op) // C = T_c diag(1/scale)
	if !ok {
		return Sensitivity{}, false
	}
	sens, err := st.minSep(b, k, st.colSq())
	return sens, err == nil
}

// operatorError returns the relative error of the operator against the
// factors b, c: M Z for Z = C x must give back x (A^{-1} B C = I), for a
// test vector x, streamed with dimension 1.
func operatorError(op Operator, c *mat.Dense, x []float64) float64 {
	var cx mat.VecDense
	cx.MulVec(c, mat.NewVecDense(len(x), x))
	src := &vectorNoise{z: cx.RawVector().Data}
	st := op.NewState(1)
	errSq, normSq := 0.0, 0.0
	y := make([]float64, 1)
	for r := range x {
		st.Prepare(r)
		st.Block(src, r, 0, y)
		errSq += (y[0] - x[r]) * (y[0] - x[r])
		normSq += x[r] * x[r]
	}
	return math.Sqrt(errSq / normSq)
}

// vectorNoise is a NoiseSource of dimension 1 whose noise row j is z[j].
type vectorNoise struct {
	z       []float64
	scratch [1]float64
}

func (v *vectorNoise) Fill(j, lo int, dst []float64) { dst[0] = v.z[j] }

// Past returns row j itself: a stream only reads it.
func (v *vectorNoise) Past(j, lo, n int) []float64 { return v.z[j : j+1] }
func (v *vectorNoise) Scratch(n int) []float64     { return v.scratch[:n] }
