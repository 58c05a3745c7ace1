package npy

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// The expected bytes in these tests are built by hand from the format
// description (numpy.lib.format), independently of npy.go: the little-endian
// byte order is spelled out with shifts and the header padding is counted
// by hand in the comments.

// le64 returns the little-endian IEEE 754 bytes of vals.
func le64(vals ...float64) []byte {
	var b []byte
	for _, v := range vals {
		u := math.Float64bits(v)
		for i := range 8 {
			b = append(b, byte(u>>(8*i)))
		}
	}
	return b
}

// npyBytes assembles a .npy file: magic, version major.0, the header length
// (2 bytes for version 1, 4 otherwise, little-endian), header, data.
func npyBytes(major byte, header string, data []byte) []byte {
	b := []byte("\x93NUMPY")
	b = append(b, major, 0)
	n := len(header)
	b = append(b, byte(n), byte(n>>8))
	if major != 1 {
		b = append(b, byte(n>>16), byte(n>>24))
	}
	b = append(b, header...)
	return append(b, data...)
}

// withBothByteOrderPaths runs f once with the zero-copy little-endian path
// (when the host is little-endian) and once with the portable conversion.
func withBothByteOrderPaths(t *testing.T, f func(t *testing.T)) {
	native := nativeLittleEndian
	t.Cleanup(func() { nativeLittleEndian = native })
	if native {
		t.Run("view", f)
	}
	nativeLittleEndian = false
	t.Run("convert", f)
	nativeLittleEndian = native
}

func TestWriteNPYGolden(t *testing.T) {
	tests := []struct {
		name   string
		shape  []int
		data   []float64
		want   []byte
		hlenLE string // the two header-length bytes, by hand
	}{
		{
			// dict "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }"
			// is 59 bytes; NumPy adds 21-len("2") = 20 growth spaces: 79.
			// 10 (magic, version, length) + 79 + 1 ('\n') = 90, so 38 more
			// spaces reach 128. Header length 128-10 = 118 = 0x76.
			name:  "2x3",
			shape: []int{2, 3},
			data:  []float64{1, 2, 3, 4, 5, 6},
			want: slicesConcat(
				[]byte("\x93NUMPY\x01\x00\x76\x00"),
				[]byte("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }"+strings.Repeat(" ", 20+38)+"\n"),
				le64(1, 2, 3, 4, 5, 6)),
		},
		{
			// dict with 'shape': (5,) is 57 bytes, + 20 growth = 77,
			// 10 + 77 + 1 = 88, 40 pad spaces to 128; header length 118.
			name:  "1-D",
			shape: []int{5},
			data:  []float64{0.5, -1, math.Inf(1), 1e300, math.SmallestNonzeroFloat64},
			want: slicesConcat(
				[]byte("\x93NUMPY\x01\x00\x76\x00"),
				[]byte("{'descr': '<f8', 'fortran_order': False, 'shape': (5,), }"+strings.Repeat(" ", 20+40)+"\n"),
				le64(0.5, -1, math.Inf(1), 1e300, math.SmallestNonzeroFloat64)),
		},
		{
			// 'shape': () gives a 55-byte dict and no growth space (0-D);
			// 10 + 55 + 1 = 66, 62 pad spaces to 128; header length 118.
			name:  "0-D",
			shape: []int{},
			data:  []float64{math.Copysign(0, -1)},
			want: slicesConcat(
				[]byte("\x93NUMPY\x01\x00\x76\x00"),
				[]byte("{'descr': '<f8', 'fortran_order': False, 'shape': (), }"+strings.Repeat(" ", 62)+"\n"),
				[]byte{0, 0, 0, 0, 0, 0, 0, 0x80}),
		},
		{
			// 15 dimensions of 1: the shape text is 2 + 15 + 14*2 = 45 bytes,
			// the dict 53 + 45 = 98, + 20 growth = 118. 10 + 118 + 1 = 129 > 128,
			// so the data starts at 192: 63 pad spaces, header length
			// 192-10 = 182 = 0xb6. (Without NumPy's growth space the header
			// would fit in 128 bytes; this case pins that rule.)
			name:  "15-D",
			shape: []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
			data:  []float64{7},
			want: slicesConcat(
				[]byte("\x93NUMPY\x01\x00\xb6\x00"),
				[]byte("{'descr': '<f8', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1), }"+strings.Repeat(" ", 20+63)+"\n"),
				le64(7)),
		},
		{
			// (0, 3): same dict length as (2, 3), no data.
			name:  "empty",
			shape: []int{0, 3},
			data:  nil,
			want: slicesConcat(
				[]byte("\x93NUMPY\x01\x00\x76\x00"),
				[]byte("{'descr': '<f8', 'fortran_order': False, 'shape': (0, 3), }"+strings.Repeat(" ", 58)+"\n")),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			withBothByteOrderPaths(t, func(t *testing.T) {
				var buf bytes.Buffer
				require.NoError(t, Write(&buf, tc.shape, tc.data))
				assert.Equal(t, tc.want, buf.Bytes())
				assert.Zero(t, (len(tc.want)-8*len(tc.data))%64, "test's own header is not 64-aligned")
			})
		})
	}
}

