package npy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"gonum.org/v1/gonum/mat"

	"github.com/dpmf/dpmf/internal/atomicfile"
)

// The NumPy .npy format (numpy.lib.format, "NEP 1"): the magic string
// "\x93NUMPY", a major and a minor version byte, the header length as a
// little-endian uint16 (version 1.0) or uint32 (2.0 and 3.0), then the header:
// a Python dict literal such as
//
//	{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }
//
// padded with spaces and ended by '\n', ASCII for 1.0 and 2.0 (NumPy decodes
// it as Latin-1) and UTF-8 for 3.0. The raw array data follows the header.
const (
	npyMagic = "\x93NUMPY"
	// npyAlign is the alignment NumPy gives the start of the data: magic,
	// version, length field and header together are a multiple of 64 bytes.
	npyAlign = 64
	// npyGrowthDigits is NumPy's GROWTH_AXIS_MAX_DIGITS: np.save leaves room
	// after the dict for the first dimension (C order) to grow to 21 digits.
	npyGrowthDigits = 21
	// npyDescr is the only dtype read and written: little-endian float64.
	npyDescr = "<f8"
	// npyMaxDims is NumPy's NPY_MAXDIMS (64 since NumPy 2.0).
	npyMaxDims = 64
	// npyMaxHeaderLen bounds the header accepted on reading. A '<f8' header
	// with 64 dimensions of 19 digits is under 2 KiB.
	npyMaxHeaderLen = 1 << 20
	// npyMaxElements keeps the data size in bytes representable as an int.
	npyMaxElements = math.MaxInt / 8
	// npyReadChunk is the number of float64 values allocated up front when
	// the amount of data available is not known; the buffer then doubles as
	// data actually arrives, so whatever the header claims, Read
	// allocates at most about max(1 MiB, twice the bytes the reader holds).
	npyReadChunk = 1 << 17
)

// nativeLittleEndian reports whether float64 values are stored in
// little-endian byte order in memory, so that '<f8' data can be read and
// written through a byte view of a []float64 without conversion. It is a
// variable so that tests can exercise the portable path.
var nativeLittleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// Array is an n-dimensional float64 array stored in C (row-major) order.
type Array struct {
	// Shape holds the length of each dimension. An empty Shape is a 0-D
	// array holding one value.
	Shape []int
	// Data holds the product of Shape values, the last index varying
	// fastest: element (i, j) of a 2-D array is Data[i*Shape[1]+j].
	Data []float64
}

// Dense returns a as an r×c matrix. It returns an error unless a is 2-D with
// no zero dimension (gonum matrices cannot be empty) and len(a.Data) matches
// the shape. The matrix shares a.Data.
func (a Array) Dense() (*mat.Dense, error) {
	if len(a.Shape) != 2 {
		return nil, fmt.Errorf("npy: Array.Dense: shape %s is %d-D, want 2-D", FormatShape(a.Shape), len(a.Shape))
	}
	if err := checkShape(a.Shape, len(a.Data)); err != nil {
		return nil, fmt.Errorf("npy: Array.Dense: %w", err)
	}
	r, c := a.Shape[0], a.Shape[1]
	if r == 0 || c == 0 {
		return nil, fmt.Errorf("npy: Array.Dense: shape %s is empty; a mat.Dense needs at least one row and column", FormatShape(a.Shape))
	}
	return mat.NewDense(r, c, a.Data), nil
}

