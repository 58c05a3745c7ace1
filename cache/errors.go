package cache

import "github.com/dpmf/dpmf/internal/param"

// ParamError reports an argument that the package cannot accept: a nil
// context, or a factorization that this package did not compute. It is
// dpmf's one argument error (the same type as factorize.ParamError and the
// others), so that a command can name the flag with errors.As instead of
// parsing the message.
type ParamError = param.Error
