package plan

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
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
	h := sha256.New()
	buf := make([]byte, 0, 8<<10)
	put := func(v uint64) {
		if len(buf)+8 > cap(buf) {
			h.Write(buf)
			buf = buf[:0]
		}
		buf = binary.LittleEndian.AppendUint64(buf, v)
	}
	str := func(s string) {
		put(uint64(len(s)))
		h.Write(buf)
		buf = append(buf[:0], s...)
	}
	buf = append(buf, operatorDomain...)
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
	if ok {
		str("form:" + kind)
		put(uint64(len(ints)))
		for _, v := range ints {
			put(uint64(v))
		}
		n := 0
		for p := range parts {
			n += len(p)
		}
		put(uint64(n))
		for p := range parts {
			for _, v := range p {
				put(math.Float64bits(v))
			}
		}
	} else {
		if f.B == nil || f.C == nil {
			return "", errors.New("plan: factorization " + f.Strategy + " has neither a structured operator nor dense factors B and C to identify it by")
		}
		str("factors")
		for _, m := range []*mat.Dense{f.B, f.C} {
			r, c := m.Dims()
			put(uint64(r))
			put(uint64(c))
			for i := 0; i < r; i++ {
				for j := 0; j < c; j++ {
					put(math.Float64bits(m.At(i, j)))
				}
			}
		}
	}
	h.Write(buf)
	return hex.EncodeToString(h.Sum(nil)), nil
}
