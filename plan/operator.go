package plan

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
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
// bit; otherwise (factors assembled by hand, streamed with
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
	form, ok := factorize.OperatorForm{}, false
	if op != nil {
		form, ok = factorize.FormOf(op)
	}
	if ok {
		str("form:" + form.Kind)
		put(uint64(len(form.Ints)))
		for _, v := range form.Ints {
			put(uint64(v))
		}
		put(uint64(len(form.Floats)))
		for _, v := range form.Floats {
			put(math.Float64bits(v))
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
