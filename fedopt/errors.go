package fedopt

import "github.com/dpmf/dpmf/internal/param"

// ParamError reports an argument or a [Config] field that the package
// cannot accept: a step size, clipping bound or shape out of range, a nil
// server or learner. It is dpmf's one argument error (the same type as
// factorize.ParamError and the others), so commands map it to a flag with
// errors.As instead of parsing the message.
type ParamError = param.Error
