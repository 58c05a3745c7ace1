package main

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/internal/cli"
)

// Every setting of every strategy reaches its solver: mfsolve with a spec
// reports the loss that the library computes for the strategy value
// written out by hand, and a setting that changes the factorization
// changes the loss.
func TestSpecSettingsReachTheSolver(t *testing.T) {
	const r = 32
	w, err := factorize.Prefix(r)
	require.NoError(t, err)
	single, minsep := factorize.SingleParticipation(), factorize.MinSeparation(4, 0)
	for _, tc := range []struct {
		spec, participation string
		s                   factorize.Strategy
		p                   factorize.Participation
		changes             bool // the loss differs from the default's
	}{
		{"banded:bands=3", "single", factorize.BandedStrategy{Bands: 3}, single, true},
		{"banded:bands=3,tol=1e-4,max-iter=50000", "minsep:4", factorize.BandedStrategy{Bands: 3, Tol: 1e-4, MaxIter: 50000}, minsep, true},
		{"bsr:bands=3", "single", factorize.BSRStrategy{Bands: 3}, single, true},
		{"banded-toeplitz:bands=3", "single", factorize.BandedToeplitzStrategy{Bands: 3}, single, true},
		{"bisr:bands=3", "single", factorize.BISRStrategy{Bands: 3}, single, true},
		{"bandinv:bands=3", "single", factorize.BandInvStrategy{Bands: 3}, single, true},
		{"blt:buffers=1", "single", factorize.BLTStrategy{Buffers: 1}, single, true},
		{"semiseparable:buffers=1", "single", factorize.SemisepStrategy{Buffers: 1, Factors: true}, single, true},
		{"semiseparable:max-excess=0.5,tol=1e-6,max-iter=50000", "single", factorize.SemisepStrategy{MaxExcess: 0.5, Tol: 1e-6, MaxIter: 50000, Factors: true}, single, true},
		{"optimal:tol=1e-3", "single", factorize.OptimalStrategy{Options: factorize.Options{Tol: 1e-3}}, single, true},
		{"optimal:path=dense,max-iter=50000", "single", factorize.OptimalStrategy{Options: factorize.Options{Method: factorize.Dense, MaxIter: 50000}}, single, false},
	} {
		res := runT(t, "-R", "32", "-strategy", tc.spec, "-participation", tc.participation, "-no-cache", "-json")
		require.Equal(t, cli.ExitOK, res.code, "%s: %s", tc.spec, res.stderr)
		got := parseJSON(t, res.stdout)["loss"].(float64)
		f, err := tc.s.Factorize(context.Background(), w, tc.p)
		require.NoError(t, err, tc.spec)
		require.InEpsilon(t, f.Metrics.Loss, got, 1e-12, tc.spec)
		def, err := factorize.ParseStrategy(tc.s.Name())
		require.NoError(t, err)
		def, _ = factorize.WithLossOnly(def, false)
		fd, err := def.Factorize(context.Background(), w, tc.p)
		require.NoError(t, err, tc.spec)
		if differs := math.Abs(fd.Metrics.Loss/got-1) > 1e-9; differs != tc.changes {
			t.Errorf("%s: loss %v, default's %v: changed %t, want %t", tc.spec, got, fd.Metrics.Loss, differs, tc.changes)
		}
	}
}

// TestSemisepMaxExcessWithBuffers: max-excess is the excess allowed when
// semiseparable chooses its number of buffers K; with K given it has
// nothing to choose, and mfsolve -R 16 -strategy
// semiseparable:buffers=3,max-excess=0.5 printed the same loss as
// buffers=3 alone (45.6758968815), the setting silently ignored (and a
// second cache entry for one factorization). A setting that would be
// ignored is a usage error, as banded's tol outside minsep is; the library
// refuses the strategy value too.
func TestSemisepMaxExcessWithBuffers(t *testing.T) {
	res := runT(t, "-R", "16", "-strategy", "semiseparable:buffers=3,max-excess=0.5", "-no-cache")
	require.Equal(t, cli.ExitUsage, res.code, res.stderr)
	requireOneErrorLine(t, res.stderr, "max-excess only without buffers")
	require.Empty(t, res.stdout)

	w, err := factorize.Prefix(16)
	require.NoError(t, err)
	_, err = factorize.SemisepStrategy{Buffers: 3, MaxExcess: 0.5}.Factorize(context.Background(), w, factorize.SingleParticipation())
	require.ErrorContains(t, err, "max-excess only without buffers")

	// Each alone is fine.
	for _, spec := range []string{"semiseparable:buffers=3", "semiseparable:max-excess=0.5"} {
		res := runT(t, "-R", "16", "-strategy", spec, "-no-cache")
		require.Equal(t, cli.ExitOK, res.code, "%s: %s", spec, res.stderr)
	}
}
