// Package npz reads and writes NumPy's .npz archives and .npy files as
// importer tensors.
//
// Reading uses github.com/sbinet/npyio for the zip listing and the .npy
// header, then decodes the array data in bulk. Writing encodes the .npy
// format directly (npyio's writer takes the array shape from the Go value's
// type, so it cannot write an N-dimensional array held in a flat slice).
// Element types round-trip: an int64 label array stays int64, float32 stays
// float32. Array names may contain "/" ("grad/left/conv1.weight"); they are
// stored as zip entries NAME.npy, exactly as numpy.savez does, and numpy.load
// lists them under NAME.
package npz

import (
	"archive/zip"
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
	"github.com/paretonav/paretonav/internal/atomicfile"
	"github.com/sbinet/npyio/npy"
	"github.com/sbinet/npyio/npy/float16"
	npyz "github.com/sbinet/npyio/npz"
)

// ErrFormat is wrapped by every error about a malformed or unsupported
// array (unknown dtype, truncated data, bad shape).
var ErrFormat = errors.New("npz: unsupported or malformed array")

// Read returns every array in the .npz archive at path, keyed by name (the
// zip entry name without its ".npy" suffix). Supported element types are
// float16 (widened to float32, Type Float16), float32, float64, the signed
// and unsigned integers up to 64 bits (held in I64; uint64 values above
// MaxInt64 are an error) and bool. Big-endian and Fortran-ordered arrays are
// converted to the row-major layout importer.Tensor uses.
func Read(path string) (map[string]*importer.Tensor, error) {
	return ReadSelect(path, ReadOptions{})
}

// ReadOptions select the arrays Read decodes and bound the memory they
// may take.
type ReadOptions struct {
	// Want, when set, says which arrays to decode: the others are never
	// read past their zip entry (nor their .npy header).
	Want func(name string) bool
	// MaxBytes, when positive, bounds the memory the decoded arrays take
	// together (float16 widened to 4 bytes, integers held as 8): an array
	// that would pass it is refused from its header's shape and dtype,
	// before any of its data is read or memory allocated for it.
	MaxBytes int64
	// From says where MaxBytes comes from ("--max-memory"), for errors.
	From string
	// Used is what arrays read before these take of MaxBytes.
	Used int64
}

// SizeError reports an array whose decoded size would pass
// ReadOptions.MaxBytes.
type SizeError struct {
	Array string
	Shape []int
	Dtype string
	// Bytes the array would take decoded; Before the arrays decoded
	// before it.
	Bytes, Before, Max int64
	From               string
}

// Error names the array, its shape, dtype and size, and the bound.
func (e *SizeError) Error() string {
	s := fmt.Sprintf("array %q (shape %v, dtype %s) takes %s in memory", e.Array, e.Shape, e.Dtype, mb(e.Bytes))
	if e.Before > 0 {
		s += fmt.Sprintf(" beside the %s read before it", mb(e.Before))
	}
	s += fmt.Sprintf(", more than the %s allowed", mb(e.Max))
	if e.From != "" {
		s += " (" + e.From + ")"
	}
	return s
}

// mb writes n bytes in MB (GB from 1 GB), decimal units.
func mb(n int64) string {
	if n < 1e6 {
		return fmt.Sprintf("%d bytes", n)
	}
	if n < 1e9 {
		return fmt.Sprintf("%.0f MB", float64(n)/1e6)
	}
	return fmt.Sprintf("%.1f GB", float64(n)/1e9)
}

