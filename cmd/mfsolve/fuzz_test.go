package main

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/npy"
)

// fortranTrue finds a header's fortran_order set to True.
var fortranTrue = regexp.MustCompile(`'fortran_order'\s*:\s*True`)

// FuzzLoadWorkload reads arbitrary bytes as the -workload .npy file. A
// refused file gives one error line that names the flag and the file; an
// accepted one is a workload of the file's R x R matrix, entry for entry
// (the matrix read independently from the file's trailing R^2 float64s,
// transposed where the header says fortran_order True),
// whose banded inverse, when it has one, holds finite numbers only and
// agrees with the closed form of the inverse's diagonal and first
// subdiagonal.
func FuzzLoadWorkload(f *testing.F) {
	add := func(shape []int, data []float64) {
		var b bytes.Buffer
		if err := npy.Write(&b, shape, data); err != nil {
			f.Fatal(err)
		}
		f.Add(b.Bytes())
	}
	add([]int{3, 3}, []float64{1, 0, 0, 1, 1, 0, 1, 1, 1})
	add([]int{3, 3}, []float64{2, 0, 0, 0.5, 1, 0, 0.25, 0.5, 3})
	add([]int{4, 4}, []float64{1e-290, 0, 0, 0, 1e-276, 1e-290, 0, 0, 1e-276, 1e-276, 1e-290, 0, 1e-276, 1e-276, 1e-276, 1e-290})
	add([]int{2, 3}, []float64{1, 0, 0, 1, 1, 0})
	add([]int{2, 2}, []float64{1, 1, 0, 1})
	f.Add([]byte("\x93NUMPY\x01\x00\x46\x00{'descr': '<f8', 'fortran_order': True, 'shape': (2, 2), }           \n" +
		"\x00\x00\x00\x00\x00\x00\xf0\x3f\x00\x00\x00\x00\x00\x00\x00\x40\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x08\x40"))
	f.Add([]byte("\x93NUMPY"))
	dir := f.TempDir()
	path := filepath.Join(dir, "w.npy")
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		w, err := loadWorkload(path, nil)
		if err != nil {
			msg := err.Error()
			if !strings.HasPrefix(msg, "-workload "+path+": ") || strings.ContainsAny(msg, "\n\r") {
				t.Fatalf("error %q, want one line naming -workload %s", msg, path)
			}
			return
		}
		r := w.R()
		if r < 1 || len(data) < 8*r*r {
			t.Fatalf("workload of %d rounds from %d bytes", r, len(data))
		}
		m := w.Matrix()
		body := data[len(data)-8*r*r:]
		fortran := fortranTrue.Match(data[:len(data)-8*r*r])
		for i := range r {
			for j := range r {
				k := i*r + j
				if fortran {
					k = j*r + i
				}
				v := math.Float64frombits(binary.LittleEndian.Uint64(body[8*k:]))
				if got := m.At(i, j); got != v {
					t.Fatalf("workload[%d][%d] = %v, the file has %v", i, j, got, v)
				}
			}
		}
		inv, ok := w.InverseBand()
		if !ok {
			return
		}
		n, k, _ := inv.TriBand()
		big := 0.0
		for i := range n {
			for j := max(0, i-k); j <= i; j++ {
				x := inv.At(i, j)
				if math.IsNaN(x) || math.IsInf(x, 0) {
					t.Fatalf("inverse band [%d][%d] = %v", i, j, x)
				}
				big = math.Max(big, math.Abs(x))
			}
		}
		// The inverse of a lower-triangular A has, in closed form,
		// diagonal 1/A[i][i] and first subdiagonal
		// -A[i+1][i] / (A[i][i] A[i+1][i+1]). Where that entry is finite
		// and well above the band's cut (bandTol = 1e-13 of the largest
		// entry), the band must hold it.
		for i := range n {
			if d := 1 / m.At(i, i); !math.IsInf(d, 0) && math.Abs(inv.At(i, i)-d) > 1e-12*math.Abs(d) {
				t.Fatalf("inverse band [%d][%d] = %v, want 1/A[i][i] = %v", i, i, inv.At(i, i), d)
			}
			if i+1 == n {
				break
			}
			v := -m.At(i+1, i) / m.At(i, i) / m.At(i+1, i+1)
			if math.IsInf(v, 0) || math.IsNaN(v) || !(math.Abs(v) > 1e-12*big) {
				continue
			}
			if got := inv.At(i+1, i); k < 1 || math.Abs(got-v) > 1e-10*math.Abs(v) {
				t.Fatalf("inverse band (%d subdiagonals) [%d][%d] = %v, want -A[i+1][i]/(A[i][i] A[i+1][i+1]) = %v", k, i+1, i, got, v)
			}
		}
	})
}
