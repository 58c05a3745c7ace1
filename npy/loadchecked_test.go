package npy

import (
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestLoadChecked: the check sees the declared shape and order before any
// data is read, and its error ends the load as the cause of a *FileError
// naming the file; a file too short for its shape is reported as
// truncated without asking the check; a check that accepts gives Load's
// result (here a Fortran-order 2 x 3 array, transposed by hand).
func TestLoadChecked(t *testing.T) {
	dir := t.TempDir()
	data := make([]byte, 0, 48)
	for _, v := range []float64{1, 4, 2, 5, 3, 6} { // Fortran order of [[1 2 3] [4 5 6]]
		data = binary.LittleEndian.AppendUint64(data, math.Float64bits(v))
	}
	header := "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }\n"
	good := filepath.Join(dir, "good.npy")
	if err := os.WriteFile(good, npyBytes(1, header, data), 0o644); err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(dir, "short.npy")
	if err := os.WriteFile(short, npyBytes(1, header, data[:40]), 0o644); err != nil {
		t.Fatal(err)
	}

	var gotShape []int
	var gotFortran, called bool
	refuse := errors.New("too large for this test")
	a, err := LoadChecked(good, func(shape []int, fortran bool) error {
		gotShape, gotFortran, called = shape, fortran, true
		return refuse
	})
	var fe *FileError
	if !errors.As(err, &fe) || fe.Path != good || !errors.Is(err, refuse) || a.Data != nil {
		t.Errorf("refused load: %v (%#v), want a *FileError on %s with the check's error", err, a, good)
	}
	if !called || !slices.Equal(gotShape, []int{2, 3}) || !gotFortran {
		t.Errorf("check saw shape %v, fortran %v (called %v), want [2 3], true", gotShape, gotFortran, called)
	}

	called = false
	_, err = LoadChecked(short, func([]int, bool) error { called = true; return nil })
	if err == nil || !strings.Contains(err.Error(), "truncated data") || called {
		t.Errorf("short file: %v (check called: %v), want a truncated-data error before the check", err, called)
	}

	a, err = LoadChecked(good, func([]int, bool) error { return nil })
	if err != nil || !slices.Equal(a.Shape, []int{2, 3}) || !slices.Equal(a.Data, []float64{1, 2, 3, 4, 5, 6}) {
		t.Errorf("accepted load: %v, %v; want shape [2 3] and data 1..6 in C order", a, err)
	}
}