// ReadSelect is Read with options: only the arrays opt.Want accepts,
// within opt.MaxBytes.
func ReadSelect(path string, opt ReadOptions) (map[string]*importer.Tensor, error) {
	r, err := npyz.Open(path)
	if err != nil {
		return nil, fmt.Errorf("npz: read %s: %w", path, err)
	}
	defer r.Close()
	out := make(map[string]*importer.Tensor, len(r.Keys()))
	seen := map[string]bool{}
	used := opt.Used
	stored := storedOffsets(path)
	var file *os.File
	var fileSize int64
	if len(stored) > 0 {
		if f, err := os.Open(path); err == nil {
			defer f.Close()
			if st, err := f.Stat(); err == nil {
				file, fileSize = f, st.Size()
			}
		}
	}
	for _, key := range r.Keys() {
		name := strings.TrimSuffix(key, ".npy")
		if seen[name] {
			return nil, fmt.Errorf("npz: read %s: array %q appears twice", path, name)
		}
		seen[name] = true
		if opt.Want != nil && !opt.Want(name) {
			continue
		}
		if off, ok := stored[key]; ok && file != nil {
			if t, ok := mapArray(file, off, fileSize, name); ok {
				out[name] = t
				continue
			}
		}
		rc, err := r.Open(key)
		if err != nil {
			return nil, fmt.Errorf("npz: read %s: array %q: %w", path, name, err)
		}
		t, err := decode(rc, name, &budget{used: &used, max: opt.MaxBytes, from: opt.From})
		rc.Close()
		var se *SizeError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("npz: read %s: %w", path, err)
		} else if err != nil {
			return nil, fmt.Errorf("npz: read %s: array %q: %w", path, name, err)
		}
		out[name] = t
	}
	return out, nil
}

// budget tracks the bytes decoded arrays take against a bound (max ≤ 0:
// none).
type budget struct {
	used *int64
	max  int64
	from string
}

// take books an array's bytes, or returns a *SizeError.
func (b *budget) take(name string, shape []int, dtype string, n int64) error {
	if b == nil || b.max <= 0 {
		return nil
	}
	if n > b.max-*b.used {
		return &SizeError{Array: name, Shape: shape, Dtype: dtype, Bytes: n, Before: *b.used, Max: b.max, From: b.from}
	}
	*b.used += n
	return nil
}

// ReadNPY returns the single array stored in the .npy file at path. The
// tensor is named after the file without its extension.
func ReadNPY(path string) (*importer.Tensor, error) {
	return ReadNPYWithin(path, 0, "")
}

// ReadNPYWithin is ReadNPY refusing, from its header, an array that
// takes more than maxBytes in memory (maxBytes ≤ 0: no bound; from says
// where the bound comes from).
func ReadNPYWithin(path string, maxBytes int64, from string) (*importer.Tensor, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("npz: read %s: %w", path, err)
	}
	defer f.Close()
	name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	if st, err := f.Stat(); err == nil {
		if t, ok := mapArray(f, 0, st.Size(), name); ok {
			return t, nil
		}
	}
	used := int64(0)
	t, err := decode(f, name, &budget{used: &used, max: maxBytes, from: from})
	if err != nil {
		return nil, fmt.Errorf("npz: read %s: %w", path, err)
	}
	return t, nil
}

// dtypeInfo describes one numpy element type.
type dtypeInfo struct {
	kind byte // 'f', 'i', 'u', 'b'
	size int
	typ  importer.DataType
}

func parseDescr(descr string) (dtypeInfo, binary.ByteOrder, error) {
	order := binary.ByteOrder(binary.LittleEndian)
	s := descr
	if s != "" {
		switch s[0] {
		case '<', '|', '=':
			s = s[1:]
		case '>':
			order = binary.BigEndian
			s = s[1:]
		}
	}
	var d dtypeInfo
	switch s {
	case "f2":
		d = dtypeInfo{'f', 2, importer.Float16}
	case "f4":
		d = dtypeInfo{'f', 4, importer.Float32}
	case "f8":
		d = dtypeInfo{'f', 8, importer.Float64}
	case "i1":
		d = dtypeInfo{'i', 1, importer.Int8}
	case "i2":
		d = dtypeInfo{'i', 2, onnxpb.TensorProto_INT16}
	case "i4":
		d = dtypeInfo{'i', 4, importer.Int32}
	case "i8":
		d = dtypeInfo{'i', 8, importer.Int64}
	case "u1":
		d = dtypeInfo{'u', 1, importer.Uint8}
	case "u2":
		d = dtypeInfo{'u', 2, onnxpb.TensorProto_UINT16}
	case "u4":
		d = dtypeInfo{'u', 4, onnxpb.TensorProto_UINT32}
	case "u8":
		d = dtypeInfo{'u', 8, onnxpb.TensorProto_UINT64}
	case "b1", "?":
		d = dtypeInfo{'b', 1, importer.Bool}
	default:
		return d, nil, fmt.Errorf("%w: dtype %q (want float16/32/64, int8..64, uint8..64 or bool)", ErrFormat, descr)
	}
	return d, order, nil
}

