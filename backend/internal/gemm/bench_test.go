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
// layer, an MTAN-like 3×3 convolution (64 filters, 64 channels, 32×32), and
// the transposed products of convolution gradients (NT: weight gradient
// dY·colᵀ, TN: input gradient Wᵀ·dY) from LeNet and MTAN (the -6144 ones
// over a 64-channel 3×3 conv's 6144 output positions, which pack).
var benchShapes = []struct {
	name    string
	tA, tB  bool
	m, n, k int
}{
	{"sq256", false, false, 256, 256, 256},
	{"sq512", false, false, 512, 512, 512},
	{"sq1024", false, false, 1024, 1024, 1024},
	{"lenet-conv1", false, false, 10, 784, 81},
	{"lenet-conv1x16", false, false, 10, 784 * 16, 81},
	{"lenet-conv2", false, false, 20, 100, 250},
	{"lenet-fc", false, false, 256, 50, 500},
	{"mtan", false, false, 64, 1024, 576},
	{"lenet-conv1-dW-NT", false, true, 10, 81, 784},
	{"lenet-conv2-dW-NT", false, true, 20, 250, 100},
	{"lenet-conv2-dX-TN", true, false, 250, 100, 20},
	{"mtan-dW-NT", false, true, 8, 72, 1024},
	{"mtan-dX-TN", true, false, 576, 16, 64},
	{"mtan-dX-TN-n4", true, false, 576, 4, 64},
	{"mtan-dW-NT-6144", false, true, 64, 576, 6144},
	{"mtan-dX-TN-6144", true, false, 576, 6144, 64},
	// ConvNeXt-T at 64×64, batch 4, stage 1: a Linear's 96 outputs over
	// 1024 rows and its input gradient (few columns: split by rows)
	{"convnext-fc2-NN", false, false, 1024, 96, 384},
	{"convnext-dA-NT", false, true, 1024, 96, 384},
}

