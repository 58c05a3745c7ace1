package cli

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

// failAfter accepts n writes, then fails every write with errFull and
// counts the calls.
type failAfter struct {
	n, calls int
}

var errFull = errors.New("no space left on device")

func (f *failAfter) Write(p []byte) (int, error) {
	f.calls++
	if f.calls > f.n {
		return 0, errFull
	}
	return len(p), nil
}

// StickyWriter passes writes on until one fails, then returns that error
// for every later write without passing it on, and keeps it in Err.
func TestStickyWriter(t *testing.T) {
	w := &failAfter{n: 2}
	s := &StickyWriter{W: w}
	for i := 0; i < 2; i++ {
		n, err := s.Write([]byte("abc"))
		assert.Equal(t, 3, n)
		assert.NoError(t, err)
	}
	assert.NoError(t, s.Err)
	for i := 0; i < 3; i++ {
		_, err := s.Write([]byte("abc"))
		assert.ErrorIs(t, err, errFull)
	}
	assert.ErrorIs(t, s.Err, errFull)
	assert.Equal(t, 3, w.calls, "writes after the failure must not reach W")
}