// maxHeader bounds the .npy header length we accept (numpy's own limit
// for safe loading is 10,000 bytes).
const maxHeader = 1 << 15

// checkPreamble validates the magic string, version and header length of
// the .npy stream in br (without consuming it), so that npyio's header
// parser, which trusts them, only sees well-formed headers.
func checkPreamble(br *bufio.Reader) error {
	pre, err := br.Peek(12)
	if err != nil || string(pre[:6]) != "\x93NUMPY" {
		return fmt.Errorf("%w: header: not a .npy stream (no \\x93NUMPY magic)", ErrFormat)
	}
	var start, n int
	switch pre[6] {
	case 1:
		start, n = 10, int(binary.LittleEndian.Uint16(pre[8:]))
	case 2, 3:
		start, n = 12, int(binary.LittleEndian.Uint32(pre[8:]))
	default:
		return fmt.Errorf("%w: header: .npy format version %d.%d", ErrFormat, pre[6], pre[7])
	}
	if n < 2 || n > maxHeader {
		return fmt.Errorf("%w: header: length %d (want 2 to %d bytes)", ErrFormat, n, maxHeader)
	}
	hdr, err := br.Peek(start + n)
	if err != nil {
		return fmt.Errorf("%w: header: truncated (%d bytes announced)", ErrFormat, n)
	}
	if hdr[len(hdr)-1] != '\n' || !strings.HasPrefix(strings.TrimSpace(string(hdr[start:])), "{") {
		return fmt.Errorf("%w: header: want a dictionary ending in a newline", ErrFormat)
	}
	return nil
}

// readHeader parses the .npy header with npyio, turning its panics on
// malformed input into errors.
func readHeader(br *bufio.Reader) (h npy.Header, err error) {
	if err := checkPreamble(br); err != nil {
		return h, err
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: header: %v", ErrFormat, r)
		}
	}()
	hr, err := npy.NewReader(br)
	if err != nil {
		return h, fmt.Errorf("%w: header: %v", ErrFormat, err)
	}
	return hr.Header, nil
}

