package secagg

import (
	"crypto/aes"
	"encoding/binary"
	"runtime"
	"slices"
	"testing"
)

// addMask applies one mask: applyMasks with a single term.
func addMask(dst []uint64, key []byte, neg bool) { applyMasks(dst, []mask{{key: key, neg: neg}}) }

// TestAddMaskCounterMode checks the mask generator against counter mode
// written out block by block: block j of the keystream is AES-256 of the
// 128-bit big-endian counter j, read as two little-endian uint64. Lengths
// cross the 64 KiB buffer, the four-entry unrolling and applyMasks's
// chunks (odd lengths included), on one goroutine and on several.
func TestAddMaskCounterMode(t *testing.T) {
	key := []byte("an AES-256 key of 32 bytes, ok!!")
	blk, err := aes.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	rng := testRand(3)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, d := range []int{1, 2, 3, 5, 8191, 8192, 8193, 20001, maskChunk - 1, maskChunk, maskChunk + 1, 3*maskChunk + 7} {
		runtime.GOMAXPROCS(1 + d%4)
		x := make([]uint64, d)
		for i := range x {
			x[i] = rng.Uint64()
		}
		want := slices.Clone(x)
		var ctr, out [16]byte
		for j := 0; 2*j < d; j++ {
			binary.BigEndian.PutUint64(ctr[8:], uint64(j))
			blk.Encrypt(out[:], ctr[:])
			want[2*j] += binary.LittleEndian.Uint64(out[:8])
			if 2*j+1 < d {
				want[2*j+1] += binary.LittleEndian.Uint64(out[8:])
			}
		}
		got := slices.Clone(x)
		addMask(got, key, false)
		if !slices.Equal(got, want) {
			t.Fatalf("d=%d: addMask differs from counter mode written out", d)
		}
		addMask(got, key, true)
		if !slices.Equal(got, x) {
			t.Fatalf("d=%d: subtracting the mask does not undo adding it", d)
		}
		// Two masks at once, one subtracted: the first minus the second,
		// each written out.
		key2 := []byte("another AES-256 key of 32 bytes!")
		blk2, err := aes.NewCipher(key2)
		if err != nil {
			t.Fatal(err)
		}
		for j := 0; 2*j < d; j++ {
			binary.BigEndian.PutUint64(ctr[8:], uint64(j))
			blk2.Encrypt(out[:], ctr[:])
			want[2*j] -= binary.LittleEndian.Uint64(out[:8])
			if 2*j+1 < d {
				want[2*j+1] -= binary.LittleEndian.Uint64(out[8:])
			}
		}
		applyMasks(got, []mask{{key: key}, {key: key2, neg: true}})
		if !slices.Equal(got, want) {
			t.Fatalf("d=%d: two masks at once differ from counter mode written out", d)
		}
	}
}
