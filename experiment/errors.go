package experiment

import "github.com/dpmf/dpmf/internal/param"

// ParamError reports an argument that the package cannot accept: a nil or
// zero-value problem, experiment or factorization, a number of repetitions
// out of range. It is dpmf's one argument error (the same type as
// fedopt.ParamError and the others), so commands map it to a flag with
// errors.As instead of parsing the message.
type ParamError = param.Error

// checkProblem returns a *ParamError unless p is a problem made by
// [NewProblem] (or filled in the same way).
func checkProblem(p *Problem) error {
	if p == nil || p.Data == nil || p.Model == nil || len(p.XStar) == 0 {
		return &ParamError{Param: "problem", Want: "a Problem from NewProblem"}
	}
	return nil
}