// Write writes data with the given shape to w as a .npy file: format
// version 1.0, dtype '<f8', fortran_order False. data is in C order and
// len(data) must equal the product of shape (1 for an empty shape).
//
// The header is laid out as np.save lays it out for a C-contiguous float64
// array (numpy/lib/format.py, _write_array_header and _wrap_header, in NumPy
// releases that have GROWTH_AXIS_MAX_DIGITS): the dict keys in sorted order,
// the shape as Python's repr of a tuple ("()", "(3,)", "(2, 3)"), 21 minus
// the digits of the first dimension spaces of room for it to grow, then 1 to
// 64 spaces and '\n' so that the data starts at a multiple of 64 bytes.
//
// The header is written with one Write call and the data with a second one
// (in pieces between skipped runs on a ZeroSkipper, below); on
// little-endian hosts the data is passed to w without being copied. Where
// w is an [atomicfile.ZeroSkipper] (the writer of this module's file writes,
// such as [Save]'s) on a little-endian host, runs of at least [HoleMin]
// values of +0 (all bits zero) are skipped rather than written: the file
// reads the same but leaves holes, so that the zero upper triangle of a
// lower-triangular matrix costs neither copying nor disk.
func Write(w io.Writer, shape []int, data []float64) error {
	if w == nil {
		return &ParamError{Param: "w", Want: "a non-nil io.Writer"}
	}
	if err := checkShape(shape, len(data)); err != nil {
		return &ParamError{Param: "shape", Value: FormatShape(shape), Want: fmt.Sprintf("a shape of %d values (%v)", len(data), err)}
	}
	if _, err := w.Write(npyHeader(shape)); err != nil {
		return &FileError{Op: "write", Err: err}
	}
	if len(data) == 0 {
		return nil
	}
	if zs, ok := w.(atomicfile.ZeroSkipper); ok && nativeLittleEndian {
		if err := writeSkippingZeros(w, zs, data); err != nil {
			return &FileError{Op: "write", Err: err}
		}
		return nil
	}
	b := float64Bytes(data)
	if !nativeLittleEndian {
		b, _ = binary.Append(nil, binary.LittleEndian, data) // cannot fail for []float64
	}
	if _, err := w.Write(b); err != nil {
		return &FileError{Op: "write", Err: err}
	}
	return nil
}

// HoleMin is the least number of consecutive +0 values that [Write] skips
// on a writer that can leave holes: 4 KiB, a file system block.
const HoleMin = 512

// writeSkippingZeros writes data (little-endian host) to w, passing the
// runs of at least HoleMin values whose bits are all zero to zs instead.
// Such a run holds an aligned block of HoleMin/2 zero values, so only
// those blocks are looked into: a block with a nonzero value costs one
// comparison where its first value is nonzero, and a zero run is read
// about once.
func writeSkippingZeros(w io.Writer, zs atomicfile.ZeroSkipper, data []float64) error {
	const block = HoleMin / 2
	zero := func(v float64) bool { return math.Float64bits(v) == 0 }
	n := len(data)
	from := 0 // data[from:] is yet to be written or skipped
	for b := 0; b+block <= n; {
		if allZero(data[b : b+block]) {
			// Extend the zero run around the block.
			j, k := b, b+block
			for j > from && zero(data[j-1]) {
				j--
			}
			for k < n && zero(data[k]) {
				k++
			}
			if k-j >= HoleMin {
				if j > from {
					if _, err := w.Write(float64Bytes(data[from:j])); err != nil {
						return err
					}
				}
				if err := zs.SkipZeros(int64(k-j) * 8); err != nil {
					return err
				}
				from = k
			}
			b = (k + block) / block * block
			continue
		}
		b += block
	}
	if from < n {
		_, err := w.Write(float64Bytes(data[from:]))
		return err
	}
	return nil
}

// allZero reports whether every value of s has all bits zero, four
// values at a time.
func allZero(s []float64) bool {
	for ; len(s) >= 4; s = s[4:] {
		if math.Float64bits(s[0])|math.Float64bits(s[1])|math.Float64bits(s[2])|math.Float64bits(s[3]) != 0 {
			return false
		}
	}
	for _, v := range s {
		if math.Float64bits(v) != 0 {
			return false
		}
	}
	return true
}

// Save writes data with the given shape to the file path as Write
// does. The file is replaced atomically (see internal/atomicfile): on any
// error an existing file at path is left unchanged and no partial file is
// left behind. A new file gets permissions 0644 minus the umask; an existing
// file keeps its permissions. Only a regular file is replaced: a symbolic
// link, a device, a FIFO or a read-only file at path is an error.
func Save(path string, shape []int, data []float64) error {
	if err := checkShape(shape, len(data)); err != nil {
		return fmt.Errorf("npy: save %s: %w", path, err)
	}
	return atomicfile.Write(path, 0o644, func(w io.Writer) error {
		return Write(w, shape, data)
	})
}