// decode reads one .npy stream.
func decode(rd io.Reader, name string, b *budget) (*importer.Tensor, error) {
	br := bufio.NewReaderSize(rd, 1<<16)
	h, err := readHeader(br)
	if err != nil {
		return nil, err
	}
	d, order, err := parseDescr(h.Descr.Type)
	if err != nil {
		return nil, err
	}
	shape := append([]int{}, h.Descr.Shape...)
	n := 1
	for _, s := range shape {
		if s < 0 {
			return nil, fmt.Errorf("%w: negative dimension in shape %v", ErrFormat, shape)
		}
		if s != 0 && n > math.MaxInt/s {
			return nil, fmt.Errorf("%w: shape %v too large", ErrFormat, shape)
		}
		n *= s
	}
	if n > math.MaxInt/8 {
		return nil, fmt.Errorf("%w: shape %v too large", ErrFormat, shape)
	}
	held := int64(n) * 8 // I64 and F64
	if d.typ == importer.Float32 || d.typ == importer.Float16 {
		held = int64(n) * 4
	}
	if err := b.take(name, shape, h.Descr.Type, held); err != nil {
		return nil, err
	}
	// Storage grows as data arrives (from at most initialCap elements), so
	// that a header announcing a huge shape over a short stream fails as
	// truncated instead of allocating the announced size.
	const initialCap = 1 << 24
	t := &importer.Tensor{Name: name, Type: d.typ, Shape: shape}
	c := min(n, initialCap)
	switch {
	case d.typ == importer.Float32 || d.typ == importer.Float16:
		t.F32 = make([]float32, 0, c)
	case d.typ == importer.Float64:
		t.F64 = make([]float64, 0, c)
	default:
		t.I64 = make([]int64, 0, c)
	}
	const chunk = 1 << 16 // elements per read
	buf := make([]byte, min(n, chunk)*d.size)
	for off := 0; off < n; off += chunk {
		m := min(chunk, n-off)
		b := buf[:m*d.size]
		if _, err := io.ReadFull(br, b); err != nil {
			return nil, fmt.Errorf("%w: data truncated: want %d values of %s for shape %v: %v", ErrFormat, n, h.Descr.Type, shape, err)
		}
		switch {
		case t.F32 != nil:
			t.F32 = grow(t.F32, off+m)
		case t.F64 != nil:
			t.F64 = grow(t.F64, off+m)
		default:
			t.I64 = grow(t.I64, off+m)
		}
		if err := decodeChunk(t, d, order, b, off, m); err != nil {
			return nil, err
		}
	}
	if h.Descr.Fortran && len(shape) > 1 {
		fromFortran(t)
	}
	return t, nil
}

// grow returns s extended to length n (n ≥ len(s)), reusing its capacity.
func grow[T any](s []T, n int) []T {
	if n <= cap(s) {
		return s[:n]
	}
	return append(s[:cap(s)], make([]T, n-cap(s))...)[:n]
}

func decodeChunk(t *importer.Tensor, d dtypeInfo, order binary.ByteOrder, b []byte, off, m int) error {
	switch {
	case d.kind == 'f' && d.size == 2:
		for i := range m {
			t.F32[off+i] = float16.Float16Frombits(order.Uint16(b[2*i:])).Float32()
		}
	case d.kind == 'f' && d.size == 4:
		for i := range m {
			t.F32[off+i] = math.Float32frombits(order.Uint32(b[4*i:]))
		}
	case d.kind == 'f':
		for i := range m {
			t.F64[off+i] = math.Float64frombits(order.Uint64(b[8*i:]))
		}
	case d.kind == 'b':
		for i := range m {
			if b[i] > 1 {
				return fmt.Errorf("%w: bool value %d at index %d", ErrFormat, b[i], off+i)
			}
			t.I64[off+i] = int64(b[i])
		}
	default:
		dst := t.I64[off : off+m]
		for i := range dst {
			switch {
			case d.kind == 'i' && d.size == 1:
				dst[i] = int64(int8(b[i]))
			case d.kind == 'u' && d.size == 1:
				dst[i] = int64(b[i])
			case d.kind == 'i' && d.size == 2:
				dst[i] = int64(int16(order.Uint16(b[2*i:])))
			case d.kind == 'u' && d.size == 2:
				dst[i] = int64(order.Uint16(b[2*i:]))
			case d.kind == 'i' && d.size == 4:
				dst[i] = int64(int32(order.Uint32(b[4*i:])))
			case d.kind == 'u' && d.size == 4:
				dst[i] = int64(order.Uint32(b[4*i:]))
			case d.kind == 'i':
				dst[i] = int64(order.Uint64(b[8*i:]))
			default:
				v := order.Uint64(b[8*i:])
				if v > math.MaxInt64 {
					return fmt.Errorf("%w: uint64 value %d at index %d does not fit int64", ErrFormat, v, off+i)
				}
				dst[i] = int64(v)
			}
		}
	}
	return nil
}

