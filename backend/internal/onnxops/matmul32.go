package onnxops

import (
	"runtime"

	fgemm "github.com/paretonav/paretonav/backend/internal/gemm"
)

// Float32 matrix products. Gemm and MatMul in float32 graphs run the
// float32 GEMM (backend/internal/gemm: the conv kernels' micro-kernels on
// both cores) on the float32 data, accumulating in float32 as ONNX
// Runtime and PyTorch do: the one exception to forward32Func's rule
// (values of the float64 formula rounded once), since a float64 product
// rounded once would need float64 copies of the operands and the float64
// GEMM, several times slower. TestMatMul32 bounds the difference.

// sgemm32 is gemm on float32 row-major data: c = alpha·op(a)·op(b) +
// beta·c, with op(a) m×k (a stored k×m when ta) and op(b) k×n.
func sgemm32(ta, tb bool, m, n, k int, alpha float32, a, b []float32, beta float32, c []float32) {
	if m == 0 || n == 0 {
		return
	}
	lda, ldb := k, n
	if ta {
		lda = m
	}
	if tb {
		ldb = k
	}
	if k == 0 {
		if beta == 0 { // c is overwritten, whatever it held (a buffer not zeroed first)
			clear(c[:m*n])
			return
		}
		for i := range c[:m*n] {
			c[i] *= beta
		}
		return
	}
	fgemm.SgemmParallel(runtime.GOMAXPROCS(0), ta, tb, m, n, k, alpha, a, max(1, lda), b, max(1, ldb), beta, c, n)
}