// SaveDense writes m to the file path as a 2-D .npy array, as Save does.
// m may be a view with a row stride larger than its number of columns. An
// empty (zero-value) matrix is written with shape (0, 0).
func SaveDense(path string, m *mat.Dense) error {
	if m == nil {
		return &ParamError{Param: "m", Want: "a non-nil *mat.Dense"}
	}
	r, c := m.Dims()
	raw := m.RawMatrix()
	var data []float64
	switch {
	case r == 0 || c == 0:
	case raw.Stride == c:
		data = raw.Data[:r*c]
	default:
		data = mat.DenseCopyOf(m).RawMatrix().Data
	}
	return Save(path, []int{r, c}, data)
}

// Read reads a .npy file holding a float64 array from r, which must hold
// exactly one file: Read reads to the end of r and reports any bytes left
// after the data as an error.
//
// Format versions 1.0, 2.0 and 3.0 are read. The dtype must be '<f8',
// little-endian float64, which is what NumPy writes for float64 on every
// platform; other spellings of it ('=f8', 'f8', '<d') only arise in
// hand-written files, depend on the writer's byte order or are never
// produced by NumPy, and are rejected like every other dtype, with an error
// that names the dtype found. Arrays stored in Fortran order are transposed
// into C order. The header dict may list its keys in any order, with any
// whitespace, either quote character and an optional trailing comma, and may
// use Python 2 long literals such as 3L in versions 1.0 and 2.0; anything
// else that is not the literal NumPy would evaluate is an error.
//
// Read never trusts the shape in the header for memory: at most 64
// dimensions, at most math.MaxInt/8 elements, and the data buffer grows as
// bytes arrive, so a short input claiming a huge shape fails with a
// "truncated data" error after a small allocation.
func Read(r io.Reader) (Array, error) {
	if r == nil {
		return Array{}, &ParamError{Param: "r", Want: "a non-nil io.Reader"}
	}
	a, err := readNPY(r, -1, nil)
	if err != nil {
		return Array{}, &FileError{Op: "read", Err: err}
	}
	return a, nil
}

// Load reads the .npy file at path as Read does. Every error names
// path. Because the file size is known, a header that claims more or less
// data than the file holds is reported before the data is allocated.
func Load(path string) (Array, error) {
	return LoadChecked(path, nil)
}

// LoadChecked is [Load] with a check of the header: once the header is
// read and found valid, and before any data is read or allocated, check
// receives the declared shape and whether the data is in Fortran order
// (loading it then takes a second array of the same size, for the copy in
// C order). An error check returns ends the load; it is returned as the
// cause of the *[FileError], which names path. A caller can so refuse an
// array too large for the memory it has, which Load would allocate (as
// large as the file is) before the caller sees its shape. A nil check
// accepts every shape.
func LoadChecked(path string, check func(shape []int, fortran bool) error) (Array, error) {
	f, err := os.Open(path)
	if err != nil {
		return Array{}, &FileError{Op: "load", Path: path, Err: withoutPath(err, path)}
	}
	defer f.Close()
	size := int64(-1)
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		size = fi.Size()
	}
	a, err := readNPY(f, size, check)
	if err != nil {
		return Array{}, &FileError{Op: "load", Path: path, Err: withoutPath(err, path)}
	}
	return a, nil
}

// withoutPath returns the cause of a *fs.PathError on path (so that the
// FileError, which names path, does not name it twice), or err.
func withoutPath(err error, path string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == path {
		return pe.Err
	}
	return err
}

// checkShape returns an error unless every dimension of shape is
// non-negative, there are at most npyMaxDims of them and their product is n.
func checkShape(shape []int, n int) error {
	want, err := numElements(shape)
	if err != nil {
		return err
	}
	if want != n {
		return fmt.Errorf("shape %s holds %d values, data has %d", FormatShape(shape), want, n)
	}
	return nil
}

