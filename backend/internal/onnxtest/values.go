package onnxtest

import (
	"math"
	"math/rand"
	"strings"

	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/importer"
)

// Dirty32 is a buffer of n values that no kernel writes: what a reused
// pool buffer may hold.
func Dirty32(n int) []float32 {
	d := make([]float32, n)
	for i := range d {
		d[i] = float32(i%7) - 12345.5
	}
	return d
}

// SameBits32 reports whether a and b have the same bits or are both NaN.
func SameBits32(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || (a != a && b != b)
}

// ContainsAll reports whether s contains every one of subs.
func ContainsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// Int64 is an int64 tensor of shape s.
func Int64(name string, s []int, v ...int64) *importer.Tensor {
	return &importer.Tensor{Name: name, Type: importer.Int64, Shape: s, I64: v}
}

// RandUniform32 returns a float32 tensor with U(−1, 1) values.
func RandUniform32(r *rand.Rand, name string, s ...int) *importer.Tensor {
	d := make([]float32, shape.Numel(s))
	for i := range d {
		d[i] = float32(2*r.Float64() - 1)
	}
	return importer.NewFloat32(name, s, d)
}