func slicesConcat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// recordingWriter records each Write call.
type recordingWriter struct{ calls [][]byte }

func (w *recordingWriter) Write(p []byte) (int, error) {
	w.calls = append(w.calls, p)
	return len(p), nil
}

func TestWriteNPYWritesDataInOneCallWithoutCopy(t *testing.T) {
	data := make([]float64, 1000)
	for i := range data {
		data[i] = float64(i)
	}
	var w recordingWriter
	require.NoError(t, Write(&w, []int{10, 100}, data))
	require.Len(t, w.calls, 2)
	assert.Len(t, w.calls[0], 128)
	assert.Len(t, w.calls[1], 8000)
	assert.Equal(t, le64(data...), w.calls[1])
	if nativeLittleEndian {
		assert.Equal(t, unsafe.Pointer(&data[0]), unsafe.Pointer(&w.calls[1][0]), "data was copied")
	}
}

func TestWriteNPYErrors(t *testing.T) {
	var buf bytes.Buffer
	err := Write(&buf, []int{2, 3}, make([]float64, 5))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "(2, 3) holds 6 values, data has 5")

	err = Write(&buf, []int{-1, 3}, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "negative dimension -1")

	err = Write(&buf, make([]int, 65), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "65 dimensions")

	const big = 1 << (strconv.IntSize/2 + 8) // 2^40, or 2^24 on a 32-bit platform: big^2 overflows an int
	err = Write(&buf, []int{big, big}, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "too many elements")
	assert.Zero(t, buf.Len(), "nothing may be written for an invalid shape")

	boom := errors.New("disk full")
	for fail := range 2 { // fail on the header write, then on the data write
		w := &failingWriter{okCalls: fail, err: boom}
		err = Write(w, []int{2}, []float64{1, 2})
		assert.ErrorIs(t, err, boom)
	}
}

type failingWriter struct {
	okCalls int
	err     error
}

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.okCalls == 0 {
		return 0, w.err
	}
	w.okCalls--
	return len(p), nil
}

// randomArrayData returns n values from rng with special values mixed in.
func randomArrayData(rng *rand.Rand, n int) []float64 {
	special := []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0,
		math.SmallestNonzeroFloat64, math.MaxFloat64, -math.MaxFloat64}
	data := make([]float64, n)
	for i := range data {
		if rng.IntN(4) == 0 {
			data[i] = special[rng.IntN(len(special))]
		} else {
			data[i] = rng.NormFloat64() * math.Pow(10, float64(rng.IntN(40)-20))
		}
	}
	// A NaN with a payload other than the default must survive too.
	if n > 0 {
		data[n-1] = math.Float64frombits(0x7ff8_0000_dead_beef)
	}
	return data
}

func requireSameBits(t *testing.T, want, got []float64) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		require.Equal(t, math.Float64bits(want[i]), math.Float64bits(got[i]), "element %d: want %v, got %v", i, want[i], got[i])
	}
}

var roundTripShapes = [][]int{{}, {5}, {2, 3}, {0, 3}, {3, 0}, {0}, {1, 1}, {100, 7}, {2, 3, 4}, {4099, 3}}

func TestNPYRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	withBothByteOrderPaths(t, func(t *testing.T) {
		for _, shape := range roundTripShapes {
			n := 1
			for _, d := range shape {
				n *= d
			}
			data := randomArrayData(rng, n)
			var buf bytes.Buffer
			require.NoError(t, Write(&buf, shape, data))
			raw := buf.Bytes()

			// The data starts on a 64-byte boundary right after a '\n'.
			hlen := int(raw[8]) | int(raw[9])<<8
			require.Zero(t, (10+hlen)%64, "shape %v", shape)
			require.Equal(t, byte('\n'), raw[10+hlen-1])
			require.Equal(t, 10+hlen+8*n, len(raw))

			readers := map[string]io.Reader{
				"bytes":    bytes.NewReader(raw),
				"one-byte": iotest.OneByteReader(bytes.NewReader(raw)),
				"half":     iotest.HalfReader(bytes.NewReader(raw)),
			}
			for name, r := range readers {
				a, err := Read(r)
				require.NoError(t, err, "shape %v reader %s", shape, name)
				assert.Equal(t, shape, a.Shape)
				requireSameBits(t, data, a.Data)
			}

			path := filepath.Join(t.TempDir(), "a.npy")
			require.NoError(t, Save(path, shape, data))
			onDisk, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, raw, onDisk)
			a, err := Load(path)
			require.NoError(t, err)
			requireSameBits(t, data, a.Data)
		}
	})
}