// fromFortran rewrites t's data, read in column-major order, in row-major
// order.
func fromFortran(t *importer.Tensor) {
	shape := t.Shape
	nd := len(shape)
	// Column-major strides of the source.
	fstride := make([]int, nd)
	s := 1
	for i := range nd {
		fstride[i] = s
		s *= shape[i]
	}
	idx := make([]int, nd)
	n := t.Len()
	perm := make([]int, n) // perm[c] = Fortran offset of the row-major element c
	for c := range n {
		off := 0
		for i := range nd {
			off += idx[i] * fstride[i]
		}
		perm[c] = off
		for i := nd - 1; i >= 0; i-- {
			idx[i]++
			if idx[i] < shape[i] {
				break
			}
			idx[i] = 0
		}
	}
	switch {
	case t.F32 != nil:
		src := t.F32
		t.F32 = make([]float32, n)
		for c, o := range perm {
			t.F32[c] = src[o]
		}
	case t.F64 != nil:
		src := t.F64
		t.F64 = make([]float64, n)
		for c, o := range perm {
			t.F64[c] = src[o]
		}
	default:
		src := t.I64
		t.I64 = make([]int64, n)
		for c, o := range perm {
			t.I64[c] = src[o]
		}
	}
}

// Options control how Write encodes an archive. The zero value writes an
// uncompressed archive, like numpy.savez.
type Options struct {
	// Compress deflates every entry, like numpy.savez_compressed.
	Compress bool
}

// Write stores arrays in a new .npz archive at path, replacing any file
// there atomically: the archive is written to a temporary file in the same
// folder, synced, and renamed over path. Entries are uncompressed (like
// numpy.savez) and sorted by name. Each tensor keeps its element type (see
// Read); its Name field is ignored in favour of the map key.
func Write(path string, arrays map[string]*importer.Tensor) error {
	return WriteOptions(path, arrays, Options{})
}

// WriteOptions is Write with encoding options.
func WriteOptions(path string, arrays map[string]*importer.Tensor, opt Options) error {
	names := make([]string, 0, len(arrays))
	for name, t := range arrays {
		if name == "" {
			return fmt.Errorf("npz: write %s: empty array name", path)
		}
		if t == nil {
			return fmt.Errorf("npz: write %s: array %q is nil", path, name)
		}
		names = append(names, name)
	}
	sort.Strings(names)
	return writeAtomic(path, func(w io.Writer) error {
		zw := zip.NewWriter(w)
		method := zip.Store
		if opt.Compress {
			method = zip.Deflate
		}
		for _, name := range names {
			fw, err := zw.CreateHeader(&zip.FileHeader{Name: name + ".npy", Method: method})
			if err != nil {
				return fmt.Errorf("array %q: %w", name, err)
			}
			if err := encode(fw, arrays[name]); err != nil {
				return fmt.Errorf("array %q: %w", name, err)
			}
		}
		return zw.Close()
	})
}

// WriteNPY stores t in a new .npy file at path, atomically (see Write).
func WriteNPY(path string, t *importer.Tensor) error {
	if t == nil {
		return fmt.Errorf("npz: write %s: nil tensor", path)
	}
	return writeAtomic(path, func(w io.Writer) error { return encode(w, t) })
}

// writeAtomic writes through fill into a temporary file beside path, syncs
// it and renames it to path (atomicfile.Write, mode 0644). On error the
// temporary file is removed and path is left untouched.
func writeAtomic(path string, fill func(io.Writer) error) error {
	if err := atomicfile.Write(path, 0o644, fill); err != nil {
		return fmt.Errorf("npz: write %s: %w", path, err)
	}
	return nil
}

// descrOf returns the numpy dtype string and item size for t's Type.
func descrOf(t *importer.Tensor) (string, int, error) {
	switch t.Type {
	case importer.Float32:
		return "<f4", 4, nil
	case importer.Float16:
		return "<f2", 2, nil
	case importer.Float64:
		return "<f8", 8, nil
	case importer.Int64:
		return "<i8", 8, nil
	case importer.Int32:
		return "<i4", 4, nil
	case onnxpb.TensorProto_INT16:
		return "<i2", 2, nil
	case importer.Int8:
		return "|i1", 1, nil
	case importer.Uint8:
		return "|u1", 1, nil
	case onnxpb.TensorProto_UINT16:
		return "<u2", 2, nil
	case onnxpb.TensorProto_UINT32:
		return "<u4", 4, nil
	case onnxpb.TensorProto_UINT64:
		return "<u8", 8, nil
	case importer.Bool:
		return "|b1", 1, nil
	}
	return "", 0, fmt.Errorf("%w: element type %v has no numpy dtype here", ErrFormat, t.Type)
}

