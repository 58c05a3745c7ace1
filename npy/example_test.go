package npy_test

import (
	"bytes"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"gonum.org/v1/gonum/mat"

	"github.com/dpmf/dpmf/npy"
)

func ExampleWrite() {
	var buf bytes.Buffer
	data := []float64{1, 2, 3, 4, 5, 6} // a 2x3 array in row-major order
	if err := npy.Write(&buf, []int{2, 3}, data); err != nil {
		log.Fatal(err)
	}
	b := buf.Bytes()
	headerLen := int(b[8]) | int(b[9])<<8
	fmt.Printf("magic %q, version %d.%d\n", b[:6], b[6], b[7])
	fmt.Printf("header %q\n", bytes.TrimRight(b[10:10+headerLen], " \n"))
	fmt.Printf("data starts at byte %d, file is %d bytes\n", 10+headerLen, len(b))
	// Output:
	// magic "\x93NUMPY", version 1.0
	// header "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }"
	// data starts at byte 128, file is 176 bytes
}

func ExampleRead() {
	var buf bytes.Buffer
	if err := npy.Write(&buf, []int{2, 2}, []float64{1, -2.5, 0, 1e-9}); err != nil {
		log.Fatal(err)
	}
	a, err := npy.Read(&buf)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(a.Shape, a.Data)

	// Anything but little-endian float64 is rejected with a one-line error.
	_, err = npy.Read(bytes.NewReader([]byte("not an array")))
	fmt.Println(err)
	// Output:
	// [2 2] [1 -2.5 0 1e-09]
	// npy: read .npy: not a .npy file: it does not start with "\x93NUMPY"
}

func ExampleSaveDense() {
	dir, err := os.MkdirTemp("", "npy-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "m.npy")

	m := mat.NewDense(3, 3, []float64{
		1, 2, 3,
		4, 5, 6,
		7, 8, 9,
	})
	// A view of the lower-right 2x2 block; SaveDense copes with its stride.
	if err := npy.SaveDense(path, m.Slice(1, 3, 1, 3).(*mat.Dense)); err != nil {
		log.Fatal(err)
	}
	a, err := npy.Load(path)
	if err != nil {
		log.Fatal(err)
	}
	d, err := a.Dense()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(a.Shape)
	fmt.Printf("%v\n", mat.Formatted(d))
	// Output:
	// [2 2]
	// ⎡5  6⎤
	// ⎣8  9⎦
}