// header2x3 is the header np.save writes for a (2, 3) C-order float64
// array, with the key order and spacing varied by the tests below.
const header2x3 = "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }"

func TestReadNPYVersions(t *testing.T) {
	data := le64(1, 2, 3, 4, 5, 6)
	// Version 2.0 and 3.0 headers need no padding or newline to be read;
	// these are deliberately unaligned, with a different key order.
	for _, major := range []byte{2, 3} {
		for _, header := range []string{
			header2x3 + strings.Repeat(" ", 54) + "\n",
			"{'shape': (2, 3), 'descr': '<f8', 'fortran_order': False}",
			"{\"fortran_order\": False, \"shape\": (2, 3), \"descr\": \"<f8\"}\n",
		} {
			a, err := Read(bytes.NewReader(npyBytes(major, header, data)))
			require.NoError(t, err, "version %d header %q", major, header)
			assert.Equal(t, []int{2, 3}, a.Shape)
			assert.Equal(t, []float64{1, 2, 3, 4, 5, 6}, a.Data)
		}
	}
}

func TestReadNPYLenientHeaders(t *testing.T) {
	tests := []struct {
		name   string
		major  byte
		header string
		shape  []int
	}{
		{"numpy 1.0", 1, header2x3 + strings.Repeat(" ", 58) + "\n", []int{2, 3}},
		{"no trailing comma", 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3)}", []int{2, 3}},
		{"whitespace everywhere", 1, " \t{ 'descr' : '<f8' ,\n 'fortran_order' :\tFalse , 'shape' : ( 2 , 3 , ) , }\r\n  ", []int{2, 3}},
		{"keys reordered", 1, "{'shape': (2, 3), 'fortran_order': False, 'descr': '<f8', }", []int{2, 3}},
		{"double quotes", 1, `{"descr": "<f8", "fortran_order": False, "shape": (2, 3), }`, []int{2, 3}},
		{"python 2 longs", 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2L, 3L), }", []int{2, 3}},
		{"python 2 longs v2", 2, "{'descr': '<f8', 'fortran_order': False, 'shape': (6L,), }", []int{6}},
		{"1-D", 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (6,), }\n", []int{6}},
		{"3-D", 3, "{'descr': '<f8', 'fortran_order': False, 'shape': (1, 2, 3), }\n", []int{1, 2, 3}},
		{"minus zero", 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (-0, 2, 3), }", []int{0, 2, 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := 1
			for _, d := range tc.shape {
				n *= d
			}
			vals := make([]float64, n)
			for i := range vals {
				vals[i] = float64(i + 1)
			}
			a, err := Read(bytes.NewReader(npyBytes(tc.major, tc.header, le64(vals...))))
			require.NoError(t, err)
			assert.Equal(t, tc.shape, a.Shape)
			assert.Equal(t, vals, a.Data)
		})
	}
}

func TestReadNPYFortranOrder(t *testing.T) {
	// The 2x3 matrix [[1 2 3] [4 5 6]] stored column by column.
	header := "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }" + strings.Repeat(" ", 59) + "\n"
	withBothByteOrderPaths(t, func(t *testing.T) {
		a, err := Read(bytes.NewReader(npyBytes(1, header, le64(1, 4, 2, 5, 3, 6))))
		require.NoError(t, err)
		assert.Equal(t, []int{2, 3}, a.Shape)
		assert.Equal(t, []float64{1, 2, 3, 4, 5, 6}, a.Data)
	})

	// A 2x3x4 array with element (i, j, k) = 100i + 10j + k. Fortran order
	// stores it at offset i + 2j + 6k; C order at 12i + 4j + k.
	var f [24]float64
	for i := range 2 {
		for j := range 3 {
			for k := range 4 {
				f[i+2*j+6*k] = float64(100*i + 10*j + k)
			}
		}
	}
	a, err := Read(bytes.NewReader(npyBytes(1, "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3, 4), }", le64(f[:]...))))
	require.NoError(t, err)
	for i := range 2 {
		for j := range 3 {
			for k := range 4 {
				assert.Equal(t, float64(100*i+10*j+k), a.Data[12*i+4*j+k], "(%d,%d,%d)", i, j, k)
			}
		}
	}

	// 1-D and empty arrays are the same in both orders.
	a, err = Read(bytes.NewReader(npyBytes(1, "{'descr': '<f8', 'fortran_order': True, 'shape': (3,), }", le64(1, 2, 3))))
	require.NoError(t, err)
	assert.Equal(t, []float64{1, 2, 3}, a.Data)
	a, err = Read(bytes.NewReader(npyBytes(1, "{'descr': '<f8', 'fortran_order': True, 'shape': (0, 4), }", nil)))
	require.NoError(t, err)
	assert.Empty(t, a.Data)
}