// numElements returns the product of shape, or an error if a dimension is
// negative, there are more than npyMaxDims dimensions or the product of the
// nonzero dimensions exceeds npyMaxElements (NumPy refuses such a shape as
// too big even when another dimension is zero).
func numElements(shape []int) (int, error) {
	if len(shape) > npyMaxDims {
		return 0, fmt.Errorf("shape has %d dimensions, at most %d are supported", len(shape), npyMaxDims)
	}
	n, empty := 1, false
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("negative dimension %d in shape %s", d, FormatShape(shape))
		}
		if d == 0 {
			empty = true
			continue
		}
		if d > npyMaxElements || n > npyMaxElements/d {
			return 0, fmt.Errorf("shape %s has too many elements (more than %d)", FormatShape(shape), npyMaxElements)
		}
		n *= d
	}
	if empty {
		return 0, nil
	}
	return n, nil
}

// FormatShape formats shape as Python's repr of a tuple, as the .npy
// header and this package's messages write it: "()", "(3,)", "(2, 3)".
func FormatShape(shape []int) string {
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = strconv.Itoa(d)
	}
	if len(shape) == 1 {
		return "(" + dims[0] + ",)"
	}
	return "(" + strings.Join(dims, ", ") + ")"
}

// npyHeader returns magic, version 1.0, header length and the padded header
// for a C-order '<f8' array of the given shape, laid out as NumPy's
// _write_array_header and _wrap_header do.
func npyHeader(shape []int) []byte {
	dict := "{'descr': '" + npyDescr + "', 'fortran_order': False, 'shape': " + FormatShape(shape) + ", }"
	if len(shape) > 0 {
		dict += strings.Repeat(" ", npyGrowthDigits-len(strconv.Itoa(shape[0])))
	}
	const prefix = len(npyMagic) + 2 + 2
	// NumPy always pads, by 1 to 64 spaces, before the final newline.
	pad := npyAlign - (prefix+len(dict)+1)%npyAlign
	hlen := len(dict) + pad + 1
	b := make([]byte, 0, prefix+hlen)
	b = append(b, npyMagic...)
	b = append(b, 1, 0)
	b = binary.LittleEndian.AppendUint16(b, uint16(hlen))
	b = append(b, dict...)
	b = append(b, strings.Repeat(" ", pad)...)
	return append(b, '\n')
}

// float64Bytes returns the memory of s as bytes, without copying.
func float64Bytes(s []float64) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), 8*len(s))
}

// readNPY reads one .npy file from r. size is the total size of the input
// if known, or -1. check, if not nil, is called with the header's shape
// and order before the data is read; its error ends the read.
func readNPY(r io.Reader, size int64, check func(shape []int, fortran bool) error) (Array, error) {
	var pre [8]byte
	n, err := io.ReadFull(r, pre[:])
	if err != nil && !isEOF(err) {
		return Array{}, err
	}
	if n < len(npyMagic) || string(pre[:len(npyMagic)]) != npyMagic {
		return Array{}, fmt.Errorf("not a .npy file: it does not start with %q", npyMagic)
	}
	if n < len(pre) {
		return Array{}, errors.New("truncated header: file ends inside the version number")
	}
	major, minor := pre[6], pre[7]
	var lenSize int
	switch {
	case major == 1 && minor == 0:
		lenSize = 2
	case (major == 2 || major == 3) && minor == 0:
		lenSize = 4
	default:
		return Array{}, fmt.Errorf("unsupported .npy format version %d.%d (want 1.0, 2.0 or 3.0)", major, minor)
	}
	var lenBuf [4]byte
	if _, err := io.ReadFull(r, lenBuf[:lenSize]); err != nil {
		if isEOF(err) {
			return Array{}, errors.New("truncated header: file ends inside the header length")
		}
		return Array{}, err
	}
	hlen := int64(binary.LittleEndian.Uint32(lenBuf[:]))
	if hlen > npyMaxHeaderLen {
		return Array{}, fmt.Errorf("header length %d exceeds the %d-byte limit", hlen, npyMaxHeaderLen)
	}
	header, err := io.ReadAll(io.LimitReader(r, hlen))
	if err != nil {
		return Array{}, err
	}
	if int64(len(header)) < hlen {
		return Array{}, fmt.Errorf("truncated header: header length is %d bytes, file has %d", hlen, len(header))
	}
	if major == 3 && !utf8.Valid(header) {
		return Array{}, errors.New("malformed header: version 3.0 header is not valid UTF-8")
	}
	h, err := parseNPYHeader(string(header), major <= 2)
	if err != nil {
		return Array{}, err
	}
	remaining := int64(-1)
	if size >= 0 {
		remaining = size - int64(len(pre)+lenSize) - hlen
	}
	// A file that cannot hold the shape is reported as such, before the
	// caller's check judges the shape.
	if err := checkRemaining(h.shape, h.n, remaining); err != nil {
		return Array{}, err
	}
	if check != nil {
		if err := check(slices.Clone(h.shape), h.fortran); err != nil {
			return Array{}, err
		}
	}
	data, err := readNPYData(r, h.shape, h.n, remaining)
	if err != nil {
		return Array{}, err
	}
	if h.fortran {
		data = fortranToC(h.shape, data)
	}
	return Array{Shape: h.shape, Data: data}, nil
}

