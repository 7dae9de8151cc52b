package vmath

import (
	"math/rand"
	"testing"
)

// BenchmarkSigmoid32 times each kernel this CPU runs (scalar: the former
// backend loop, float32(sigmoid64(float64(x))) per element) on one
// goroutine over 1M normally distributed inputs (σ = 8), reporting
// ns/elem.
func BenchmarkSigmoid32(b *testing.B) {
	const n = 1 << 20
	r := rand.New(rand.NewSource(1))
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(8 * r.NormFloat64())
	}
	y := make([]float32, n)
	for _, k := range kernels() {
		b.Run(k.String(), func(b *testing.B) {
			b.SetBytes(8 * n)
			for b.Loop() {
				sigmoidWith(k, y, x)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/elem")
		})
	}
}
