//go:build !amd64

package vmath

// maxWidth is the most float32 lanes a kernel handles at once.
const maxWidth = 8

// kernel names a vector instruction set: outside amd64 only the scalar
// Go loop.
type kernel int

const scalar kernel = 0

// active is the kernel this CPU runs.
var active = scalar

// width is how many elements k handles at once (0 for scalar).
func (kernel) width() int { return 0 }

// sigmoid is never called outside amd64 (width 0).
func (kernel) sigmoid(dst, x *float32, n int) { panic("vmath: no vector kernel") }

// exp is never called outside amd64 (width 0).
func (kernel) exp(dst, x *float64, n int) { panic("vmath: no vector kernel") }

// String names k (for subtests and benchmarks).
func (kernel) String() string { return "scalar" }

// kernels lists the kernels this CPU can run.
func kernels() []kernel { return []kernel{scalar} }

// hasAffine reports that there is no AffineRelu32 kernel outside amd64.
func (kernel) hasAffine() bool { return false }

// affineRelu is never called outside amd64.
func (kernel) affineRelu(dst, x *float32, n int, a, b float32, relu int) {
	panic("vmath: no vector kernel")
}

// bnReluGradRow4 is never called outside amd64 (the scalar kernel only).
func bnReluGradRow4(x, gy, d *float32, n int, a, cf, b, m float32) (sx, sg float32) {
	panic("vmath: no vector kernel")
}

// hasWino reports that there are no Winograd kernels outside amd64.
func (kernel) hasWino() bool { return false }

// winoInputAVX2 is never called outside amd64.
func winoInputAVX2(rows *float32, ld int, dst *float32, stride int, n int) {
	panic("vmath: no vector kernel")
}

// winoOutputAVX2 is never called outside amd64.
func winoOutputAVX2(src *float32, stride int, y0, y1 *float32, n int, bias float32) (nonFinite float32) {
	panic("vmath: no vector kernel")
}

// winoFilterAVX2 is never called outside amd64.
func winoFilterAVX2(w *float32, fs int, dst *float32, stride int, n int) {
	panic("vmath: no vector kernel")
}

// winoFilterGradAVX2 is never called outside amd64.
func winoFilterGradAVX2(du *float32, stride int, dw *float32, n int, tmp *float32) {
	panic("vmath: no vector kernel")
}

// winoGradAVX2 is never called outside amd64.
func winoGradAVX2(y0, y1 *float32, dst *float32, stride int, n int) {
	panic("vmath: no vector kernel")
}

func axpyAVX2(a float32, x, y *float32, n int) { panic("vmath: no vector kernel") }

func dotAVX2(x, y *float32, n int) float32 { panic("vmath: no vector kernel") }

// plusZeroAVX2 is never called outside amd64.
func plusZeroAVX2(dst, x *float32, n int) { panic("vmath: no vector kernel") }

// deinterleaveRowsAVX2 is never called outside amd64.
func deinterleaveRowsAVX2(even, odd, src *float32, rows, n, es, os, ss int) {
	panic("vmath: no vector kernel")
}

// interleaveRowsAVX2 is never called outside amd64.
func interleaveRowsAVX2(dst, even, odd *float32, rows, n, ds, es, os int) {
	panic("vmath: no vector kernel")
}

// hasMaxPool reports that there is no MaxPool2x2Idx32 kernel outside amd64.
func (kernel) hasMaxPool() bool { return false }

// maxPool2x2AVX512 is never called outside amd64.
func maxPool2x2AVX512(x *float32, w int, idx *int64, oh, ow, base int) (rows int) {
	panic("vmath: no vector kernel")
}

// hasGelu reports that there are no Gelu32 kernels outside amd64.
func (kernel) hasGelu() bool { return false }

// geluPre is never called outside amd64.
func (kernel) geluPre(t, p *float64, x *float32, n int) { panic("vmath: no vector kernel") }

// geluPost is never called outside amd64.
func (kernel) geluPost(dst, x *float32, t, e *float64, n int) { panic("vmath: no vector kernel") }

// geluGradPre is never called outside amd64.
func (kernel) geluGradPre(e *float64, x *float32, n int) { panic("vmath: no vector kernel") }

// geluGradPost is never called outside amd64.
func (kernel) geluGradPost(dst, x, y, g *float32, e *float64, n int) {
	panic("vmath: no vector kernel")
}

// addTo64AVX512 is never called outside amd64.
func addTo64AVX512(acc *float64, gr *float32, n int) { panic("vmath: no vector kernel") }

// addNormTo64AVX512 is never called outside amd64.
func addNormTo64AVX512(acc *float64, gr, x *float32, n int, mu, inv float64) {
	panic("vmath: no vector kernel")
}

// hasSums reports that there are no AddTo64 kernels outside amd64.
func (kernel) hasSums() bool { return false }

// normRowAVX512 is never called outside amd64.
func normRowAVX512(dst, x *float32, n int, mu, inv, s, b float64) { panic("vmath: no vector kernel") }

// normGradRowAVX512 is never called outside amd64.
func normGradRowAVX512(dst, x, gr *float32, n int, mu, inv, m, mx, si float64) {
	panic("vmath: no vector kernel")
}

// reluGradAVX512 is never called outside amd64.
func reluGradAVX512(dst, y, gr *float32, n int) { panic("vmath: no vector kernel") }

// normSums8AVX512 is never called outside amd64.
func normSums8AVX512(x, gr *float32, S, n int, mu, inv, mg, mgx *[8]float64) {
	panic("vmath: no vector kernel")
}

// sums8AVX512 is never called outside amd64.
func sums8AVX512(x *float32, S, n int, acc, mu *[8]float64) { panic("vmath: no vector kernel") }

// prodSums8AVX512 is never called outside amd64.
func prodSums8AVX512(gr, o *float32, S, n int, acc, mu, inv *[8]float64) {
	panic("vmath: no vector kernel")
}
