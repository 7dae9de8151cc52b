// Package datasets reads MNIST-style IDX files (through package
// format/idx) and builds the two-item datasets of Pareto multi-task
// learning: MultiMNIST, MultiFashion and Multi-(Fashion+MNIST) (Lin et al.
// 2019, used by EPO and PNG).
package datasets

import (
	"fmt"

	"github.com/paretonav/paretonav/format/idx"
)

// ErrIDX is wrapped by every error about a malformed IDX file. It is
// idx.ErrFormat: the IDX reader lives in package format/idx.
var ErrIDX = idx.ErrFormat

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

// ReadImages reads an IDX file of images (three dimensions: count, rows,
// columns).
func ReadImages(path string) (*Images, error) {
	dims, data, err := idx.Read(path)
	if err != nil {
		return nil, err
	}
	return imagesOf(path, dims, data)
}

// imagesOf checks that an IDX file read from path holds images.
func imagesOf(path string, dims []int, data []uint8) (*Images, error) {
	if len(dims) != 3 {
		return nil, fmt.Errorf("datasets: %s: %w: images need 3 dimensions (count, rows, cols), found %v", path, ErrIDX, dims)
	}
	return &Images{N: dims[0], Rows: dims[1], Cols: dims[2], Pixels: data}, nil
}

// ReadLabels reads an IDX file of labels (one dimension).
func ReadLabels(path string) ([]uint8, error) {
	dims, data, err := idx.Read(path)
	if err != nil {
		return nil, err
	}
	return labelsOf(path, dims, data)
}

// labelsOf checks that an IDX file read from path holds labels.
func labelsOf(path string, dims []int, data []uint8) ([]uint8, error) {
	if len(dims) != 1 {
		return nil, fmt.Errorf("datasets: %s: %w: labels need 1 dimension, found %v", path, ErrIDX, dims)
	}
	return data, nil
}
