// Package datasets reads MNIST-style IDX files and builds the two-item
// datasets of Pareto multi-task learning: MultiMNIST, MultiFashion and
// Multi-(Fashion+MNIST) (Lin et al. 2019, used by EPO and PNG).
package datasets

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

// ErrIDX is wrapped by every error about a malformed IDX file.
var ErrIDX = errors.New("datasets: malformed IDX file")

// Images is a stack of 8-bit grey images, row-major, one after another.
type Images struct {
	N, Rows, Cols int
	Pixels        []uint8 // N·Rows·Cols values
}

// At returns image i's pixels.
func (im *Images) At(i int) []uint8 {
	s := im.Rows * im.Cols
	return im.Pixels[i*s : (i+1)*s]
}

// maxIDXElements bounds what an IDX header may announce (guards against
// corrupt sizes allocating absurd amounts of memory).
const maxIDXElements = 1 << 31

// ReadIDX reads an unsigned-byte IDX file (gzip-compressed or raw, told by
// its first bytes) and returns its dimensions and data.
func ReadIDX(path string) (dims []int, data []uint8, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("datasets: %w", err)
	}
	defer f.Close()
	dims, data, err = decodeIDX(f)
	if err != nil {
		return nil, nil, fmt.Errorf("datasets: %s: %w", path, err)
	}
	return dims, data, nil
}

func decodeIDX(r io.Reader) ([]int, []uint8, error) {
	br := bufio.NewReader(r)
	var in io.Reader = br
	if head, _ := br.Peek(2); bytes.Equal(head, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: gzip: %v", ErrIDX, err)
		}
		defer zr.Close()
		in = zr
	}
	var magic [4]byte
	if _, err := io.ReadFull(in, magic[:]); err != nil {
		return nil, nil, fmt.Errorf("%w: reading magic number: %v", ErrIDX, err)
	}
	if magic[0] != 0 || magic[1] != 0 {
		return nil, nil, fmt.Errorf("%w: magic %x: want 00 00 <type> <ndim>", ErrIDX, magic)
	}
	if magic[2] != 0x08 {
		return nil, nil, fmt.Errorf("%w: element type 0x%02x: only unsigned bytes (0x08) are supported", ErrIDX, magic[2])
	}
	nd := int(magic[3])
	if nd < 1 || nd > 4 {
		return nil, nil, fmt.Errorf("%w: %d dimensions: want 1 to 4", ErrIDX, nd)
	}
	dims := make([]int, nd)
	n := 1
	for i := range dims {
		var d uint32
		if err := binary.Read(in, binary.BigEndian, &d); err != nil {
			return nil, nil, fmt.Errorf("%w: reading dimension %d: %v", ErrIDX, i, err)
		}
		dims[i] = int(d)
		n *= int(d)
		if n > maxIDXElements {
			return nil, nil, fmt.Errorf("%w: dimensions %v exceed %d elements", ErrIDX, dims[:i+1], maxIDXElements)
		}
	}
	data := make([]uint8, n)
	if got, err := io.ReadFull(in, data); err != nil {
		return nil, nil, fmt.Errorf("%w: dimensions %v need %d bytes of data, found %d", ErrIDX, dims, n, got)
	}
	return dims, data, nil
}

// ReadImages reads an IDX file of images (three dimensions: count, rows,
// columns).
func ReadImages(path string) (*Images, error) {
	dims, data, err := ReadIDX(path)
	if err != nil {
		return nil, err
	}
	if len(dims) != 3 {
		return nil, fmt.Errorf("datasets: %s: %w: images need 3 dimensions (count, rows, cols), found %v", path, ErrIDX, dims)
	}
	return &Images{N: dims[0], Rows: dims[1], Cols: dims[2], Pixels: data}, nil
}

// ReadLabels reads an IDX file of labels (one dimension).
func ReadLabels(path string) ([]uint8, error) {
	dims, data, err := ReadIDX(path)
	if err != nil {
		return nil, err
	}
	if len(dims) != 1 {
		return nil, fmt.Errorf("datasets: %s: %w: labels need 1 dimension, found %v", path, ErrIDX, dims)
	}
	return data, nil
}
