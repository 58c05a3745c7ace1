package plan

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash"
	"iter"
	"math"

	"github.com/dpmf/dpmf/factorize"
	"gonum.org/v1/gonum/mat"
)

// operatorDomain opens the bytes [OperatorDigest] hashes.
const operatorDomain = "dpmf operator v1\x00"

// OperatorDigest returns the SHA-256, in lower-case hexadecimal, of what
// determines the noise operator M and the encoder C of f, and so the
// sensitivity a record calibrated for f rests on: for an operator with a
// structured form (factorize.FormOf: every strategy of the registry, fresh
// or read from the cache) the form's kind, sizes and coefficients, bit for
// bit, hashed a chunk at a time (factorize.FormParts, never a copy of
// all of them); otherwise (factors assembled by hand, streamed with
// mechanism.WithDense) the dense factors B and C, bit for bit. It never
// forms dense factors that f does not hold. Two factorizations with the
// same digest stream the same noise M Z and have the same C. It is an
// error for a factorization with neither (a loss-only result, or an
// operator of another package without factors).
//
// [Plan.Calibrate] records it (Record.OperatorSHA256), and a fedopt server
// refuses a mechanism whose factorization has another digest.
func OperatorDigest(f *factorize.Factorization) (string, error) {
	if f == nil {
		return "", errors.New("plan: no factorization to identify")
	}
	op := f.Operator
	if p, isBLT := op.(*factorize.BLTParams); isBLT && p == nil {
		op = nil // parameters assembled by hand, and missing
	}
	// The form's coefficients are hashed a chunk at a time, never copied
	// whole (factorize.FormOf's copy of the optimum's is 1.4 GB at R =
	// 10^6); the bytes are those of FormOf's form.
	var (
		kind  string
		ints  []int
		parts iter.Seq[[]float64]
		ok    bool
	)
	if op != nil {
		kind, ints, parts, ok = factorize.FormParts(op)
	}
	if !ok {
		if f.B == nil || f.C == nil {
			return "", errors.New("plan: factorization " + f.Strategy + " has neither a structured operator nor dense factors B and C to identify it by")
		}
		return factorsDigest(f.B, f.C), nil
	}
	// The number of coefficients precedes them. The sizes give it
	// (OperatorForm.FloatCount), so one pass over the coefficients
	// suffices; parameters assembled by hand whose slices disagree with
	// their sizes (a BLT with fewer decays than weights) are counted in a
	// first pass instead, as they always were.
	n, err := factorize.OperatorForm{Kind: kind, Ints: ints}.FloatCount()
	if err == nil {
		if d, counted := hashForm(kind, ints, parts, n); counted == n {
			return d, nil
		}
	}
	n = 0
	for p := range parts {
		n += len(p)
	}
	d, _ := hashForm(kind, ints, parts, n)
	return d, nil
}

// digestWriter writes little-endian words and strings through a buffer
// into a SHA-256 opened by operatorDomain.
type digestWriter struct {
	h   hash.Hash
	buf []byte
}

func newDigestWriter() *digestWriter {
	w := &digestWriter{h: sha256.New(), buf: make([]byte, 0, 8<<10)}
	w.buf = append(w.buf, operatorDomain...)
	return w
}

func (w *digestWriter) put(v uint64) {
	if len(w.buf)+8 > cap(w.buf) {
		w.h.Write(w.buf)
		w.buf = w.buf[:0]
	}
	w.buf = binary.LittleEndian.AppendUint64(w.buf, v)
}

func (w *digestWriter) str(s string) {
	w.put(uint64(len(s)))
	w.h.Write(w.buf)
	w.buf = append(w.buf[:0], s...)
}

func (w *digestWriter) sum() string {
	w.h.Write(w.buf)
	return hex.EncodeToString(w.h.Sum(nil))
}

// hashForm hashes a structured form with n written as its number of
// coefficients, and returns the digest and the number of coefficients
// parts actually yielded (the digest is that of the form only where the
// two agree).
func hashForm(kind string, ints []int, parts iter.Seq[[]float64], n int) (string, int) {
	w := newDigestWriter()
	w.str("form:" + kind)
	w.put(uint64(len(ints)))
	for _, v := range ints {
		w.put(uint64(v))
	}
	w.put(uint64(n))
	counted := 0
	for p := range parts {
		counted += len(p)
		for _, v := range p {
			w.put(math.Float64bits(v))
		}
	}
	return w.sum(), counted
}

// factorsDigest hashes the dense factors B and C, bit for bit.
func factorsDigest(b, c *mat.Dense) string {
	w := newDigestWriter()
	w.str("factors")
	for _, m := range []*mat.Dense{b, c} {
		r, c := m.Dims()
		w.put(uint64(r))
		w.put(uint64(c))
		for i := 0; i < r; i++ {
			for j := 0; j < c; j++ {
				w.put(math.Float64bits(m.At(i, j)))
			}
		}
	}
	return w.sum()
}
