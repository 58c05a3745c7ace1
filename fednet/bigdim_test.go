package fednet

import (
	"crypto/sha256"
	"encoding/binary"
	"testing"
)

// A round file's header is read back for every model dimension a server
// accepts (NewServer takes Shape.Dim up to MaxWire, the protocol's int32):
// what a server writes, it resumes from. Before, a header of more than
// 2^28 entries was "inconsistent", so a plain run of a larger model
// released its rounds and then refused every restart as a damaged state
// directory ("start a new run"). The header is built by hand from the
// format (docs/distributed.md, the state directory's table); no model of
// that size is allocated: only the header and the file's size are read.
func TestRoundHeaderOfEveryAcceptedDimension(t *testing.T) {
	for _, dim := range []uint64{1, 1 << 28, 1<<28 + 1, 1 << 30, MaxWire} {
		head := []byte(roundMagic)
		head = append(head, make([]byte, 16)...) // the run's identity
		for _, v := range []uint64{3, dim, 2} {  // round, dimension, updates
			head = binary.LittleEndian.AppendUint64(head, v)
		}
		head = append(head, make([]byte, sha256.Size)...) // the previous hash
		size := int64(len(head)) + 8*int64(dim) + sha256.Size
		h, err := parseRoundHeader(head, make([]byte, sha256.Size), size)
		if err != nil {
			t.Errorf("dimension %d: %v", dim, err)
			continue
		}
		if uint64(h.dim) != dim || h.round != 3 || h.updates != 2 {
			t.Errorf("dimension %d: read round %d, dimension %d, updates %d", dim, h.round, h.dim, h.updates)
		}
		if size > maxRoundFile {
			t.Errorf("dimension %d: a round file of %d bytes is above the %d a read takes", dim, size, int64(maxRoundFile))
		}
	}
	// One past what the wire carries is no header a server writes.
	head := append([]byte(roundMagic), make([]byte, 16)...)
	for _, v := range []uint64{3, MaxWire + 1, 2} {
		head = binary.LittleEndian.AppendUint64(head, v)
	}
	head = append(head, make([]byte, sha256.Size)...)
	if _, err := parseRoundHeader(head, make([]byte, sha256.Size), int64(len(head))+8*(MaxWire+1)+sha256.Size); err == nil {
		t.Errorf("dimension %d read as a header", uint64(MaxWire+1))
	}
}
