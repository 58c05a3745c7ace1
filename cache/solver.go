package cache

import (
	"runtime"
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

// archID names the machine arithmetic of this program; the key covers it,
// so that an entry written by a program of another architecture (a cache
// directory shared over NFS between amd64 and 386 machines, whose results
// differ in the last bits) is a miss, never loaded. Tests replace it.
var archID = func() string {
	bi, ok := debug.ReadBuildInfo()
	return archIdentity(runtime.GOARCH, bi, ok)
}()

// archVariant is the build setting that selects the instruction set within
// an architecture, where there is one: GOAMD64=v3, for one, lets the
// compiler fuse a*b+c into one rounding.
var archVariant = map[string]string{
	"386": "GO386", "amd64": "GOAMD64", "arm": "GOARM", "arm64": "GOARM64",
	"mips": "GOMIPS", "mipsle": "GOMIPS", "mips64": "GOMIPS64", "mips64le": "GOMIPS64",
	"ppc64": "GOPPC64", "ppc64le": "GOPPC64", "riscv64": "GORISCV64", "wasm": "GOWASM",
}

// archIdentity is "arch GOARCH", followed by " SETTING=VALUE" when the
// build information records goarch's variant setting (archVariant).
func archIdentity(goarch string, bi *debug.BuildInfo, ok bool) string {
	id := "arch " + goarch
	if !ok || bi == nil {
		return id
	}
	key := archVariant[goarch]
	for _, s := range bi.Settings {
		if key != "" && s.Key == key && s.Value != "" {
			return id + " " + key + "=" + s.Value
		}
	}
	return id
}
