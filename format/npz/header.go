package npz

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/paretonav/paretonav/importer"
)

// Header describes the array of a .npy file without its values.
type Header struct {
	// Shape is the array's shape (C order whatever the file's).
	Shape []int
	// Type is the element type as decoded: float16 values are held as
	// float32, integers as int64 (see Read).
	Type importer.DataType
	// Descr is numpy's dtype string ("<f4", "<f8", "|u1"…).
	Descr string
	// DataBytes is the size of the values in the file.
	DataBytes int64
}

// Len is the number of values the header announces.
func (h Header) Len() int {
	n := 1
	for _, s := range h.Shape {
		n *= s
	}
	return n
}

// ReadHeader reads the header of the .npy file at path and checks that the
// file holds as many bytes of values as the header announces, without
// reading them: a truncated or overlong file is an error naming path.
func ReadHeader(path string) (Header, error) {
	f, err := os.Open(path)
	if err != nil {
		return Header{}, fmt.Errorf("npz: read %s: %w", path, err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 12+maxHeader)
	pre, err := br.Peek(12)
	if err != nil {
		return Header{}, fmt.Errorf("npz: read %s: %w: header: not a .npy file (%d bytes)", path, ErrFormat, len(pre))
	}
	h, err := readHeader(br)
	if err != nil {
		return Header{}, fmt.Errorf("npz: read %s: %w", path, err)
	}
	d, _, err := parseDescr(h.Descr.Type)
	if err != nil {
		return Header{}, fmt.Errorf("npz: read %s: %w", path, err)
	}
	n := int64(1)
	for _, s := range h.Descr.Shape {
		if s < 0 || s > 0 && n > math.MaxInt64/16/int64(s) {
			return Header{}, fmt.Errorf("npz: read %s: %w: shape %v", path, ErrFormat, h.Descr.Shape)
		}
		n *= int64(s)
	}
	hlen := 10 + int64(binary.LittleEndian.Uint16(pre[8:]))
	if pre[6] != 1 {
		hlen = 12 + int64(binary.LittleEndian.Uint32(pre[8:]))
	}
	out := Header{Shape: append([]int{}, h.Descr.Shape...), Type: d.typ, Descr: h.Descr.Type, DataBytes: n * int64(d.size)}
	if out.Type == importer.Float16 {
		out.Type = importer.Float32
	}
	if st, err := f.Stat(); err == nil && st.Size() != hlen+out.DataBytes {
		return Header{}, fmt.Errorf("npz: read %s: %w: %d bytes of values for shape %v of %s; the header announces %d",
			path, ErrFormat, st.Size()-hlen, out.Shape, out.Descr, out.DataBytes)
	}
	return out, nil
}

// DecodeNPY is ReadNPY that always decodes the values into memory, never
// maps them from the file (MapMinBytes): for a file read once and
// dropped, which a mapping would keep.
func DecodeNPY(path string) (*importer.Tensor, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("npz: read %s: %w", path, err)
	}
	defer f.Close()
	name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	t, err := decode(f, name, nil)
	if err != nil {
		return nil, fmt.Errorf("npz: read %s: %w", path, err)
	}
	return t, nil
}
