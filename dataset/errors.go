package dataset

import "github.com/dpmf/dpmf/internal/param"

// ParamError reports an argument that the package cannot accept: a nil or
// zero-value data set, table or reader, a shape or split out of range. It is
// dpmf's one argument error (the same type as fedopt.ParamError and the
// others), so commands map it to a flag with errors.As instead of parsing
// the message.
type ParamError = param.Error