func isEOF(err error) bool {
	return err == io.EOF || err == io.ErrUnexpectedEOF
}

// readNPYData reads the n float64 values of an array with the given shape
// from r and checks that r ends there. remaining is the number of bytes left
// in r if known (checkRemaining has checked it against n), or -1.
func readNPYData(r io.Reader, shape []int, n int, remaining int64) ([]float64, error) {
	need := 8 * int64(n)
	var data []float64
	if remaining >= 0 {
		data = make([]float64, n)
	} else {
		data = make([]float64, min(n, npyReadChunk))
	}
	got := 0 // values read so far
	for got < n {
		if got == len(data) {
			grow := min(n, 2*len(data)) - len(data)
			data = slices.Grow(data, grow)[:len(data)+grow]
		}
		k, err := readFloat64s(r, data[got:])
		if err != nil {
			if isEOF(err) {
				return nil, fmt.Errorf("truncated data: shape %s needs %d bytes, got %d", FormatShape(shape), need, 8*int64(got)+int64(k))
			}
			return nil, err
		}
		got += k / 8
	}
	var one [1]byte
	k, err := io.ReadFull(r, one[:])
	if k > 0 {
		return nil, fmt.Errorf("trailing bytes after the %d bytes of data for shape %s", need, FormatShape(shape))
	}
	if err != nil && !isEOF(err) {
		return nil, err
	}
	return data, nil
}

// checkRemaining returns an error if remaining, the bytes left after the
// header when known (else -1), are not exactly the data of n float64
// values of the given shape.
func checkRemaining(shape []int, n int, remaining int64) error {
	need := 8 * int64(n)
	if remaining >= 0 && remaining < need {
		return fmt.Errorf("truncated data: shape %s needs %d bytes, got %d", FormatShape(shape), need, remaining)
	}
	if remaining > need {
		return fmt.Errorf("%d trailing bytes after the %d bytes of data for shape %s", remaining-need, need, FormatShape(shape))
	}
	return nil
}

// readFloat64s fills dst with little-endian float64 values from r as
// io.ReadFull does, returning the number of bytes read.
func readFloat64s(r io.Reader, dst []float64) (int, error) {
	if nativeLittleEndian {
		return io.ReadFull(r, float64Bytes(dst))
	}
	var buf [8192]byte
	total := 0
	for len(dst) > 0 {
		m := min(8*len(dst), len(buf))
		k, err := io.ReadFull(r, buf[:m])
		for i := 0; i+8 <= k; i += 8 {
			dst[i/8] = math.Float64frombits(binary.LittleEndian.Uint64(buf[i:]))
		}
		total += k
		if err != nil {
			return total, err
		}
		dst = dst[m/8:]
	}
	return total, nil
}

