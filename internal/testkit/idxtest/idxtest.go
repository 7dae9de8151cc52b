// Package idxtest builds IDX files (the MNIST format that format/idx
// reads) for tests.
package idxtest

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
)

// Encode returns an unsigned-byte (type 0x08) IDX file of shape dims
// holding data.
func Encode(dims []int, data []uint8) []byte { return EncodeType(8, dims, data) }

// EncodeType is Encode with the element type code typ in the header; the
// data bytes are written as given.
func EncodeType(typ byte, dims []int, data []uint8) []byte {
	var b bytes.Buffer
	b.Write([]byte{0, 0, typ, byte(len(dims))})
	for _, d := range dims {
		binary.Write(&b, binary.BigEndian, uint32(d))
	}
	b.Write(data)
	return b.Bytes()
}

// Gzip returns b gzip-compressed.
func Gzip(b []byte) []byte {
	var out bytes.Buffer
	w := gzip.NewWriter(&out)
	w.Write(b)
	w.Close()
	return out.Bytes()
}
