package factorize

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"reflect"
	"slices"

	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

// Workload is a full-rank lower-triangular R x R workload matrix A: the
// linear queries released every round. The common case is the prefix-sum
// matrix (all ones on and below the diagonal), built by [Prefix].
//
// A Workload whose inverse is banded (prefix sums, momentum, weighted prefix
// sums) keeps that inverse in banded form, which lets [Optimal] avoid dense
// matrices entirely.
type Workload struct {
	name string
	r    int
	// a is the dense workload; built lazily for structured workloads.
	a *mat.TriDense
	// inv is A^{-1} as a lower-triangular band matrix, nil when A^{-1} is
	// not known to be banded.
	inv *mat.TriBandDense
	// hash identifies the workload's entries for the disk cache.
	hash string
}

// MaxRounds is the largest number of rounds R that [Prefix] and [Momentum]
// accept: their inverse band alone takes 16 R bytes, so a larger R (2^40
// takes 16 TiB) could only end in a crash of the allocation. Solving for
// such an R needs far more memory still; commands check what they need
// against the memory available before they call this package. On a 32-bit
// platform it is 2^27 - 1, so that the band's 16 R bytes still fit in an
// int (a larger R would overflow the slice lengths, not just the memory).
const MaxRounds = min(1<<36, math.MaxInt>>4)

// checkRounds checks a number of rounds R.
func checkRounds(R int) error {
	if R < 1 || R > MaxRounds {
		// MaxRounds as error messages write it: "2^36", or "2^27-1" on a
		// 32-bit platform.
		limit := "2^36"
		if MaxRounds != 1<<36 {
			limit = "2^27-1"
		}
		return &ParamError{Param: "R", Value: R, Want: "R >= 1 and R <= " + limit}
	}
	return nil
}

// Prefix returns the R x R prefix-sum workload: A[i][j] = 1 for j <= i.
// Its inverse is bidiagonal (1 on the diagonal, -1 below it).
func Prefix(R int) (*Workload, error) {
	if err := checkRounds(R); err != nil {
		return nil, err
	}
	return &Workload{name: "prefix", r: R, inv: toeplitzBand(R, 1, -1), hash: "prefix"}, nil
}

// Momentum returns the workload of SGD with heavy-ball momentum beta in
// [0, 1): the model after round r is the sum over s <= r of
// (1 - beta^{r-s+1}) / (1 - beta) times the gradient of round s. Its inverse
// is the product of two bidiagonal matrices, so it has two subdiagonals.
// beta = 0 is the prefix-sum workload.
func Momentum(R int, beta float64) (*Workload, error) {
	if err := checkRounds(R); err != nil {
		return nil, err
	}
	if !(beta >= 0 && beta < 1) {
		return nil, &ParamError{Param: "beta", Value: beta, Want: "0 <= beta < 1"}
	}
	if beta == 0 {
		return Prefix(R)
	}
	// A = P M with P the prefix-sum matrix and M the Toeplitz matrix of
	// beta^k; A^{-1} = M^{-1} P^{-1} = (I - beta Z)(I - Z), Z the down shift:
	// diagonal 1, first subdiagonal -(1+beta), second subdiagonal beta.
	inv := toeplitzBand(R, 1, -(1 + beta), beta)
	return &Workload{name: "momentum", r: R, inv: inv, hash: fmt.Sprintf("momentum:%x", math.Float64bits(beta))}, nil
}

// toeplitzBand returns the R x R lower-triangular banded Toeplitz matrix
// with first column coef (len(coef) - 1 subdiagonals, fewer for a small R).
func toeplitzBand(R int, coef ...float64) *mat.TriBandDense {
	band := mat.NewTriBandDense(R, min(len(coef)-1, R-1), mat.Lower, nil)
	for i := 0; i < R; i++ {
		for d, c := range coef[:min(len(coef), i+1)] {
			band.SetTriBand(i, i-d, c)
		}
	}
	return band
}

