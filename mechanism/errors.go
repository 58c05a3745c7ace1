package mechanism

import "github.com/dpmf/dpmf/internal/param"

// ParamError reports an argument that [New], [NoiseMatrix] or an option
// cannot accept: a nil factorization or mechanism, a dimension, a noise
// standard deviation, a number of workers or a start round out of range.
// Commands map it to a flag with errors.As instead of parsing the message.
// It is dpmf's one argument error, the same type as factorize.ParamError
// and the others' (internal/param.Error), with one message format.
type ParamError = param.Error