// dictWith returns a header dict with the given descr, fortran_order and
// shape texts.
func dictWith(descr, fortran, shape string) string {
	return "{'descr': " + descr + ", 'fortran_order': " + fortran + ", 'shape': " + shape + ", }"
}

func TestReadNPYErrors(t *testing.T) {
	good := npyBytes(1, header2x3, le64(1, 2, 3, 4, 5, 6))
	half := strconv.Itoa(1 << (strconv.IntSize / 2)) // 2^32, or 2^16 on a 32-bit platform: half^2 elements overflow
	tests := []struct {
		name  string
		input []byte
		want  []string // substrings of the error message
	}{
		{"empty", nil, []string{"not a .npy file"}},
		{"short", []byte("\x93NUM"), []string{"not a .npy file"}},
		{"png", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR"), []string{"not a .npy file"}},
		{"lowercase magic", append([]byte("\x93numpy"), good[6:]...), []string{"not a .npy file"}},
		{"no version", []byte("\x93NUMPY\x01"), []string{"truncated header"}},
		{"version 4.0", append([]byte("\x93NUMPY\x04\x00"), good[8:]...), []string{"unsupported .npy format version 4.0"}},
		{"version 1.1", append([]byte("\x93NUMPY\x01\x01"), good[8:]...), []string{"unsupported .npy format version 1.1"}},
		{"version 0.0", append([]byte("\x93NUMPY\x00\x00"), good[8:]...), []string{"unsupported .npy format version 0.0"}},
		{"no header length", []byte("\x93NUMPY\x02\x00\x10\x00"), []string{"truncated header", "header length"}},
		{"short header", good[:40], []string{"truncated header", "header length is 59 bytes, file has 30"}},
		{"huge header length", []byte("\x93NUMPY\x02\x00\xff\xff\xff\xff{"), []string{"header length 4294967295 exceeds"}},
		{"v3 invalid utf-8", npyBytes(3, "{'descr': '<f8\xff', 'fortran_order': False, 'shape': (2, 3), }", nil), []string{"malformed header", "UTF-8"}},

		{"big-endian", npyBytes(1, dictWith("'>f8'", "False", "(2, 3)"), le64(1, 2, 3, 4, 5, 6)), []string{`dtype ">f8"`, "'<f8'"}},
		{"float32", npyBytes(1, dictWith("'<f4'", "False", "(2, 3)"), make([]byte, 24)), []string{`dtype "<f4"`, "'<f8'"}},
		{"int64", npyBytes(1, dictWith("'<i8'", "False", "(2, 3)"), make([]byte, 48)), []string{`dtype "<i8"`, "'<f8'"}},
		{"native order", npyBytes(1, dictWith("'=f8'", "False", "(2, 3)"), make([]byte, 48)), []string{`dtype "=f8"`}},
		{"no order", npyBytes(1, dictWith("'f8'", "False", "(2, 3)"), make([]byte, 48)), []string{`dtype "f8"`}},
		{"structured", npyBytes(1, dictWith("[('x', '<f8')]", "False", "(2, 3)"), make([]byte, 48)), []string{"dtype", "list", "'<f8'"}},

		{"negative dim", npyBytes(1, dictWith("'<f8'", "False", "(-1, 3)"), nil), []string{"negative dimension -1"}},
		{"huge negative dim", npyBytes(1, dictWith("'<f8'", "False", "(-99999999999999999999,)"), nil), []string{"negative dimension -99999999999999999999"}},
		{"dim beyond int64", npyBytes(1, dictWith("'<f8'", "False", "(99999999999999999999,)"), nil), []string{"dimension 99999999999999999999", "too large"}},
		{"product overflows", npyBytes(1, dictWith("'<f8'", "False", "("+half+", "+half+")"), nil), []string{"too many elements"}},
		// NumPy refuses a shape whose nonzero dimensions overflow, a zero
		// one besides or not ("array is too big").
		{"zero dim and overflow", npyBytes(1, dictWith("'<f8'", "False", "("+half+", 0, "+half+")"), nil), []string{"too many elements"}},
		{"more bytes than int", npyBytes(1, dictWith("'<f8'", "False", "(1152921504606846976,)"), nil), []string{"too large"}},
		{"65 dims", npyBytes(1, dictWith("'<f8'", "False", "("+strings.Repeat("1, ", 65)+")"), le64(1)), []string{"65 dimensions"}},

		{"truncated data", npyBytes(1, header2x3, le64(1, 2, 3, 4, 5, 6)[:47]), []string{"truncated data", "(2, 3)", "needs 48 bytes, got 47"}},
		{"no data", npyBytes(1, header2x3, nil), []string{"truncated data", "needs 48 bytes, got 0"}},
		{"trailing data", npyBytes(1, header2x3, le64(1, 2, 3, 4, 5, 6, 7)), []string{"trailing bytes", "48 bytes of data for shape (2, 3)"}},
		{"trailing after empty", npyBytes(1, dictWith("'<f8'", "False", "(0,)"), []byte{0}), []string{"trailing bytes"}},
	}
	malformed := []struct{ name, header string }{
		{"empty", ""},
		{"spaces", "      \n"},
		{"not a dict", "['descr', '<f8']"},
		{"garbage after dict", header2x3 + " x"},
		{"two dicts", header2x3 + header2x3},
		{"NUL after dict", header2x3 + "\x00"},
		{"NUL in dict", "{'descr': '<f8',\x00 'fortran_order': False, 'shape': (2, 3)}"},
		{"unclosed dict", "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), "},
		{"missing key", "{'descr': '<f8', 'shape': (2, 3)}"},
		{"empty dict", "{}"},
		{"extra key", "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), 'x': 1}"},
		{"duplicate key", "{'descr': '<f8', 'descr': '<f8', 'fortran_order': False, 'shape': (2, 3)}"},
		{"missing comma", "{'descr': '<f8' 'fortran_order': False, 'shape': (2, 3)}"},
		{"double comma", "{'descr': '<f8',, 'fortran_order': False, 'shape': (2, 3)}"},
		{"missing colon", "{'descr' '<f8', 'fortran_order': False, 'shape': (2, 3)}"},
		{"bare key", "{descr: '<f8', 'fortran_order': False, 'shape': (2, 3)}"},
		{"unterminated string", "{'descr': '<f8, 'fortran_order': False, 'shape': (2, 3)}"},
		{"string ends at end", "{'descr': '<f8"},
		{"escape", `{'descr': '<f\8', 'fortran_order': False, 'shape': (2, 3)}`},
		{"mismatched quotes", `{'descr": '<f8', 'fortran_order': False, 'shape': (2, 3)}`},
		{"int not tuple", dictWith("'<f8'", "False", "(6)")},
		{"list shape", dictWith("'<f8'", "False", "[2, 3]")},
		{"string dim", dictWith("'<f8'", "False", "('2', 3)")},
		{"float dim", dictWith("'<f8'", "False", "(2.0, 3)")},
		{"bool dim", dictWith("'<f8'", "False", "(True, 3)")},
		{"nested dim", dictWith("'<f8'", "False", "((2,), 3)")},
		{"leading zero", dictWith("'<f8'", "False", "(02, 3)")},
		{"hex dim", dictWith("'<f8'", "False", "(0x2, 3)")},
		{"underscore dim", dictWith("'<f8'", "False", "(1_0, 3)")},
		{"plus sign", dictWith("'<f8'", "False", "(+2, 3)")},
		{"lone minus", dictWith("'<f8'", "False", "(-, 3)")},
		{"unclosed tuple", dictWith("'<f8'", "False", "(2, 3")},
		{"comma only tuple", dictWith("'<f8'", "False", "(,)")},
		{"double comma tuple", dictWith("'<f8'", "False", "(2,, 3)")},
		{"missing tuple comma", dictWith("'<f8'", "False", "(2 3)")},
		{"wrong closer", dictWith("'<f8'", "False", "(2, 3]")},
		{"long in version 3", ""}, // filled in below
		{"deep nesting", dictWith("'<f8'", "False", strings.Repeat("(", 100)+strings.Repeat(")", 100))},
		{"fortran as string", dictWith("'<f8'", "'False'", "(2, 3)")},
		{"fortran as int", dictWith("'<f8'", "0", "(2, 3)")},
		{"lowercase false", dictWith("'<f8'", "false", "(2, 3)")},
		{"Falsey", dictWith("'<f8'", "Falsey", "(2, 3)")},
		{"None", dictWith("'<f8'", "None", "(2, 3)")},
		{"nested dict", dictWith("{'a': 1}", "False", "(2, 3)")},
	}
	for _, m := range malformed {
		major := byte(1)
		if m.name == "long in version 3" {
			major, m.header = 3, dictWith("'<f8'", "False", "(2L, 3L)")
		}
		tests = append(tests, struct {
			name  string
			input []byte
			want  []string
		}{"malformed/" + m.name, npyBytes(major, m.header, le64(1, 2, 3, 4, 5, 6)), []string{"malformed header"}})
	}

	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(bytes.NewReader(tc.input))
			require.Error(t, err)
			msg := err.Error()
			assert.True(t, strings.HasPrefix(msg, "npy: read .npy: "), msg)
			assert.NotContains(t, msg, "\n", "error must be one line")
			for _, w := range tc.want {
				assert.Contains(t, msg, w)
			}

			// The same through a file: the error names the path, and the
			// known file size gives the same diagnosis.
			path := filepath.Join(t.TempDir(), "bad.npy")
			require.NoError(t, os.WriteFile(path, tc.input, 0o600))
			_, err = Load(path)
			require.Error(t, err)
			assert.True(t, strings.HasPrefix(err.Error(), "npy: load "+path+": "), err.Error())
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestLoadNPYCountsTrailingBytes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.npy")
	require.NoError(t, os.WriteFile(path, npyBytes(1, header2x3, le64(1, 2, 3, 4, 5, 6, 7)), 0o600))
	_, err := Load(path)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "8 trailing bytes after the 48 bytes of data for shape (2, 3)")
}