// WeightedPrefix returns the workload of weighted prefix sums,
// A[i][j] = weights[j] for j <= i: the model of SGD whose round-j step is
// scaled by weights[j] (a learning-rate schedule). A = P W with P the
// prefix-sum matrix, so A^{-1} = W^{-1} P^{-1} is bidiagonal and the optimal
// factorization takes the structured path. Every weight must have a
// magnitude in [2^-1022, 2^1022] (about 2.2e-308 to 4.5e307), so that its
// reciprocal, held in A^{-1}, is a normal float64 (a subnormal weight's
// overflows, and a larger one's is subnormal, which loses its precision);
// the slice is copied.
func WeightedPrefix(weights []float64) (*Workload, error) {
	r := len(weights)
	if r < 1 {
		return nil, &ParamError{Param: "weights", Want: "at least one weight"}
	}
	inv := mat.NewTriBandDense(r, min(1, r-1), mat.Lower, nil)
	for i, w := range weights {
		if !(math.Abs(w) >= 0x1p-1022 && math.Abs(w) <= 0x1p1022) {
			return nil, &ParamError{Param: fmt.Sprintf("weights[%d]", i), Value: w, Want: "a number of magnitude in [2^-1022, 2^1022] (nonzero, with a normal reciprocal)"}
		}
		inv.SetTriBand(i, i, 1/w)
		if i > 0 {
			inv.SetTriBand(i, i-1, -1/w)
		}
	}
	h := sha256.New()
	binary.Write(h, binary.LittleEndian, weights) // each weight's bits
	return &Workload{name: "weighted", r: r, inv: inv, hash: "weighted:" + hex.EncodeToString(h.Sum(nil))}, nil
}

// NewWorkload returns the workload of the square, lower-triangular, nonsingular
// matrix a. The matrix is copied. A prefix-sum matrix is recognised as
// [Prefix]; a matrix whose inverse is banded with at most 8 subdiagonals (to
// a relative 1e-13) keeps that band, so that [Optimal] takes its structured
// path. It is a *[ParamError] (not a panic) for a to be nil, empty or
// non-square, to have a nonzero above the diagonal, a zero (or tiny)
// diagonal entry, or a non-finite entry.
func NewWorkload(a mat.Matrix) (*Workload, error) {
	if isNilMatrix(a) {
		return nil, &ParamError{Param: "workload", Want: "a square lower-triangular matrix"}
	}
	r, c := a.Dims()
	if r != c || r == 0 {
		return nil, &ParamError{Param: "workload", Value: fmt.Sprintf("%d x %d", r, c), Want: "a square matrix, at least 1 x 1"}
	}
	t := mat.NewTriDense(r, mat.Lower, nil)
	prefix := true // every entry on and below the diagonal is 1
	for i := 0; i < r; i++ {
		for j := 0; j < r; j++ {
			v := a.At(i, j)
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, &ParamError{Param: fmt.Sprintf("workload[%d][%d]", i, j), Value: v, Want: "a finite number"}
			}
			if j > i {
				if v != 0 {
					return nil, &ParamError{Param: fmt.Sprintf("workload[%d][%d]", i, j), Value: v, Want: "0 above the diagonal (a lower-triangular matrix)"}
				}
				continue
			}
			t.SetTri(i, j, v)
			prefix = prefix && v == 1
		}
	}
	// Nonsingular: every diagonal entry nonzero, and not so small relative
	// to the matrix that inverting it is meaningless.
	maxAbs := maxAbsTri(t)
	for i := 0; i < r; i++ {
		if d := math.Abs(t.At(i, i)); d == 0 || d < 1e-14*maxAbs {
			return nil, &ParamError{Param: fmt.Sprintf("workload[%d][%d]", i, i), Value: t.At(i, i), Want: "a diagonal entry at least 1e-14 times the largest entry in magnitude (a nonsingular matrix)"}
		}
	}
	if prefix {
		p, _ := Prefix(r)
		p.a = t
		return p, nil
	}
	return &Workload{name: "matrix", r: r, a: t, inv: bandedInverse(t), hash: hashTri(t)}, nil
}

// maxDetectedBands is the widest inverse band [NewWorkload] looks for.
const maxDetectedBands = 8

// bandTol is the relative size below which an entry of a computed inverse
// counts as zero when [NewWorkload] looks for a banded inverse.
const bandTol = 1e-13

