package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dpmf/dpmf/factorize"
)

func TestLineWriter(t *testing.T) {
	var b bytes.Buffer
	lw := &lineWriter{w: &b, prefix: "mfsolve: "}
	_, err := lw.Write([]byte("one\ntw"))
	require.NoError(t, err)
	assert.Equal(t, "mfsolve: one\n", b.String())
	_, err = lw.Write([]byte("o\n"))
	require.NoError(t, err)
	assert.Equal(t, "mfsolve: one\nmfsolve: two\n", b.String())
}

func TestProgressStatus(t *testing.T) {
	pr := factorize.Progress{Iter: 42, Gap: 3.14159e-8, Tol: 1e-10}
	assert.Equal(t, "iteration 42  gap 3.14e-08 (target 1e-10)", progressStatus(pr))
}

func TestProgressStatusCoarse(t *testing.T) {
	pr := factorize.Progress{Iter: 7, Gap: 0.25, Tol: 0.1, Coarse: 12500}
	assert.Equal(t, "coarse level R=12500  iteration 7  gap 2.50e-01 (target 1e-01)", progressStatus(pr))
}
