// Package idx reads the IDX files of MNIST and Fashion-MNIST (LeCun's
// format: a magic number 00 00 <type> <ndim>, ndim big-endian uint32
// dimensions, then the data in row-major order), raw or gzip-compressed.
// Only unsigned-byte data (type 0x08), the type those data sets use, is
// supported.
package idx

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrFormat is wrapped by every error about a malformed or unsupported IDX
// file.
var ErrFormat = errors.New("idx: malformed IDX file")

// maxElements bounds what an IDX header may announce (guards against
// corrupt sizes allocating absurd amounts of memory).
const maxElements = 1 << 31

// Read reads the unsigned-byte IDX file at path (gzip-compressed or raw,
// told by its first bytes, not by its name) and returns its dimensions and
// data. Errors name path; those about its content wrap ErrFormat.
func Read(path string) (dims []int, data []uint8, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("idx: %w", err)
	}
	defer f.Close()
	dims, data, err = Decode(f)
	if err != nil {
		return nil, nil, fmt.Errorf("idx: %s: %w", path, err)
	}
	return dims, data, nil
}

// Decode reads one unsigned-byte IDX stream, gzip-compressed or raw, from
// r. Errors wrap ErrFormat.
func Decode(r io.Reader) ([]int, []uint8, error) {
	br := bufio.NewReader(r)
	var in io.Reader = br
	if head, _ := br.Peek(2); bytes.Equal(head, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: gzip: %v", ErrFormat, err)
		}
		defer zr.Close()
		in = zr
	}
	var magic [4]byte
	if _, err := io.ReadFull(in, magic[:]); err != nil {
		return nil, nil, fmt.Errorf("%w: reading magic number: %v", ErrFormat, err)
	}
	if magic[0] != 0 || magic[1] != 0 {
		return nil, nil, fmt.Errorf("%w: magic %x: want 00 00 <type> <ndim>", ErrFormat, magic)
	}
	if magic[2] != 0x08 {
		return nil, nil, fmt.Errorf("%w: element type 0x%02x: only unsigned bytes (0x08) are supported", ErrFormat, magic[2])
	}
	nd := int(magic[3])
	if nd < 1 || nd > 4 {
		return nil, nil, fmt.Errorf("%w: %d dimensions: want 1 to 4", ErrFormat, nd)
	}
	dims := make([]int, nd)
	n := 1
	for i := range dims {
		var d uint32
		if err := binary.Read(in, binary.BigEndian, &d); err != nil {
			return nil, nil, fmt.Errorf("%w: reading dimension %d: %v", ErrFormat, i, err)
		}
		dims[i] = int(d)
		n *= int(d)
		if n > maxElements {
			return nil, nil, fmt.Errorf("%w: dimensions %v exceed %d elements", ErrFormat, dims[:i+1], maxElements)
		}
	}
	data := make([]uint8, n)
	if got, err := io.ReadFull(in, data); err != nil {
		return nil, nil, fmt.Errorf("%w: dimensions %v need %d bytes of data, found %d", ErrFormat, dims, n, got)
	}
	return dims, data, nil
}