// bandedInverse returns A^{-1} as a band matrix when all its entries more
// than k <= maxDetectedBands places below the diagonal are below bandTol
// times its largest entry, and nil otherwise. Inverting costs O(R^3 / 3),
// a small price next to the dense solver it can avoid: a workload whose
// inverse is banded (weighted prefix sums, momentum, any recurrence of short
// memory) then takes the structured path of [Optimal], which is both O(R)
// per iteration and far more accurate for ill-conditioned workloads. The
// dropped entries are at the level of the rounding in the file's own
// entries.
func bandedInverse(a *mat.TriDense) *mat.TriBandDense {
	n, _ := a.Triangle()
	if n < 3 {
		return nil
	}
	var inv mat.TriDense
	if err := inv.InverseTri(a); err != nil {
		if _, ok := err.(mat.Condition); !ok {
			return nil
		}
	}
	raw := inv.RawTriangular()
	biggest := maxAbsTri(&inv)
	if math.IsInf(biggest, 0) || math.IsNaN(biggest) {
		// The inverse overflowed (an ill-conditioned matrix of tiny
		// entries): against an infinite largest entry no entry counts,
		// and the band would be the diagonal alone.
		return nil
	}
	k := 0
	for i := 0; i < n; i++ {
		row := lowerRow(raw, i)
		for j := 0; j < i-k; j++ {
			if math.Abs(row[j]) > bandTol*biggest {
				k = i - j
				if k > maxDetectedBands {
					return nil
				}
				break
			}
		}
	}
	band := mat.NewTriBandDense(n, min(k, n-1), mat.Lower, nil)
	for i := 0; i < n; i++ {
		for j := max(0, i-k); j <= i; j++ {
			band.SetTriBand(i, j, raw.Data[i*raw.Stride+j])
		}
	}
	return band
}

// maxAbsTri returns the largest magnitude of an entry of the
// lower-triangular t.
func maxAbsTri(t *mat.TriDense) float64 {
	raw := t.RawTriangular()
	m := 0.0
	for i := 0; i < raw.N; i++ {
		for _, x := range lowerRow(raw, i) {
			m = math.Max(m, math.Abs(x))
		}
	}
	return m
}

