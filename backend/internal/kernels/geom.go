package kernels

import (
	"fmt"
	"runtime"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	fgemm "github.com/paretonav/paretonav/backend/internal/gemm"
)

// Auto-padding modes of ONNX's auto_pad attribute.
const (
	AutoPadNotSet    = "NOTSET"
	AutoPadSameUpper = "SAME_UPPER"
	AutoPadSameLower = "SAME_LOWER"
	AutoPadValid     = "VALID"
)

// window is the resolved geometry of a sliding window along one axis.
type window struct {
	in, k, s, d, pb, pe, out int
}

// resolveWindow computes the output length of a window of size k, stride s,
// dilation d over in elements with explicit pads pb, pe, or the pads implied by
// autoPad. ceil selects ONNX ceil_mode (a last window starting in the end
// padding is dropped, as PyTorch and ONNX Runtime do).
func resolveWindow(in, k, s, d, pb, pe int, autoPad string, ceil bool) (window, error) {
	if k < 1 || s < 1 || d < 1 {
		return window{}, fmt.Errorf("kernel %d, stride %d, dilation %d: expected all ≥ 1", k, s, d)
	}
	eff := (k-1)*d + 1
	switch autoPad {
	case "", AutoPadNotSet:
	case AutoPadValid:
		pb, pe = 0, 0
	case AutoPadSameUpper, AutoPadSameLower:
		out := (in + s - 1) / s
		total := max(0, (out-1)*s+eff-in)
		if autoPad == AutoPadSameUpper {
			pb, pe = total/2, total-total/2
		} else {
			pb, pe = total-total/2, total/2
		}
		return window{in: in, k: k, s: s, d: d, pb: pb, pe: pe, out: out}, nil
	default:
		return window{}, fmt.Errorf("auto_pad %q, expected NOTSET, SAME_UPPER, SAME_LOWER or VALID", autoPad)
	}
	if pb < 0 || pe < 0 {
		return window{}, fmt.Errorf("pads %d, %d: expected ≥ 0", pb, pe)
	}
	num := in + pb + pe - eff
	if num < 0 {
		return window{}, fmt.Errorf("window of extent %d does not fit input %d with pads %d, %d", eff, in, pb, pe)
	}
	out := num/s + 1
	if ceil {
		out = (num+s-1)/s + 1
		if (out-1)*s >= in+pb {
			out--
		}
	}
	return window{in: in, k: k, s: s, d: d, pb: pb, pe: pe, out: out}, nil
}

// spatialAttrs holds per-axis window attributes with ONNX defaults applied.
type spatialAttrs struct {
	kernel, strides, dilations, pads []int
}

// fillSpatial applies ONNX defaults for n spatial axes and validates lengths.
func fillSpatial(n int, kernel, strides, dilations, pads []int) (spatialAttrs, error) {
	one := func(v []int, name string) ([]int, error) {
		if len(v) == 0 {
			r := make([]int, n)
			for i := range r {
				r[i] = 1
			}
			return r, nil
		}
		if len(v) != n {
			return nil, fmt.Errorf("%s %v: expected %d values", name, v, n)
		}
		return v, nil
	}
	var a spatialAttrs
	var err error
	if len(kernel) != n {
		return a, fmt.Errorf("kernel %v: expected %d values", kernel, n)
	}
	a.kernel = kernel
	if a.strides, err = one(strides, "strides"); err != nil {
		return a, err
	}
	if a.dilations, err = one(dilations, "dilations"); err != nil {
		return a, err
	}
	switch len(pads) {
	case 0:
		a.pads = make([]int, 2*n)
	case 2 * n:
		a.pads = pads
	default:
		return a, fmt.Errorf("pads %v: expected %d values [begins..., ends...]", pads, 2*n)
	}
	return a, nil
}

// gemm computes C = A·B + beta·C (row-major, optional transposes) using
// every thread: float32 runs backend/internal/gemm's SgemmParallel (its
// assembly micro-kernel, or gonum's Sgemm on CPUs without one), float64
// gonum's Dgemm.
func gemm[T float](tA, tB bool, m, n, k int, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	ta, tb := blas.NoTrans, blas.NoTrans
	if tA {
		ta = blas.Trans
	}
	if tB {
		tb = blas.Trans
	}
	switch a := any(a).(type) {
	case []float32:
		fgemm.SgemmParallel(runtime.GOMAXPROCS(0), tA, tB, m, n, k, 1, a, lda, any(b).([]float32), ldb, float32(beta), any(c).([]float32), ldc)
	case []float64:
		blas64.Implementation().Dgemm(ta, tb, m, n, k, 1, a, lda, any(b).([]float64), ldb, float64(beta), any(c).([]float64), ldc)
	}
}

// reshape wraps gorgonia.Reshape, turning a panic into an error.
func reshape(op string, n *gorgonia.Node, s tensor.Shape) (r *gorgonia.Node, err error) {
	defer func() {
		if p := recover(); p != nil {
			r, err = nil, fmt.Errorf("ops: %s: reshape to %v panicked: %v", op, s, p)
		}
	}()
	r, err = gorgonia.Reshape(n, s)
	if err != nil {
		return nil, fmt.Errorf("ops: %s: reshape to %v: %w", op, s, err)
	}
	return r, nil
}

// gemmTile is the column tile of gemmSerial: a tile of B (k rows) stays in
// cache while every row of C is updated.
const gemmTile = 512