// BenchmarkSgemm reports GFLOP/s for Sgemm (single goroutine),
// SgemmParallel with 2 workers and gonum's blas32 Sgemm (which starts its
// own goroutines).
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
		lda, ldb := s.k, s.n
		ta, tb := blas.NoTrans, blas.NoTrans
		if s.tA {
			lda, ta = s.m, blas.Trans
		}
		if s.tB {
			ldb, tb = s.k, blas.Trans
		}
		flops := 2 * float64(s.m) * float64(s.n) * float64(s.k)
		for _, v := range []struct {
			name string
			f    func()
		}{
			{"gemm", func() { Sgemm(s.tA, s.tB, s.m, s.n, s.k, 1, x, lda, y, ldb, 0, z, s.n) }},
			{"gemm-par2", func() { SgemmParallel(2, s.tA, s.tB, s.m, s.n, s.k, 1, x, lda, y, ldb, 0, z, s.n) }},
			{"gonum", func() { blas32.Implementation().Sgemm(ta, tb, s.m, s.n, s.k, 1, x, lda, y, ldb, 0, z, s.n) }},
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

// BenchmarkKernels reports Sgemm's GFLOP/s on benchShapes with each
// micro-kernel this CPU runs (the AVX2 one is what CPUs without AVX-512 get).
func BenchmarkKernels(b *testing.B) {
	for _, kr := range kernels() {
		for _, s := range benchShapes {
			x, y, z := make([]float32, s.m*s.k), make([]float32, s.k*s.n), make([]float32, s.m*s.n)
			lda, ldb := s.k, s.n
			if s.tA {
				lda = s.m
			}
			if s.tB {
				ldb = s.k
			}
			b.Run(kr.name+"/"+s.name, func(b *testing.B) {
				saved := active
				active = kr
				defer func() { active = saved }()
				for b.Loop() {
					Sgemm(s.tA, s.tB, s.m, s.n, s.k, 1, x, lda, y, ldb, 0, z, s.n)
				}
				b.ReportMetric(2*float64(s.m)*float64(s.n)*float64(s.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkSgemmSubnormal times the square 256 product on the inputs a
// backward pass meets deep in a network: entries of B that are subnormal
// (below 2⁻¹²⁶ ≈ 1.2·10⁻³⁸ in magnitude), and normal entries whose products
// are subnormal, beside normal inputs. On Intel CPUs each subnormal operand
// or result costs a microcode assist unless the kernels flush them to zero.
func BenchmarkSgemmSubnormal(b *testing.B) {
	const n = 256
	for _, c := range []struct {
		name   string
		sa, sb float32 // scales of A's and B's entries in [0, 1)
	}{
		{"normal", 1, 1},
		{"subnormal-in", 1, 1e-39},
		{"subnormal-out", 1e-20, 1e-20},
	} {
		rng := rand.New(rand.NewSource(1))
		fill := func(s float32) []float32 {
			d := make([]float32, n*n)
			for i := range d {
				d[i] = s * rng.Float32()
			}
			return d
		}
		x, y, z := fill(c.sa), fill(c.sb), make([]float32, n*n)
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				Sgemm(false, false, n, n, n, 1, x, n, y, n, 0, z, n)
			}
			b.ReportMetric(2*n*n*n*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkDirectFar times products that read b in place (m ≤ directMaxM)
// with and without the direct kernel's prefetching of far rows (farRow):
// 1×1 convolutions over MTAN's 288×384 and 144×192 planes, and a 3×3
// convolution's 1 MB im2col band (rows 384 values apart).
func BenchmarkDirectFar(b *testing.B) {
	saved := farRow
	defer func() { farRow = saved }()
	for _, s := range []struct{ m, n, k int }{{64, 110592, 64}, {64, 110592, 128}, {64, 27648, 128}, {64, 384, 576}, {128, 110592, 64}, {128, 27648, 256}} {
		a, bb, c := make([]float32, s.m*s.k), make([]float32, s.k*s.n), make([]float32, s.m*s.n)
		for i := range a {
			a[i] = float32(i%7) * 0.1
		}
		for i := range bb {
			bb[i] = float32(i%5) * 0.1
		}
		for _, far := range []bool{false, true} {
			b.Run(fmt.Sprintf("%dx%dx%d/far=%v", s.m, s.n, s.k, far), func(b *testing.B) {
				farRow = 1 << 30
				if far {
					farRow = 0
				}
				for b.Loop() {
					Sgemm(false, false, s.m, s.n, s.k, 1, a, s.k, bb, s.n, 0, c, s.n)
				}
				b.ReportMetric(2*float64(s.m*s.n*s.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkDirectA times products of few columns with a read in place
// (kernel.directA) and packed: the swapped weight gradient of 64-filter
// 3×3 convolutions (576 rows, 64 columns, over MTAN's 64×96 and 288×384
// im2col bands), one of 128-channel inputs, and one of 128 columns (where
// a is packed).
func BenchmarkDirectA(b *testing.B) {
	defer func(v bool, n int) { useDirectA, directAMaxN = v, n }(useDirectA, directAMaxN)
	for _, s := range []struct{ m, n, k int }{{576, 64, 6144}, {576, 64, 6912}, {1152, 64, 1536}, {576, 128, 6144}} {
		a, bb, c := make([]float32, s.m*s.k), make([]float32, s.k*s.n), make([]float32, s.m*s.n)
		for i := range a {
			a[i] = float32(i%7) * 0.1
		}
		for i := range bb {
			bb[i] = float32(i%5) * 0.1
		}
		for _, on := range []bool{false, true} {
			b.Run(fmt.Sprintf("%dx%dx%d/inplace=%v", s.m, s.n, s.k, on), func(b *testing.B) {
				useDirectA, directAMaxN = on, 128
				for b.Loop() {
					Sgemm(false, true, s.m, s.n, s.k, 1, a, s.k, bb, s.k, 1, c, s.n)
				}
				b.ReportMetric(2*float64(s.m*s.n*s.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