// fortranToC returns the elements of f, an array of the given shape stored
// in Fortran (column-major) order, in C (row-major) order.
func fortranToC(shape []int, f []float64) []float64 {
	if len(shape) < 2 || len(f) == 0 {
		return f
	}
	// In Fortran order the stride of dimension k is the product of the
	// dimensions before it. Walk the C-order multi-index like an odometer,
	// last index fastest, keeping the Fortran offset of the current index.
	stride := make([]int, len(shape))
	s := 1
	for k, d := range shape {
		stride[k] = s
		s *= d
	}
	idx := make([]int, len(shape))
	c := make([]float64, len(f))
	off := 0
	for i := range c {
		c[i] = f[off]
		for k := len(shape) - 1; k >= 0; k-- {
			idx[k]++
			off += stride[k]
			if idx[k] < shape[k] {
				break
			}
			off -= idx[k] * stride[k]
			idx[k] = 0
		}
	}
	return c
}

// npyHeaderInfo is the content of a .npy header dict.
type npyHeaderInfo struct {
	shape   []int
	n       int // product of shape
	fortran bool
}

// parseNPYHeader parses and checks the header dict of a .npy file. allowLong
// accepts Python 2 long literals (3L), which NumPy tolerates in versions 1.0
// and 2.0. Syntax errors are reported before the values are checked.
func parseNPYHeader(header string, allowLong bool) (npyHeaderInfo, error) {
	p := &headerParser{s: header, allowLong: allowLong}
	var h npyHeaderInfo
	var descr string
	var dims []string
	seen := make(map[string]bool)
	p.expect('{')
	for p.err == nil && !p.accept('}') {
		key := p.str()
		switch {
		case p.err != nil:
		case key != "descr" && key != "fortran_order" && key != "shape":
			p.fail("unexpected key %q (want only 'descr', 'fortran_order' and 'shape')", key)
		case seen[key]:
			p.fail("duplicate key %q", key)
		}
		seen[key] = true
		p.expect(':')
		switch key {
		case "descr":
			descr = p.descr()
		case "fortran_order":
			h.fortran = p.boolean()
		case "shape":
			dims = p.tuple()
		}
		if !p.accept(',') {
			p.expect('}')
			break
		}
	}
	if p.peek(); p.pos != len(p.s) {
		p.fail("unexpected text after the dict")
	}
	if p.err != nil {
		return npyHeaderInfo{}, p.err
	}
	for _, key := range []string{"descr", "fortran_order", "shape"} {
		if !seen[key] {
			return npyHeaderInfo{}, fmt.Errorf("malformed header: missing key '%s': %s", key, quoteHeader(header))
		}
	}
	if descr != npyDescr {
		return npyHeaderInfo{}, fmt.Errorf("unsupported dtype %q; want '%s' (little-endian float64)", descr, npyDescr)
	}
	h.shape = make([]int, len(dims))
	for i, lit := range dims {
		d, err := strconv.ParseInt(lit, 10, 64)
		switch {
		case strings.HasPrefix(lit, "-") && (err != nil || d < 0):
			return npyHeaderInfo{}, fmt.Errorf("negative dimension %s in shape", lit)
		case err != nil || d > npyMaxElements:
			return npyHeaderInfo{}, fmt.Errorf("dimension %s in shape is too large (more than %d elements)", lit, npyMaxElements)
		}
		h.shape[i] = int(d)
	}
	var err error
	h.n, err = numElements(h.shape)
	return h, err
}

// quoteHeader quotes a header for an error message, shortened if long.
func quoteHeader(h string) string {
	const max = 120
	if len(h) > max {
		return strconv.Quote(h[:max]) + "..."
	}
	return strconv.Quote(h)
}

// headerParser reads the header dict that NumPy writes,
//
//	{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }
//
// as Python's ast.literal_eval (which NumPy uses) reads it: the keys in any
// order, either quote character, any whitespace and optional trailing
// commas. Its first error is kept in err; every later call does nothing.
type headerParser struct {
	s         string
	pos       int
	allowLong bool
	err       error
}

