package main

import (
	"os"
	"strings"
	"testing"
)

// The README's "Use it as a library" section shows this program verbatim:
// its go code block must be main.go, byte for byte.
func TestREADMECopy(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(readme), "\n## Use it as a library\n")
	if !ok {
		t.Fatal(`README.md has no "## Use it as a library" section`)
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	_, block, ok := strings.Cut(sec, "\n```go\n")
	if !ok {
		t.Fatal("the library section has no go code block")
	}
	block, _, ok = strings.Cut(block, "```\n")
	if !ok {
		t.Fatal("the library section's go code block is not closed")
	}
	if block != string(src) {
		t.Errorf("README.md's library example differs from examples/library/main.go:\n--- README\n%s--- main.go\n%s", block, src)
	}
	if !strings.Contains(sec, "`loss 6628.1, RMSE 2.878, noise std 0.1380`") {
		t.Error("the library section does not quote the output that Example checks")
	}
}

// The program's output, which the README quotes: the optimal loss for 800
// rounds (docs/mechanisms.md: 6628.1, RMSE 2.878) and the exact noise std
// for clip 1 (fedopt's Fig. 4 setting has 0.690 for clip 5).
func Example() {
	main()
	// Output: loss 6628.1, RMSE 2.878, noise std 0.1380
}
