package vmath

import "github.com/paretonav/paretonav/internal/cpu"

// maxWidth is the most float32 lanes a kernel handles at once.
const maxWidth = 8

// kernel names a vector instruction set.
type kernel int

const (
	scalar kernel = iota // pure Go
	avx2                 // AVX2+FMA, 4 float64 lanes
	avx512               // AVX-512F, 8 float64 lanes
)

// active is the kernel this CPU runs.
var active = best()

// width is how many elements k handles at once (0 for scalar).
func (k kernel) width() int {
	switch k {
	case avx2:
		return 4
	case avx512:
		return 8
	}
	return 0
}

// sigmoid runs k's Sigmoid kernel on n elements, n a multiple of
// k.width().
func (k kernel) sigmoid(dst, x *float32, n int) {
	switch k {
	case avx2:
		sigmoidAVX2(dst, x, n)
	case avx512:
		sigmoidAVX512(dst, x, n)
	}
}

// exp runs k's Exp64 kernel on n elements, n a multiple of k.width().
func (k kernel) exp(dst, x *float64, n int) {
	switch k {
	case avx2:
		expAVX2(dst, x, n)
	case avx512:
		expAVX512(dst, x, n)
	}
}

// String names k (for subtests and benchmarks).
func (k kernel) String() string {
	return [...]string{"scalar", "avx2", "avx512"}[k]
}

// sigmoidAVX2 is the AVX2+FMA Sigmoid kernel: n a multiple of 4.
//
//go:noescape
func sigmoidAVX2(dst, x *float32, n int)

// sigmoidAVX512 is the AVX-512F Sigmoid kernel: n a multiple of 8.
//
//go:noescape
func sigmoidAVX512(dst, x *float32, n int)

// expAVX2 is the AVX2+FMA Exp64 kernel: n a multiple of 4.
//
//go:noescape
func expAVX2(dst, x *float64, n int)

// expAVX512 is the AVX-512F Exp64 kernel: n a multiple of 8.
//
//go:noescape
func expAVX512(dst, x *float64, n int)

// kernels lists the kernels this CPU can run, scalar first.
func kernels() []kernel {
	ks := []kernel{scalar}
	hasAVX2, hasAVX512 := cpu.AVX2, cpu.AVX512
	if hasAVX2 {
		ks = append(ks, avx2)
	}
	if hasAVX512 {
		ks = append(ks, avx512)
	}
	return ks
}

// best is the fastest of kernels().
func best() kernel {
	ks := kernels()
	return ks[len(ks)-1]
}

// affineReluAVX512 is AffineRelu32's AVX-512F kernel: n a multiple of 16;
// relu ≠ 0 applies the Relu.
//
//go:noescape
func affineReluAVX512(dst, x *float32, n int, a, b float32, relu int)

// hasAffine reports whether k has an AffineRelu32 kernel (AVX-512 only).
func (k kernel) hasAffine() bool { return k == avx512 }

// affineRelu runs k's AffineRelu32 kernel on n elements, n a multiple of 16.
func (k kernel) affineRelu(dst, x *float32, n int, a, b float32, relu int) {
	affineReluAVX512(dst, x, n, a, b, relu)
}

// bnReluGradRow4 is BNReluGradRow32's AVX kernel on n elements, n a
// multiple of 4 (d may be nil).
//
//go:noescape
func bnReluGradRow4(x, gy, d *float32, n int, a, cf, b, m float32) (sx, sg float32)

// hasWino reports whether k has the Winograd transform kernels (AVX2:
// every vector kernel).
func (k kernel) hasWino() bool { return k != scalar }

// winoInputAVX2 is WinoInput's float32 kernel on n tiles: the last n
// mod 8 through masked stores, reading the rows' columns up to
// 2·⌈n/8⌉·8 + 2.
//
//go:noescape
func winoInputAVX2(rows *float32, ld int, dst *float32, stride int, n int)

// winoOutputAVX2 is WinoOutput's float32 kernel on n tiles (the last n
// mod 8 through masked loads and stores), returning the sum of v − v over
// the values v it writes.
//
//go:noescape
func winoOutputAVX2(src *float32, stride int, y0, y1 *float32, n int, bias float32) (nonFinite float32)

// winoFilterAVX2 is WinoFilter's float32 kernel on n filters fs floats
// apart, n a multiple of 8.
//
//go:noescape
func winoFilterAVX2(w *float32, fs int, dst *float32, stride int, n int)

// winoFilterGradAVX2 is WinoFilterGrad's float32 kernel on n filters, n
// a multiple of 8, with tmp 80 floats of scratch (the last 8 the sums of
// v − v over the values written, added to).
//
//go:noescape
func winoFilterGradAVX2(du *float32, stride int, dw *float32, n int, tmp *float32)

// winoGradAVX2 is WinoGrad's float32 kernel on n tiles (the last n mod 8
// through masked loads and stores).
//
//go:noescape
func winoGradAVX2(y0, y1 *float32, dst *float32, stride int, n int)

// axpyAVX2 is Axpy32's AVX2+FMA kernel: n a multiple of 16.
//
//go:noescape
func axpyAVX2(a float32, x, y *float32, n int)

// dotAVX2 is Dot32's AVX2+FMA kernel: n a multiple of 16.
//
//go:noescape
func dotAVX2(x, y *float32, n int) float32

