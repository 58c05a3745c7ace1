package fednet

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dpmf/dpmf/mechanism"
)

// editRun rewrites run.json's top-level field key (removes it if value is
// nil).
func editRun(t *testing.T, dir, key string, value any) {
	t.Helper()
	p := filepath.Join(dir, runFile)
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	var rec map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(data, &rec))
	if value == nil {
		delete(rec, key)
	} else {
		v, err := json.Marshal(value)
		require.NoError(t, err)
		rec[key] = v
	}
	data, err = json.MarshalIndent(rec, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p, data, 0o644))
}

// A run with noise records the noise derivation of the build that started
// it (mechanism.DerivationFingerprint, whose value
// mechanism.TestDerivationFingerprint recomputes from its documentation) in
// run.json, written before round 1 is released, and a resume under another
// derivation is refused, naming both: a build whose sampler differs
// (simulated by replacing the fingerprint this build reports), a record of
// another derivation, and a record without one (a run started by an older
// dpmf, refused like one without the operator's digest). A run without
// noise records none and resumes whatever the derivation.
func TestStateBindsNoiseDerivation(t *testing.T) {
	cur := mechanism.DerivationFingerprint()
	require.Regexp(t, regexp.MustCompile(`^dpmf/mechanism/noise-block/v1:[0-9a-f]{64}$`), cur)
	other := "dpmf/mechanism/noise-block/v1:" + strings.Repeat("0f", 32)

	dir := t.TempDir()
	st, err := openState(dir, testOptions(true))
	require.NoError(t, err)
	var rec map[string]any
	data, err := os.ReadFile(filepath.Join(dir, runFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &rec))
	assert.Equal(t, cur, rec["noise_derivation"], "run.json before the first release")
	for r := 1; r <= 2; r++ {
		require.NoError(t, st.release(Released{Round: r, Updates: 2, X: testModel(r)}))
	}
	st.lock.Close()
	require.NoError(t, reopen(dir, true), "a resume by the same build")

	refused := func(name string, reason ...string) {
		t.Helper()
		refusedRestart(t, dir, name, reason...)
	}

	noiseDerivation = func() string { return other }
	t.Cleanup(func() { noiseDerivation = mechanism.DerivationFingerprint })
	refused("a build of another derivation", "records noise derivation "+cur, "this build draws "+other)
	noiseDerivation = mechanism.DerivationFingerprint
	require.NoError(t, reopen(dir, true), "the original build again")

	orig, err := os.ReadFile(filepath.Join(dir, runFile))
	require.NoError(t, err)
	editRun(t, dir, "noise_derivation", other)
	refused("a record of another derivation", "records noise derivation "+other, "this build draws "+cur)
	editRun(t, dir, "noise_derivation", nil)
	refused("a record without a derivation", "did not record its noise derivation", cur)
	require.NoError(t, os.WriteFile(filepath.Join(dir, runFile), orig, 0o644))
	require.NoError(t, reopen(dir, true))

	plain := t.TempDir()
	newTestState(t, plain, false, 2)
	data, err = os.ReadFile(filepath.Join(plain, runFile))
	require.NoError(t, err)
	assert.NotContains(t, string(data), "noise_derivation", "a run without noise")
	noiseDerivation = func() string { return other }
	assert.NoError(t, reopen(plain, false), "a run without noise, another derivation")
}
