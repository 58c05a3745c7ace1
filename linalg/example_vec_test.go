package linalg_test

import (
	"fmt"

	"github.com/dpmf/dpmf/linalg"
)

func ExampleAxpyDot32() {
	x := []float32{1, 2, 3}
	y := []float32{1, 1, 1}
	z := []float32{1, 0, 1}
	// y becomes y + 2 x = (3, 5, 7); z . y = 3 + 7.
	fmt.Println(linalg.AxpyDot32(2, x, y, z), y, linalg.Dot32(x, z))
	// Output: 10 [3 5 7] 4
}
