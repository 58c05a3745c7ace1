package cache

import (
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dpmf/dpmf/factorize"
)

// TestSolverChangeIsAMiss: an entry stored by another solver (another
// factorize.SolverVersion, or another module version of dpmf) is a miss,
// not an error: Load returns ErrMiss and Compute computes again and stores
// its own entry, under another name. Before, the key covered only the
// cache format, and a solver fix kept serving the old solver's results.
func TestSolverChangeIsAMiss(t *testing.T) {
	old := solverID
	t.Cleanup(func() { solverID = old })
	c := &Cache{Dir: t.TempDir()}
	w, err := factorize.Prefix(20)
	require.NoError(t, err)
	s := factorize.IdentityStrategy{}
	p := factorize.SingleParticipation()
	solverID = "solver 1"
	_, cached, err := c.Compute(context.Background(), s, w, p, nil)
	require.False(t, cached)
	require.NoError(t, err)
	_, err = c.Load(s, w, p)
	require.NoError(t, err, "the same solver loads its entry")
	k1, err := Key(s, w, p)
	require.NoError(t, err)

	solverID = "solver 2"
	k2, err := Key(s, w, p)
	require.NoError(t, err)
	assert.NotEqual(t, k1, k2, "the key covers the solver")
	_, err = c.Load(s, w, p)
	assert.True(t, errors.Is(err, ErrMiss), "an older solver's entry: %v, want ErrMiss", err)
	f, cached, err := c.Compute(context.Background(), s, w, p, nil)
	require.NoError(t, err)
	assert.False(t, cached, "computed again")
	assert.Equal(t, 20, f.Workload.R())
	_, err = c.Load(s, w, p)
	assert.NoError(t, err, "the new solver's entry")
}

// TestSolverIdentity: the identity names factorize.SolverVersion and, where
// the build records one, the module's version (not "(devel)", which every
// development build has).
func TestSolverIdentity(t *testing.T) {
	id := solverIdentity(factorize.SolverVersion, nil, false)
	assert.Equal(t, "factorize solver "+strconv.Itoa(factorize.SolverVersion), id)
	assert.NotEqual(t, id, solverIdentity(factorize.SolverVersion+1, nil, false))
	bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/dpmf/dpmf", Version: "v1.2.3"}}
	withV := solverIdentity(factorize.SolverVersion, bi, true)
	assert.True(t, strings.HasPrefix(withV, id) && strings.Contains(withV, "v1.2.3"), withV)
	bi.Main.Version = "(devel)"
	assert.Equal(t, id, solverIdentity(factorize.SolverVersion, bi, true))
	// A program built from another main module (dpmf as a dependency).
	bi = &debug.BuildInfo{Main: debug.Module{Path: "example.com/app", Version: "v0.1.0"},
		Deps: []*debug.Module{{Path: "github.com/dpmf/dpmf", Version: "v1.4.0"}}}
	withV = solverIdentity(factorize.SolverVersion, bi, true)
	assert.True(t, strings.Contains(withV, "v1.4.0") && !strings.Contains(withV, "v0.1.0"), withV)
}

// TestArchChangeIsAMiss: an entry stored by a program of another CPU
// architecture (a cache directory shared over NFS between an amd64 and a
// 386 machine, whose results differ in the last bits) is a miss, not a
// hit: the key covers the architecture. Before, the 386 program loaded the
// amd64 program's factorization as its own.
func TestArchChangeIsAMiss(t *testing.T) {
	old := archID
	t.Cleanup(func() { archID = old })
	c := &Cache{Dir: t.TempDir()}
	w, err := factorize.Prefix(20)
	require.NoError(t, err)
	s := factorize.IdentityStrategy{}
	p := factorize.SingleParticipation()
	archID = archIdentity("amd64", nil, false)
	_, cached, err := c.Compute(context.Background(), s, w, p, nil)
	require.NoError(t, err)
	require.False(t, cached)
	k1, err := Key(s, w, p)
	require.NoError(t, err)
	_, err = c.Load(s, w, p)
	require.NoError(t, err, "the same architecture loads its entry")

	archID = archIdentity("386", nil, false)
	k2, err := Key(s, w, p)
	require.NoError(t, err)
	assert.NotEqual(t, k1, k2, "the key covers the architecture")
	_, err = c.Load(s, w, p)
	assert.True(t, errors.Is(err, ErrMiss), "another architecture's entry: %v, want ErrMiss", err)
	_, cached, err = c.Compute(context.Background(), s, w, p, nil)
	require.NoError(t, err)
	assert.False(t, cached, "computed again")
	_, err = c.Load(s, w, p)
	assert.NoError(t, err, "this architecture's entry")
	names, err := filepath.Glob(filepath.Join(c.Dir, "*"+cacheExt))
	require.NoError(t, err)
	assert.Len(t, names, 2, "one entry per architecture")
}

// TestArchIdentity: the identity is runtime.GOARCH's, with the variant
// the build records for that architecture (GOAMD64=v3 lets the compiler
// fuse a*b+c, so it changes the last bits too), and no other setting.
func TestArchIdentity(t *testing.T) {
	assert.Equal(t, "arch "+runtime.GOARCH, archIdentity(runtime.GOARCH, nil, false))
	bi := &debug.BuildInfo{Settings: []debug.BuildSetting{
		{Key: "GOARCH", Value: "amd64"}, {Key: "GOAMD64", Value: "v3"}, {Key: "GO386", Value: "sse2"}, {Key: "GOOS", Value: "linux"},
	}}
	assert.Equal(t, "arch amd64 GOAMD64=v3", archIdentity("amd64", bi, true))
	assert.Equal(t, "arch 386 GO386=sse2", archIdentity("386", bi, true))
	assert.Equal(t, "arch arm64", archIdentity("arm64", bi, true), "no GOARM64 recorded")
	assert.NotEqual(t, archIdentity("amd64", nil, false), archIdentity("386", nil, false))
	assert.True(t, strings.HasPrefix(archID, "arch "+runtime.GOARCH), archID)
}