// A path that cannot be read as a file is named once, with the cause.
func TestLoadNPYDirectory(t *testing.T) {
	dir := t.TempDir()
	_, err := Load(dir)
	require.Error(t, err)
	assert.Equal(t, "npy: load "+dir+": is a directory", err.Error())
}

// Write refuses a shape NumPy cannot allocate, even with a zero dimension.
func TestWriteNPYZeroDimOverflow(t *testing.T) {
	half := 1 << (strconv.IntSize / 2)
	err := Write(io.Discard, []int{half, 0, half}, nil)
	var pe *ParamError
	require.ErrorAs(t, err, &pe)
	assert.Contains(t, err.Error(), "too many elements")
}

func TestLoadNPYMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.npy")
	_, err := Load(path)
	require.Error(t, err)
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.Equal(t, "npy: load "+path+": no such file or directory", err.Error())
}

func TestReadNPYPropagatesReadErrors(t *testing.T) {
	boom := errors.New("network down")
	raw := npyBytes(1, header2x3, le64(1, 2, 3, 4, 5, 6))
	for _, cut := range []int{0, 4, 9, 30, len(raw) - 8, len(raw)} {
		r := io.MultiReader(bytes.NewReader(raw[:cut]), iotest.ErrReader(boom))
		_, err := Read(r)
		assert.ErrorIs(t, err, boom, "error after %d bytes", cut)
	}
}

