package atomicfile

import (
	"fmt"
	"io"
	"path/filepath"
	"testing"

	"github.com/dpmf/dpmf/internal/testutil"
)

// BenchmarkWriteBesideEntries measures a one-byte Write into a directory
// that holds n other files: every write lists the directory for dead
// writers' temporary files (removeDeadTemps), so its cost grows with n.
//
//	go test -run - -bench WriteBesideEntries -benchtime 20x ./internal/atomicfile/
func BenchmarkWriteBesideEntries(b *testing.B) {
	for _, n := range []int{0, 1000, 100000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			dir := b.TempDir()
			testutil.FillDir(b, dir, n)
			path := filepath.Join(dir, "out")
			b.ResetTimer()
			for range b.N {
				if err := Write(path, 0o644, func(w io.Writer) error { _, err := io.WriteString(w, "x"); return err }); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
