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

// BenchmarkExp64 times each kernel this CPU runs (scalar: the math.Exp
// loop) on one goroutine over 16K normally distributed inputs (σ = 8;
// 256 KB in and out, in L2), reporting ns/elem.
func BenchmarkExp64(b *testing.B) {
	const n = 1 << 14
	r := rand.New(rand.NewSource(1))
	x := make([]float64, n)
	for i := range x {
		x[i] = 8 * r.NormFloat64()
	}
	y := make([]float64, n)
	for _, k := range kernels() {
		b.Run(k.String(), func(b *testing.B) {
			b.SetBytes(16 * n)
			for b.Loop() {
				expWith(k, y, x)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/elem")
		})
	}
}