// fail records a syntax error at the current position, unless one is kept.
func (p *headerParser) fail(format string, args ...any) {
	if p.err == nil {
		p.err = fmt.Errorf("malformed header at byte %d: %s: %s", p.pos, fmt.Sprintf(format, args...), quoteHeader(p.s))
	}
}

// peek skips whitespace and returns the next byte, or 0 at the end (a NUL
// byte in the header is never valid, so callers need not tell the two apart).
func (p *headerParser) peek() byte {
	for p.pos < len(p.s) && strings.IndexByte(" \t\n\r\f", p.s[p.pos]) >= 0 {
		p.pos++
	}
	if p.pos == len(p.s) {
		return 0
	}
	return p.s[p.pos]
}

// accept consumes c if it is the next non-space byte.
func (p *headerParser) accept(c byte) bool {
	if p.err != nil || p.peek() != c {
		return false
	}
	p.pos++
	return true
}

// expect consumes c or fails.
func (p *headerParser) expect(c byte) {
	if !p.accept(c) {
		p.fail("want %q", c)
	}
}

// str reads a quoted string without escape sequences.
func (p *headerParser) str() string {
	if q := p.peek(); p.err == nil && (q == '\'' || q == '"') {
		for i := p.pos + 1; i < len(p.s); i++ {
			switch p.s[i] {
			case q:
				s := p.s[p.pos+1 : i]
				p.pos = i + 1
				return s
			case '\\':
				p.pos = i
				p.fail("escape sequences are not supported")
				return ""
			case '\n', '\r':
				p.pos = i
				p.fail("unterminated string")
				return ""
			}
		}
		p.pos = len(p.s)
		p.fail("unterminated string")
	}
	p.fail("want a quoted string")
	return ""
}

// descr reads the dtype: a string; a list (a structured dtype) is refused.
func (p *headerParser) descr() string {
	if p.err == nil && p.peek() == '[' {
		p.err = fmt.Errorf("unsupported dtype: descr is a list (a structured dtype?); want '%s' (little-endian float64)", npyDescr)
	}
	return p.str()
}

// word reads a run of the bytes of a Python name: letters, digits and '_'.
func (p *headerParser) word() string {
	start := p.pos
	for p.pos < len(p.s) && (p.s[p.pos] == '_' || unicode.IsLetter(rune(p.s[p.pos])) || unicode.IsDigit(rune(p.s[p.pos]))) {
		p.pos++
	}
	return p.s[start:p.pos]
}

// boolean reads True or False.
func (p *headerParser) boolean() bool {
	p.peek()
	start := p.pos
	w := p.word()
	if w != "True" && w != "False" {
		p.pos = start
		p.fail("want True or False for 'fortran_order'")
	}
	return w == "True"
}

// tuple reads the shape, a tuple of integer literals: "()", "(6,)", "(2, 3)".
// A Python tuple of one element needs its comma: "(6)" is an integer.
func (p *headerParser) tuple() []string {
	var dims []string
	p.expect('(')
	for p.err == nil && !p.accept(')') {
		dims = append(dims, p.integer())
		if !p.accept(',') {
			if len(dims) == 1 {
				p.fail("want ',' after the first dimension (the shape is a tuple)")
			}
			p.expect(')')
			break
		}
	}
	return dims
}

// integer reads a decimal integer literal with an optional minus sign and
// returns its text, sign included and without a Python 2 'L' suffix.
func (p *headerParser) integer() string {
	sign := ""
	if p.accept('-') {
		sign = "-"
	}
	p.peek()
	start := p.pos
	for p.pos < len(p.s) && '0' <= p.s[p.pos] && p.s[p.pos] <= '9' {
		p.pos++
	}
	lit := p.s[start:p.pos]
	if p.allowLong && lit != "" && p.pos < len(p.s) && p.s[p.pos] == 'L' {
		p.pos++
	}
	if lit == "" || (len(lit) > 1 && lit[0] == '0') || p.word() != "" || p.peek() == '.' {
		p.pos = start
		p.fail("want a decimal integer without leading zeros")
	}
	return sign + lit
}