// plusZeroAVX2 is PlusZero32's AVX2 kernel: n a multiple of 16.
//
//go:noescape
func plusZeroAVX2(dst, x *float32, n int)

// deinterleaveRowsAVX2 is Deinterleave32Rows's AVX2 kernel: the first n
// pairs (a multiple of 8) of each of rows rows; strides in elements.
//
//go:noescape
func deinterleaveRowsAVX2(even, odd, src *float32, rows, n, es, os, ss int)

// interleaveRowsAVX2 is Interleave32Rows's AVX2 kernel: the first n pairs
// (a multiple of 8) of each of rows rows; strides in elements.
//
//go:noescape
func interleaveRowsAVX2(dst, even, odd *float32, rows, n, ds, es, os int)

// hasMaxPool reports whether k has MaxPool2x2Idx32's kernel (AVX-512 only:
// its lane permutations across two vectors and masked compares).
func (k kernel) hasMaxPool() bool { return k == avx512 }

// maxPool2x2AVX512 is MaxPool2x2Idx32's AVX-512F kernel.
//
//go:noescape
func maxPool2x2AVX512(x *float32, w int, idx *int64, oh, ow, base int) (rows int)

// hasGelu reports whether k has Gelu32's kernels (AVX-512 only).
func (k kernel) hasGelu() bool { return k == avx512 }

// geluPre runs k's first Gelu32 kernel on n elements, n a multiple of 8.
func (k kernel) geluPre(t, p *float64, x *float32, n int) { geluPreAVX512(t, p, x, n, &phiConsts) }

// geluPost runs k's last Gelu32 kernel on n elements, n a multiple of 8.
func (k kernel) geluPost(dst, x *float32, t, e *float64, n int) {
	geluPostAVX512(dst, x, t, e, n, &phiConsts)
}

// geluPreAVX512 sets t[i] and p[i] to phiPoly(float64(x[i])) for i < n,
// n a multiple of 8.
//
//go:noescape
func geluPreAVX512(t, p *float64, x *float32, n int, c *[20]float64)

// geluPostAVX512 sets dst[i] = float32(v·phiFinish(v, t[i], e[i])), v =
// float64(x[i]), for i < n, n a multiple of 8.
//
//go:noescape
func geluPostAVX512(dst, x *float32, t, e *float64, n int, c *[20]float64)

// geluGradPre runs k's first GeluGrad32 kernel on n elements, n a
// multiple of 8.
func (k kernel) geluGradPre(e *float64, x *float32, n int) {
	geluGradPreAVX512(e, x, n, &geluGradConsts)
}

// geluGradPost runs k's last GeluGrad32 kernel on n elements, n a
// multiple of 8.
func (k kernel) geluGradPost(dst, x, y, g *float32, e *float64, n int) {
	geluGradPostAVX512(dst, x, y, g, e, n, &geluGradConsts)
}

// geluGradPreAVX512 sets e[i] = −0.5·(v·v), v = float64(x[i]), for i < n,
// n a multiple of 8.
//
//go:noescape
func geluGradPreAVX512(e *float64, x *float32, n int, c *[6]float64)

// geluGradPostAVX512 is GeluGrad32's last loop on n elements, n a
// multiple of 8, e[i] holding exp(−x²/2).
//
//go:noescape
func geluGradPostAVX512(dst, x, y, gy *float32, e *float64, n int, c *[6]float64)

// addTo64AVX512 is AddTo64's AVX-512F kernel: n a multiple of 8.
//
//go:noescape
func addTo64AVX512(acc *float64, gr *float32, n int)

// addNormTo64AVX512 is AddNormTo64's AVX-512F kernel: n a multiple of 8.
//
//go:noescape
func addNormTo64AVX512(acc *float64, gr, x *float32, n int, mu, inv float64)

// hasSums reports whether k has AddTo64's and AddNormTo64's kernels
// (AVX-512 only).
func (k kernel) hasSums() bool { return k == avx512 }

// normRowAVX512 is NormRow32's AVX-512F kernel: n a multiple of 8.
//
//go:noescape
func normRowAVX512(dst, x *float32, n int, mu, inv, s, b float64)

// normGradRowAVX512 is NormGradRow32's AVX-512F kernel: n a multiple of 8.
//
//go:noescape
func normGradRowAVX512(dst, x, gr *float32, n int, mu, inv, m, mx, si float64)

// reluGradAVX512 is ReluGrad32's AVX-512F kernel: n a multiple of 16.
//
//go:noescape
func reluGradAVX512(dst, y, gr *float32, n int)

// normSums8AVX512 is NormSums8's AVX-512F kernel over the first n values
// of each instance, n a multiple of 8.
//
//go:noescape
func normSums8AVX512(x, gr *float32, S, n int, mu, inv, mg, mgx *[8]float64)

// sums8AVX512 adds to acc[e] the values float64(x[e·S+j]) (mu nil) or
// the squares (float64(x[e·S+j]) − mu[e])², j < n in order, n a multiple
// of 8: Stats8's AVX-512F kernel.
//
//go:noescape
func sums8AVX512(x *float32, S, n int, acc, mu *[8]float64)

// prodSums8AVX512 is AddProdRuns8's AVX-512F kernel over the first n
// values of each run, n a multiple of 8 (mu and inv both nil or both not).
//
//go:noescape
func prodSums8AVX512(gr, o *float32, S, n int, acc, mu, inv *[8]float64)
