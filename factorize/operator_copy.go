package factorize

import (
	"slices"
	"unsafe"
)

// CopyOperator returns a copy of op that shares no memory with it and
// streams the same noise bit for bit, and true, for the operators of this
// package with coefficients (banded, BLT, banded inverse, quasiseparable,
// Toeplitz; the identity and the tree, which hold none a caller can
// reach, are returned as they are). It returns op and false for the dense
// operator (its rows' lists are built once from a copy of its factors and
// never change afterwards) and for an operator of another package, which
// it cannot copy; nil BLT parameters are returned as they are, with true.
//
// mechanism.New streams such a copy, so that a later change of BLT
// parameters, or of the coefficients of a form an operator was built from
// ([OperatorForm.Operator] keeps them), cannot change a stream's noise.
func CopyOperator(op Operator) (Operator, bool) {
	switch o := op.(type) {
	case identityOp, treeOp:
		return o, true
	case bandedOp:
		// The rows' slices may share memory (a banded Toeplitz C's are
		// prefixes of one column, b coefficients for all R rows): each
		// run of them that starts at one address is copied once, as
		// long as its longest.
		c := bandedOp{bands: o.bands, diag: slices.Clone(o.diag), sub: make([][]float64, len(o.sub))}
		longest := map[*float64][]float64{}
		for _, s := range o.sub {
			if len(s) > 0 && len(s) > len(longest[unsafe.SliceData(s)]) {
				longest[unsafe.SliceData(s)] = s
			}
		}
		copies := make(map[*float64][]float64, len(longest))
		for at, s := range longest {
			copies[at] = slices.Clone(s)
		}
		for i, s := range o.sub {
			if len(s) > 0 {
				c.sub[i] = copies[unsafe.SliceData(s)][:len(s):len(s)]
			} else {
				c.sub[i] = []float64{}
			}
		}
		return c, true
	case *BLTParams:
		if o == nil {
			return o, true
		}
		return &BLTParams{Weights: slices.Clone(o.Weights), Lambdas: slices.Clone(o.Lambdas), Scale: slices.Clone(o.Scale)}, true
	case bandInverseOp:
		return bandInverseOp{u: slices.Clone(o.u), r: o.r}, true
	case quasiSepOp:
		q := o.c
		q.P, q.A, q.Q, q.Diag = slices.Clone(q.P), slices.Clone(q.A), slices.Clone(q.Q), slices.Clone(q.Diag)
		return quasiSepOp{q}, true
	case toeplitzOp:
		return toeplitzOp{u: slices.Clone(o.u), s: slices.Clone(o.s)}, true
	}
	return op, false
}