// allocatedBytes returns the bytes allocated while running f.
func allocatedBytes(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestReadNPYHugeShapeDoesNotAllocate(t *testing.T) {
	// 10^12 float64 values would be 8 TB; the input holds 8 bytes of data.
	// On a 32-bit platform, where an int counts at most 2^28 - 1 of them,
	// 10^8 (800 MB).
	n, need := "1000000000000", "needs 8000000000000 bytes, got 8"
	if strconv.IntSize == 32 {
		n, need = "100000000", "needs 800000000 bytes, got 8"
	}
	raw := npyBytes(1, dictWith("'<f8'", "False", "("+n+",)"), le64(1))
	var err error
	alloc := allocatedBytes(func() { _, err = Read(bytes.NewReader(raw)) })
	require.Error(t, err)
	assert.Contains(t, err.Error(), need)
	// The first chunk is npyReadChunk values (1 MiB); allow 4 MiB.
	assert.Less(t, alloc, uint64(4<<20))

	path := filepath.Join(t.TempDir(), "huge.npy")
	require.NoError(t, os.WriteFile(path, raw, 0o600))
	alloc = allocatedBytes(func() { _, err = Load(path) })
	require.Error(t, err)
	assert.Contains(t, err.Error(), need)
	assert.Less(t, alloc, uint64(1<<20))
}

func TestReadNPYGrowsBuffer(t *testing.T) {
	// More values than one read chunk, through a reader of unknown length.
	n := 3*npyReadChunk + 5
	data := randomArrayData(rand.New(rand.NewPCG(3, 4)), n)
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, []int{n}, data))
	a, err := Read(iotest.HalfReader(&buf))
	require.NoError(t, err)
	requireSameBits(t, data, a.Data)
}

func TestSaveNPYErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.npy")
	err := Save(path, []int{2, 2}, []float64{1, 2, 3})
	require.Error(t, err)
	assert.Contains(t, err.Error(), path)
	assert.Contains(t, err.Error(), "holds 4 values, data has 3")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "no file may be created for a bad shape")

	missing := filepath.Join(dir, "no", "a.npy")
	err = Save(missing, []int{1}, []float64{1})
	require.Error(t, err)
	assert.Contains(t, err.Error(), filepath.Dir(missing))
	assert.ErrorIs(t, err, fs.ErrNotExist)
}

func TestSaveDense(t *testing.T) {
	// big is the 4x5 matrix with element (i, j) = 5i + j.
	vals := make([]float64, 20)
	for i := range vals {
		vals[i] = float64(i)
	}
	big := mat.NewDense(4, 5, vals)
	tests := []struct {
		name  string
		m     *mat.Dense
		shape []int
		want  []float64
	}{
		{"whole", big, []int{4, 5}, vals},
		// Rows 1-2, all columns: stride equals the column count but the
		// backing slice runs on past the view.
		{"row slice", big.Slice(1, 3, 0, 5).(*mat.Dense), []int{2, 5}, []float64{5, 6, 7, 8, 9, 10, 11, 12, 13, 14}},
		// Rows 1-2, columns 1-3: stride 5, three columns.
		{"strided view", big.Slice(1, 3, 1, 4).(*mat.Dense), []int{2, 3}, []float64{6, 7, 8, 11, 12, 13}},
		{"column", big.Slice(0, 4, 2, 3).(*mat.Dense), []int{4, 1}, []float64{2, 7, 12, 17}},
		{"empty", &mat.Dense{}, []int{0, 0}, []float64{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "m.npy")
			require.NoError(t, SaveDense(path, tc.m))
			a, err := Load(path)
			require.NoError(t, err)
			assert.Equal(t, tc.shape, a.Shape)
			assert.Equal(t, tc.want, a.Data)
			if len(tc.want) == 0 {
				return
			}
			d, err := a.Dense()
			require.NoError(t, err)
			assert.True(t, mat.Equal(tc.m, d))
		})
	}
	assert.Equal(t, float64(0), big.At(0, 0), "SaveDense must not modify its input")
}

func TestArrayDenseErrors(t *testing.T) {
	tests := []struct {
		a    Array
		want string
	}{
		{Array{Shape: []int{6}, Data: make([]float64, 6)}, "shape (6,) is 1-D, want 2-D"},
		{Array{Shape: []int{1, 2, 3}, Data: make([]float64, 6)}, "shape (1, 2, 3) is 3-D, want 2-D"},
		{Array{Shape: []int{}, Data: make([]float64, 1)}, "shape () is 0-D"},
		{Array{Shape: []int{0, 3}}, "shape (0, 3) is empty"},
		{Array{Shape: []int{2, 3}, Data: make([]float64, 5)}, "holds 6 values, data has 5"},
	}
	for _, tc := range tests {
		_, err := tc.a.Dense()
		require.Error(t, err)
		assert.Contains(t, err.Error(), tc.want)
	}

	a := Array{Shape: []int{2, 3}, Data: []float64{1, 2, 3, 4, 5, 6}}
	d, err := a.Dense()
	require.NoError(t, err)
	assert.Equal(t, 6.0, d.At(1, 2))
	d.Set(0, 0, 42)
	assert.Equal(t, 42.0, a.Data[0], "Dense shares a.Data")
}

func FuzzReadNPY(f *testing.F) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, shape := range [][]int{{}, {3}, {2, 3}, {0, 2}, {1, 2, 2}} {
		n := 1
		for _, d := range shape {
			n *= d
		}
		var buf bytes.Buffer
		if err := Write(&buf, shape, randomArrayData(rng, n)); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	f.Add(npyBytes(2, "{'shape': (2,), 'descr': '<f8', 'fortran_order': False}", le64(1, 2)))
	f.Add(npyBytes(3, "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 2), }\n", le64(1, 2, 3, 4)))
	f.Add(npyBytes(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2L,), }", le64(1, 2)))
	f.Add(npyBytes(1, dictWith("'<f8'", "False", "(1000000000000,)"), le64(1)))
	f.Add([]byte("\x93NUMPY\x01\x00"))

	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := Read(bytes.NewReader(b))
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error: %q", err)
			}
			return
		}
		n, err := numElements(a.Shape)
		if err != nil || n != len(a.Data) {
			t.Fatalf("accepted shape %v with %d values: %v", a.Shape, len(a.Data), err)
		}
		var buf bytes.Buffer
		if err := Write(&buf, a.Shape, a.Data); err != nil {
			t.Fatalf("cannot write back accepted array of shape %v: %v", a.Shape, err)
		}
		back, err := Read(&buf)
		if err != nil {
			t.Fatalf("cannot read back: %v", err)
		}
		if FormatShape(back.Shape) != FormatShape(a.Shape) {
			t.Fatalf("shape %v came back as %v", a.Shape, back.Shape)
		}
		for i := range a.Data {
			if math.Float64bits(a.Data[i]) != math.Float64bits(back.Data[i]) {
				t.Fatalf("element %d: %v came back as %v", i, a.Data[i], back.Data[i])
			}
		}
		// An accepted file ends with exactly the data bytes its shape needs
		// (in C order, which Fortran order equals for up to one dimension).
		if len(a.Shape) < 2 && !bytes.Equal(b[len(b)-8*n:], le64(a.Data...)) {
			t.Fatalf("data bytes differ from the input")
		}
	})
}