// gemmSerial computes c = op(a)·op(b) + beta·c like gemm (beta 0 or 1), on
// the calling goroutine, for row-major op(a) m×k and op(b) k×n; tB with tA
// is not supported. It is meant for the many small products of a
// convolution run by parallelFor workers, where gonum's Sgemm, which starts
// goroutines for every call and works in 64×64 blocks, spends more time
// scheduling than computing. Its inner loops are gonum's assembly axpy and
// dot, run along the longest of n (rows of C, tiled by gemmTile columns),
// k (dots) and m (rows of Cᵀ), with the operands transposed into scratch
// where that makes them contiguous.
// (Deep convolution layers have few output pixels n but long k and m.)
// float32 on CPUs with backend/internal/gemm's assembly micro-kernel runs
// its packed, cache-blocked gemm.Sgemm instead (also on the calling
// goroutine).
func gemmSerial[T float](tA, tB bool, m, n, k int, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	if a32, ok := any(a).([]float32); ok && fgemm.Accelerated() {
		fgemm.Sgemm(tA, tB, m, n, k, 1, a32, lda, any(b).([]float32), ldb, any(beta).(float32), any(c).([]float32), ldc)
		return
	}
	if tA && tB {
		panic("ops: gemmSerial: op(a)ᵀ·op(b)ᵀ is not supported")
	}
	if beta == 0 {
		for i := 0; i < m; i++ {
			clear(c[i*ldc : i*ldc+n])
		}
	}
	axpy, dot := kernelsOf[T]()
	opA := func(i, l int) T {
		if tA {
			return a[l*lda+i]
		}
		return a[i*lda+l]
	}
	opB := func(l, j int) T {
		if tB {
			return b[j*ldb+l]
		}
		return b[l*ldb+j]
	}
	switch {
	case n >= k && n >= m:
		// Rows of C (length n), tiled; op(b) rows made contiguous.
		br, bstr := b, ldb
		if tB {
			buf := getScratch[T](&gemmScratch, k*n)
			defer gemmScratch.pool.Put(buf)
			br, bstr = *buf, n
			for j := 0; j < n; j++ {
				for l := 0; l < k; l++ {
					br[l*n+j] = b[j*ldb+l]
				}
			}
		}
		for j0 := 0; j0 < n; j0 += gemmTile {
			j1 := min(j0+gemmTile, n)
			for i := 0; i < m; i++ {
				ci := c[i*ldc+j0 : i*ldc+j1]
				for l := 0; l < k; l++ {
					axpy(opA(i, l), br[l*bstr+j0:l*bstr+j1], ci)
				}
			}
		}
	case k >= m:
		// Dots along k: op(a) rows and op(b) columns made contiguous.
		ar, astr := a, lda
		if tA {
			buf := getScratch[T](&gemmScratch, m*k)
			defer gemmScratch.pool.Put(buf)
			ar, astr = *buf, k
			for i := 0; i < m; i++ {
				for l := 0; l < k; l++ {
					ar[i*k+l] = a[l*lda+i]
				}
			}
		}
		bc, bstr := b, ldb
		if !tB {
			buf := getScratch[T](&gemmScratch, n*k)
			defer gemmScratch.pool.Put(buf)
			bc, bstr = *buf, k
			for l := 0; l < k; l++ {
				for j := 0; j < n; j++ {
					bc[j*k+l] = b[l*ldb+j]
				}
			}
		}
		for i := 0; i < m; i++ {
			ai := ar[i*astr : i*astr+k]
			ci := c[i*ldc : i*ldc+n]
			for j := range ci {
				ci[j] += dot(ai, bc[j*bstr:j*bstr+k])
			}
		}
	default:
		// Rows of Cᵀ (length m): Cᵀ[j,:] += op(b)[l,j]·op(a)[:,l].
		at, astr := a, lda
		if !tA {
			buf := getScratch[T](&gemmScratch, k*m)
			defer gemmScratch.pool.Put(buf)
			at, astr = *buf, m
			for i := 0; i < m; i++ {
				for l := 0; l < k; l++ {
					at[l*m+i] = a[i*lda+l]
				}
			}
		}
		tbuf := getScratch[T](&gemmScratch, n*m)
		defer gemmScratch.pool.Put(tbuf)
		ct := *tbuf
		clear(ct)
		for j := 0; j < n; j++ {
			cj := ct[j*m : (j+1)*m]
			for l := 0; l < k; l++ {
				axpy(opB(l, j), at[l*astr:l*astr+m], cj)
			}
		}
		for i := 0; i < m; i++ {
			ci := c[i*ldc : i*ldc+n]
			for j := range ci {
				ci[j] += ct[j*m+i]
			}
		}
	}
}

// gemmScratch holds gemmSerial's transposed operands between calls.
var gemmScratch scratch

// kernelsOf returns y += s·x and x·y for T, running gonum's assembly.
func kernelsOf[T float]() (axpy func(s T, x, y []T), dot func(x, y []T) T) {
	var z T
	switch any(z).(type) {
	case float32:
		impl := blas32.Implementation()
		ax := func(s float32, x, y []float32) { impl.Saxpy(len(x), s, x, 1, y, 1) }
		dt := func(x, y []float32) float32 { return impl.Sdot(len(x), x, 1, y, 1) }
		return any(ax).(func(T, []T, []T)), any(dt).(func([]T, []T) T)
	default:
		impl := blas64.Implementation()
		ax := func(s float64, x, y []float64) { impl.Daxpy(len(x), s, x, 1, y, 1) }
		dt := func(x, y []float64) float64 { return impl.Ddot(len(x), x, 1, y, 1) }
		return any(ax).(func(T, []T, []T)), any(dt).(func([]T, []T) T)
	}
}
