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
	rd, err := NewReader(r)
	if err != nil {
		return nil, nil, err
	}
	defer rd.Close()
	data := make([]uint8, rd.Len())
	if got, err := io.ReadFull(rd, data); err != nil {
		return nil, nil, rd.Short(got)
	}
	return rd.Dims, data, nil
}

// Reader reads an unsigned-byte IDX stream header first: its dimensions
// are known, and can be checked against a memory bound, before any data
// is read (of a gzip stream, before the body is decompressed).
type Reader struct {
	// Dims are the dimensions the header gives.
	Dims []int
	in   io.Reader
	zr   *gzip.Reader
}

// NewReader reads the header of one unsigned-byte IDX stream,
// gzip-compressed or raw (told by its first bytes), from r; Read then
// gives the data bytes. Errors wrap ErrFormat.
func NewReader(r io.Reader) (*Reader, error) {
	br := bufio.NewReader(r)
	rd := &Reader{in: br}
	if head, _ := br.Peek(2); bytes.Equal(head, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%w: gzip: %v", ErrFormat, err)
		}
		rd.in, rd.zr = zr, zr
	}
	if err := rd.header(); err != nil {
		rd.Close()
		return nil, err
	}
	return rd, nil
}

func (rd *Reader) header() error {
	var magic [4]byte
	if _, err := io.ReadFull(rd.in, magic[:]); err != nil {
		return fmt.Errorf("%w: reading magic number: %v", ErrFormat, err)
	}
	if magic[0] != 0 || magic[1] != 0 {
		return fmt.Errorf("%w: magic %x: want 00 00 <type> <ndim>", ErrFormat, magic)
	}
	if magic[2] != 0x08 {
		return fmt.Errorf("%w: element type 0x%02x: only unsigned bytes (0x08) are supported", ErrFormat, magic[2])
	}
	nd := int(magic[3])
	if nd < 1 || nd > 4 {
		return fmt.Errorf("%w: %d dimensions: want 1 to 4", ErrFormat, nd)
	}
	rd.Dims = make([]int, nd)
	n := 1
	for i := range rd.Dims {
		var d uint32
		if err := binary.Read(rd.in, binary.BigEndian, &d); err != nil {
			return fmt.Errorf("%w: reading dimension %d: %v", ErrFormat, i, err)
		}
		rd.Dims[i] = int(d)
		n *= int(d)
		if n > maxElements {
			return fmt.Errorf("%w: dimensions %v exceed %d elements", ErrFormat, rd.Dims[:i+1], maxElements)
		}
	}
	rd.in = io.LimitReader(rd.in, int64(n))
	return nil
}

// Len is the number of data bytes the header announces.
func (rd *Reader) Len() int {
	n := 1
	for _, d := range rd.Dims {
		n *= d
	}
	return n
}

// Read reads data bytes; io.EOF after Len of them (or where the stream
// ends early: the caller compares the count with Len).
func (rd *Reader) Read(p []byte) (int, error) { return rd.in.Read(p) }

// Close releases the gzip reader, if any; it does not close the
// underlying reader.
func (rd *Reader) Close() error {
	if rd.zr != nil {
		return rd.zr.Close()
	}
	return nil
}

// Short is the error (wrapping ErrFormat) for a stream whose data ended
// after got of Len bytes.
func (rd *Reader) Short(got int) error {
	return fmt.Errorf("%w: dimensions %v need %d bytes of data, found %d", ErrFormat, rd.Dims, rd.Len(), got)
}