func BenchmarkWriteNPY(b *testing.B) {
	const r, c = 4000, 4000
	data := make([]float64, r*c)
	for i := range data {
		data[i] = float64(i)
	}
	native := nativeLittleEndian
	defer func() { nativeLittleEndian = native }()
	for _, path := range []struct {
		name   string
		native bool
	}{{"view", true}, {"convert", false}} {
		if path.native && !native {
			continue
		}
		b.Run(path.name+"/n="+strconv.Itoa(r)+"x"+strconv.Itoa(c), func(b *testing.B) {
			nativeLittleEndian = path.native
			b.SetBytes(8 * r * c)
			for b.Loop() {
				if err := Write(io.Discard, []int{r, c}, data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// FuzzNPYRoundTrip writes arbitrary bit patterns (signalling and quiet NaN
// payloads, -0, subnormals) in a 0-D, 1-D or 2-D shape and reads them back,
// through the zero-copy path and the portable one: the data section is the
// input bytes themselves (little-endian by construction) and the values
// come back bit for bit.
func FuzzNPYRoundTrip(f *testing.F) {
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0xf0, 0x7f, 0, 0, 0, 0, 0, 0, 0, 0x80}, uint8(1), uint8(0))
	f.Add(make([]byte, 48), uint8(2), uint8(1))
	f.Add([]byte{0xef, 0xbe, 0xad, 0xde, 0, 0, 0xf8, 0x7f}, uint8(0), uint8(0))
	native := nativeLittleEndian
	f.Fuzz(func(t *testing.T, raw []byte, mode, rows uint8) {
		defer func() { nativeLittleEndian = native }()
		n := len(raw) / 8
		var shape []int
		switch mode % 3 {
		case 0:
			if n == 0 {
				return
			}
			n, shape = 1, []int{}
		case 1:
			shape = []int{n}
		case 2:
			r := 1 + int(rows)%max(1, n)
			shape = []int{r, n / r}
			n = r * (n / r)
		}
		raw = raw[:8*n]
		data := make([]float64, n)
		for i := range data {
			data[i] = math.Float64frombits(uint64(raw[8*i]) | uint64(raw[8*i+1])<<8 | uint64(raw[8*i+2])<<16 | uint64(raw[8*i+3])<<24 |
				uint64(raw[8*i+4])<<32 | uint64(raw[8*i+5])<<40 | uint64(raw[8*i+6])<<48 | uint64(raw[8*i+7])<<56)
		}
		for _, le := range []bool{native, false} {
			nativeLittleEndian = le
			var buf bytes.Buffer
			if err := Write(&buf, shape, data); err != nil {
				t.Fatalf("shape %v: %v", shape, err)
			}
			out := buf.Bytes()
			if len(out) < len(raw) || !bytes.Equal(out[len(out)-len(raw):], raw) || (len(out)-len(raw))%64 != 0 {
				t.Fatalf("shape %v: the data section is not the input bytes after a 64-byte aligned header", shape)
			}
			a, err := Read(bytes.NewReader(out))
			if err != nil {
				t.Fatalf("shape %v: %v", shape, err)
			}
			if FormatShape(a.Shape) != FormatShape(shape) || len(a.Data) != n {
				t.Fatalf("shape %v came back as %v with %d values", shape, a.Shape, len(a.Data))
			}
			for i := range data {
				if math.Float64bits(a.Data[i]) != math.Float64bits(data[i]) {
					t.Fatalf("element %d: %#x came back as %#x", i, math.Float64bits(data[i]), math.Float64bits(a.Data[i]))
				}
			}
		}
	})
}
