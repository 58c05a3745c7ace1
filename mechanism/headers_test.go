package mechanism

import (
	"runtime"
	"testing"
)

// StateBytes counts keep mode's slice headers, against the allocation
// measured by runtime.MemStats. New in keep mode and in regenerate mode
// differ only in the index of the kept rows, allocated up front, so the
// difference of their TotalAlloc is the bytes those headers took. Go's
// allocator rounds each allocation up to its size class (at most 12.5%
// above the request up to 32 KiB) or to whole 8 KiB pages beyond, and
// there are two allocations, so the measured difference must lie in
// [StateBytes, 1.125 StateBytes + 16 KiB]; the least of 5 tries of each
// mode is taken, so that an allocation by another goroutine, or one that
// varies by a few bytes between calls (under -race, since New copies its
// operator), cannot fail the test. Before,
// StateBytes was 0 right after New (no row drawn yet) while New had
// allocated 12 KiB to 1.5 MiB of headers in the cases below (at d = 1 the
// headers take 48 bytes per row, 6 times the row's 8).
func TestStateBytesCountsHeaders(t *testing.T) {
	for _, r := range []int{250, 1000} {
		f := sqrtFactorization(t, r)
		if f.Operator.Memory().PastRows != r || f.Operator.NoiseRows() != r {
			t.Fatalf("sqrt R = %d: operator memory %+v, %d noise rows; want %d past rows", r, f.Operator.Memory(), f.Operator.NoiseRows(), r)
		}
		for _, dim := range []int{1, 5000, 3 * blockLen} {
			alloc := func(mode Memory) (uint64, int64) {
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				m, err := New(f, dim, 1, WithSeed(1), WithMemory(mode))
				runtime.ReadMemStats(&after)
				if err != nil {
					t.Fatal(err)
				}
				return after.TotalAlloc - before.TotalAlloc, m.StateBytes()
			}
			keepMin, regenMin := uint64(1)<<62, uint64(1)<<62
			var declared int64
			for range 5 {
				keep, sk := alloc(MemoryKeep)
				regen, sr := alloc(MemoryRegenerate)
				if sr != 0 {
					t.Fatalf("R = %d, d = %d: regenerate mode declares %d bytes before any round, want 0", r, dim, sr)
				}
				declared = sk
				keepMin, regenMin = min(keepMin, keep), min(regenMin, regen)
			}
			measured := uint64(0)
			if keepMin >= regenMin {
				measured = keepMin - regenMin
			}
			// Blocks of 4096 coordinates per row: 1, 2 and 3 here.
			blocks := int64((dim + 4095) / 4096)
			if want := int64(r) * (blocks + 1) * sliceHeader; declared != want {
				t.Errorf("R = %d, d = %d: StateBytes after New %d, want %d rows x (%d blocks + 1) x %d-byte headers = %d", r, dim, declared, r, blocks, sliceHeader, want)
			}
			if hi := 1.125*float64(declared) + 16<<10; float64(measured) < float64(declared) || float64(measured) > hi {
				t.Errorf("R = %d, d = %d: keep mode's New allocated %d bytes more than regenerate mode's; StateBytes declares %d (want the measured within [%d, %.0f])", r, dim, measured, declared, declared, hi)
			}
		}
	}
}
