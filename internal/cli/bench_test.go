package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"testing"

	"github.com/dpmf/dpmf/internal/testutil"
)

// BenchmarkWriteOutputsBesideEntries measures WriteOutputs of one one-byte
// output into a directory that holds n other files: the directory is
// listed for temporary files of dead writers (removed) and of unproven
// ones (named), so its cost grows with n.
//
//	go test -run - -bench WriteOutputsBesideEntries -benchtime 20x ./internal/cli/
func BenchmarkWriteOutputsBesideEntries(b *testing.B) {
	for _, n := range []int{0, 1000, 100000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			dir := b.TempDir()
			testutil.FillDir(b, dir, n)
			out := Output{File: File{Flag: "-o", Path: filepath.Join(dir, "out")}, Perm: 0o644, Write: func(w io.Writer) error {
				_, err := io.WriteString(w, "x")
				return err
			}}
			b.ResetTimer()
			for range b.N {
				if err := WriteOutputs(context.Background(), io.Discard, "bench: ", out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