// header returns a version 1.0 .npy header (magic through the newline),
// padded to a multiple of 64 bytes as numpy does.
func header(descr string, shape []int) []byte {
	var sb strings.Builder
	sb.WriteString("{'descr': '")
	sb.WriteString(descr)
	sb.WriteString("', 'fortran_order': False, 'shape': (")
	for i, s := range shape {
		if i > 0 {
			sb.WriteString(", ")
		}
		fmt.Fprintf(&sb, "%d", s)
	}
	if len(shape) == 1 {
		sb.WriteString(",")
	}
	sb.WriteString("), }")
	dict := sb.String()
	const pre = 10 // magic(6) + version(2) + header length(2)
	total := pre + len(dict) + 1
	pad := (64 - total%64) % 64
	hl := len(dict) + pad + 1
	out := make([]byte, 0, pre+hl)
	out = append(out, "\x93NUMPY\x01\x00"...)
	out = binary.LittleEndian.AppendUint16(out, uint16(hl))
	out = append(out, dict...)
	out = append(out, strings.Repeat(" ", pad)...)
	return append(out, '\n')
}

// encode writes t as a .npy stream.
func encode(w io.Writer, t *importer.Tensor) error {
	descr, size, err := descrOf(t)
	if err != nil {
		return err
	}
	n := 1
	for _, s := range t.Shape {
		if s < 0 {
			return fmt.Errorf("%w: negative dimension in shape %v", ErrFormat, t.Shape)
		}
		n *= s
	}
	var have int
	switch {
	case t.Type == importer.Float32 || t.Type == importer.Float16:
		have = len(t.F32)
	case t.Type == importer.Float64:
		have = len(t.F64)
	default:
		have = len(t.I64)
	}
	if have != n {
		return fmt.Errorf("%w: %d values of %v for shape %v (want %d)", ErrFormat, have, t.Type, t.Shape, n)
	}
	if _, err := w.Write(header(descr, t.Shape)); err != nil {
		return err
	}
	const chunk = 1 << 14
	buf := make([]byte, 0, chunk*size)
	for off := 0; off < n; off += chunk {
		m := min(chunk, n-off)
		buf = buf[:0]
		for i := off; i < off+m; i++ {
			switch size {
			case 1:
				v := t.I64[i]
				if t.Type == importer.Bool && v != 0 {
					v = 1
				}
				buf = append(buf, byte(v))
			case 2:
				if t.Type == importer.Float16 {
					buf = binary.LittleEndian.AppendUint16(buf, float16.New(t.F32[i]).Uint16())
				} else {
					buf = binary.LittleEndian.AppendUint16(buf, uint16(t.I64[i]))
				}
			case 4:
				if t.Type == importer.Float32 {
					buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(t.F32[i]))
				} else {
					buf = binary.LittleEndian.AppendUint32(buf, uint32(t.I64[i]))
				}
			case 8:
				if t.Type == importer.Float64 {
					buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(t.F64[i]))
				} else {
					buf = binary.LittleEndian.AppendUint64(buf, uint64(t.I64[i]))
				}
			}
		}
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	return nil
}

// Names lists the arrays of the .npz archive at path without reading
// them.
func Names(path string) ([]string, error) {
	r, err := npyz.Open(path)
	if err != nil {
		return nil, fmt.Errorf("npz: read %s: %w", path, err)
	}
	defer r.Close()
	var out []string
	for _, key := range r.Keys() {
		out = append(out, strings.TrimSuffix(key, ".npy"))
	}
	return out, nil
}