// isNilMatrix reports whether a is nil or a nil pointer in a non-nil
// interface, such as a (*mat.Dense)(nil).
func isNilMatrix(a mat.Matrix) bool {
	if a == nil {
		return true
	}
	v := reflect.ValueOf(a)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// R returns the number of rounds (the order of A).
func (w *Workload) R() int { return w.r }

// Name returns "prefix", "momentum", "weighted" or "matrix".
func (w *Workload) Name() string { return w.name }

// Key returns a string that identifies the workload's entries, for caching.
// Structured workloads are named by their parameters; a general matrix by a
// SHA-256 hash of its entries.
func (w *Workload) Key() string { return w.hash }

// IsPrefix reports whether w is the prefix-sum workload.
func (w *Workload) IsPrefix() bool { return w.name == "prefix" }

// Matrix returns A as a dense lower-triangular matrix. The result is shared:
// do not modify it. It costs O(R^2) memory for structured workloads.
func (w *Workload) Matrix() *mat.TriDense {
	if w.a == nil {
		w.a = denseFromInverseBand(w.inv)
	}
	return w.a
}

// InverseBand returns A^{-1} as a lower-triangular band matrix and true when
// A^{-1} is known to be banded; otherwise nil and false. The result is shared:
// do not modify it.
func (w *Workload) InverseBand() (*mat.TriBandDense, bool) {
	return w.inv, w.inv != nil
}

// bidiagonalInverse reports whether w has a bidiagonal inverse (prefix or
// weighted prefix sums) and R >= 2, as [SemisepStrategy] needs.
func (w *Workload) bidiagonalInverse() bool {
	if w.inv == nil || w.R() < 2 {
		return false
	}
	_, kb, _ := w.inv.TriBand()
	return kb == 1
}

// balance returns the power of two t that brings the workload's scale
// (its largest entry, or for a workload kept by its inverse band the
// largest 1/|A^{-1}[i][i]| = |A[i][i]|) into [2^-64, 2^64], or 1 when it is
// already there. [Optimal] solves for t A instead of A, whose solution is
// the same up to the scale: without it the fixed-point map of a workload
// near 1e40 or 1e-40 squares its scale beyond the floating-point range.
func (w *Workload) balance() float64 { return w.balanceWithin(64) }

// balanceWithin is [Workload.balance] for the range [2^-e, 2^e]: the power
// of two t that brings the scale to about 1 (its exponent to 0) when it is
// outside that range, else 1.
func (w *Workload) balanceWithin(e int) float64 {
	m := 0.0
	if w.a != nil {
		m = maxAbsTri(w.a)
	} else {
		for i := 0; i < w.r; i++ {
			m = math.Max(m, 1/math.Abs(w.inv.At(i, i)))
		}
	}
	if !(m > 0) || math.IsInf(m, 0) {
		return 1
	}
	_, me := math.Frexp(m)
	if me >= -e && me <= e {
		return 1
	}
	return math.Ldexp(1, -me)
}

// scaledBy returns the workload t A, for t a power of two (so that the
// entries are scaled exactly). It has the same name and key as w: it is
// used only inside [Optimal], never cached.
func (w *Workload) scaledBy(t float64) *Workload {
	s := &Workload{name: w.name, r: w.r, hash: w.hash}
	if w.a != nil {
		s.a = mat.NewTriDense(w.r, mat.Lower, nil)
		s.a.ScaleTri(t, w.a)
	}
	if w.inv != nil {
		raw := w.inv.RawTriBand()
		data := slices.Clone(raw.Data) // the band, padding zeros included
		for i := range data {
			data[i] /= t
		}
		s.inv = mat.NewTriBandDense(raw.N, raw.K, mat.Lower, data)
	}
	return s
}

// denseFromInverseBand inverts a lower band matrix by forward substitution,
// O(R^2 k): column j of the inverse is col[j] = 1 / l[j][j] and, for i > j,
// col[i] = -sum_{p = max(j, i-k)}^{i-1} (l[i][p] / l[i][i]) col[p]. Each
// row is divided by its diagonal entry before it is used, so that no
// intermediate overflows where A's entries do not: for weighted prefix sums
// with weights 1e300 and 2^-1022, the product l[i][i-1] col[i-1] =
// (w_j / w_i) before the division by l[i][i] = 1 / w_i overflowed,
// although A[i][j] = w_j. The rows are formed in order, each from the k
// rows above it (memory order; a column at a time read and wrote the
// matrix with a stride of R), with the terms of every entry in the order
// above (p increasing, only p >= j).
func denseFromInverseBand(l *mat.TriBandDense) *mat.TriDense {
	n, k, _ := l.TriBand()
	a := mat.NewTriDense(n, mat.Lower, nil)
	raw := a.RawTriangular()
	for i := 0; i < n; i++ {
		d := l.At(i, i)
		ai := lowerRow(raw, i)
		for p := max(0, i-k); p < i; p++ {
			coef := l.At(i, p) / d
			for j, v := range lowerRow(raw, p) { // j <= p
				ai[j] -= coef * v
			}
		}
		ai[i] = 1 / d
	}
	return a
}

// denseOfTri returns a copy of the lower-triangular t as a dense matrix,
// row by row from its storage (mat.DenseCopyOf reads it entry by entry).
func denseOfTri(t *mat.TriDense) *mat.Dense {
	n, kind := t.Triangle()
	if kind != mat.Lower {
		return mat.DenseCopyOf(t)
	}
	d := mat.NewDense(n, n, nil)
	raw := t.RawTriangular()
	for i := 0; i < n; i++ {
		copy(d.RawRowView(i), lowerRow(raw, i))
	}
	return d
}

// lowerRow returns row i of a lower-triangular matrix's storage, its
// entries 0 to i.
func lowerRow(t blas64.Triangular, i int) []float64 {
	return t.Data[i*t.Stride : i*t.Stride+i+1]
}

// hashTri returns a hex SHA-256 of the lower triangle's float64 bits.
func hashTri(t *mat.TriDense) string {
	h := sha256.New()
	raw := t.RawTriangular()
	binary.Write(h, binary.LittleEndian, uint64(raw.N))
	for i := 0; i < raw.N; i++ {
		binary.Write(h, binary.LittleEndian, lowerRow(raw, i))
	}
	return "matrix:" + hex.EncodeToString(h.Sum(nil))
}
