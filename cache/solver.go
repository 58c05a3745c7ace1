package cache

import (
	"runtime/debug"
	"strconv"

	"github.com/dpmf/dpmf/factorize"
)

// modulePath is dpmf's module path, to find its version in a program's
// build information.
const modulePath = "github.com/dpmf/dpmf"

// solverID names the solver that computes what the cache stores; the key
// covers it, so that after a change of the numerics an older entry is a
// miss (another file name), never loaded. Tests replace it.
var solverID = func() string {
	bi, ok := debug.ReadBuildInfo()
	return solverIdentity(factorize.SolverVersion, bi, ok)
}()

// solverIdentity is "factorize solver V", followed by " module VERSION"
// when the build information records a version of the dpmf module, as the
// main module or as a dependency. A development build's "(devel)", or
// none, adds nothing: there SolverVersion alone tells solvers apart.
func solverIdentity(version int, bi *debug.BuildInfo, ok bool) string {
	id := "factorize solver " + strconv.Itoa(version)
	if !ok || bi == nil {
		return id
	}
	v := ""
	if bi.Main.Path == modulePath {
		v = bi.Main.Version
	} else {
		for _, d := range bi.Deps {
			if d.Path == modulePath {
				v = d.Version
				if d.Replace != nil {
					v = d.Replace.Version
				}
			}
		}
	}
	if v == "" || v == "(devel)" {
		return id
	}
	return id + " module " + v
}
