package cache

import "github.com/dpmf/dpmf/internal/param"

// ParamError reports an argument that the package cannot accept: a nil
// *Cache or context, or a factorization that this package did not compute. It is
// dpmf's one argument error (the same type as factorize.ParamError and the
// others), so that a command can name the flag with errors.As instead of
// parsing the message.
type ParamError = param.Error

// errNilCache is the error of a method called on a nil *Cache.
var errNilCache = &ParamError{Param: "cache", Want: "a *Cache (&cache.Cache{Dir: ...})"}
