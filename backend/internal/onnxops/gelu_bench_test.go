package onnxops

import (
	"math"
	"math/rand"
	"testing"
)

// BenchmarkGelu32 times GELU's float32 kernels on 2^16 values of a
// standard normal (a layer's pre-activations) against the per-element
// math.Erf formula the unfused Erf op runs (fixed seed).
func BenchmarkGelu32(b *testing.B) {
	r := rand.New(rand.NewSource(1))
	n := 1 << 16
	x, y, g, d := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range x {
		x[i], g[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
	}
	b.Run("erf-per-element", func(b *testing.B) {
		b.SetBytes(int64(4 * n))
		for range b.N {
			for i, v := range x {
				y[i] = float32(math.Erf(float64(v) / math.Sqrt2))
			}
		}
	})
	b.Run("forward", func(b *testing.B) {
		b.SetBytes(int64(4 * n))
		for range b.N {
			geluFwd32(y, [][]float32{x})
		}
	})
	b.Run("backward", func(b *testing.B) {
		geluFwd32(y, [][]float32{x})
		b.SetBytes(int64(4 * n))
		for range b.N {
			geluBwd32(0, d, [][]float32{x}, y, g)
		}
	})
}
