package gemm

import (
	"fmt"
	"math/rand"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// benchShapes are square products and the backend's typical shapes: LeNet
// conv1 im2col (per sample and batched over 16 samples), conv2, the fc
// layer, and an MTAN-like 3×3 convolution (64 filters, 64 channels, 32×32).
var benchShapes = []struct {
	name    string
	m, n, k int
}{
	{"sq256", 256, 256, 256},
	{"sq512", 512, 512, 512},
	{"sq1024", 1024, 1024, 1024},
	{"lenet-conv1", 10, 784, 81},
	{"lenet-conv1x16", 10, 784 * 16, 81},
	{"lenet-conv2", 20, 100, 250},
	{"lenet-fc", 256, 50, 500},
	{"mtan", 64, 1024, 576},
}

// BenchmarkSgemm reports GFLOP/s for Sgemm (single goroutine), Sgemm with
// the forced gonum fallback (gonum's Sgemm, which starts its own
// goroutines), SgemmParallel with 2 workers and gonum's blas32 directly.
func BenchmarkSgemm(b *testing.B) {
	for _, s := range benchShapes {
		rng := rand.New(rand.NewSource(1))
		fill := func(n int) []float32 {
			d := make([]float32, n)
			for i := range d {
				d[i] = rng.Float32()
			}
			return d
		}
		x, y, z := fill(s.m*s.k), fill(s.k*s.n), fill(s.m*s.n)
		flops := 2 * float64(s.m) * float64(s.n) * float64(s.k)
		for _, v := range []struct {
			name string
			f    func()
		}{
			{"gemm", func() { Sgemm(false, false, s.m, s.n, s.k, 1, x, s.k, y, s.n, 0, z, s.n) }},
			{"gemm-par2", func() { SgemmParallel(2, false, false, s.m, s.n, s.k, 1, x, s.k, y, s.n, 0, z, s.n) }},
			{"gonum", func() {
				blas32.Implementation().Sgemm(blas.NoTrans, blas.NoTrans, s.m, s.n, s.k, 1, x, s.k, y, s.n, 0, z, s.n)
			}},
		} {
			b.Run(fmt.Sprintf("%s/%s", s.name, v.name), func(b *testing.B) {
				for b.Loop() {
					v.f()
				}
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkKernels compares the micro-kernels on the MTAN-like shape.
func BenchmarkKernels(b *testing.B) {
	const m, n, k = 64, 1024, 576
	x, y, z := make([]float32, m*k), make([]float32, k*n), make([]float32, m*n)
	for _, kr := range kernels() {
		b.Run(kr.name, func(b *testing.B) {
			saved := active
			active = kr
			defer func() { active = saved }()
			for b.Loop() {
				Sgemm(false, false, m, n, k, 1, x, k, y, n, 0, z, n)
			}
			b.ReportMetric(2*m*n*k*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
