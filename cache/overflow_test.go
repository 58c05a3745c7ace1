package cache_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"os"
	"testing"

	"github.com/dpmf/dpmf/cache"
	"github.com/dpmf/dpmf/factorize"
)

// An entry whose metadata claims R = m = 2^30 with factors declares
// 16 R m = 2^64 bytes of B and C, which wrapped to 0 in int64: the size
// check then accepted a file holding no factors at all, and the load
// allocated a 2^30 x 2^30 matrix from the header's claim (a panic,
// makeslice: len out of range) instead of reporting a corrupt entry. The
// sizes are now checked against the file before they are multiplied out.
func TestLoadEntryDeclaredSizeOverflow(t *testing.T) {
	dir := t.TempDir()
	c := &cache.Cache{Dir: dir, Budget: cache.Unlimited}
	s, err := factorize.ParseStrategy("tree")
	if err != nil {
		t.Fatal(err)
	}
	w, err := factorize.Prefix(5)
	if err != nil {
		t.Fatal(err)
	}
	p := factorize.SingleParticipation()
	f, _, err := c.Compute(context.Background(), s, w, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	key, err := cache.Key(s, w, p)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(c.Path(key))
	if err != nil {
		t.Fatal(err)
	}
	// The layout of docs/cli.md, "Format": magic (8), version (4),
	// metadata length L (4), L bytes of JSON, B and C (16 R m bytes), the
	// operator's floats, the SHA-256.
	const head = 16
	metaLen := int(binary.LittleEndian.Uint32(b[12:16]))
	meta := b[head : head+metaLen]
	r, m := f.B.Dims()
	rest := b[head+metaLen+16*r*m : len(b)-sha256.Size] // the operator's floats
	for _, dims := range [][2]int{{1 << 30, 1 << 30}, {1 << 30, 1 << 29}, {1 << 29, 1 << 30}} {
		old := []byte(`"R":5,"m":` + itoa(m) + `,`)
		if !bytes.Contains(meta, old) {
			t.Fatalf("metadata %s has no %s", meta, old)
		}
		js := bytes.Replace(meta, old, []byte(`"R":`+itoa(dims[0])+`,"m":`+itoa(dims[1])+`,`), 1)
		var body []byte
		body = append(body, b[:12]...)
		body = binary.LittleEndian.AppendUint32(body, uint32(len(js)))
		body = append(body, js...)
		body = append(body, rest...)
		sum := sha256.Sum256(body)
		body = append(body, sum[:]...)
		if err := os.WriteFile(c.Path(key), body, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := c.Load(s, w, p)
		var ce *cache.CorruptError
		if !errors.As(err, &ce) {
			t.Errorf("R x m = %d x %d with no factors in the file: %v, want a *CorruptError", dims[0], dims[1], err)
		}
	}
}

func itoa(n int) string {
	var b []byte
	for {
		b = append([]byte{byte('0' + n%10)}, b...)
		if n /= 10; n == 0 {
			return string(b)
		}
	}
}
