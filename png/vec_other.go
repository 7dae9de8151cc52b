//go:build !amd64

package png

// useVec is false outside amd64: the passes over the weights run in Go.
var useVec = false

// gram2AVX512 is never called outside amd64.
func gram2AVX512(lanes *[5][8]float64, j0, j1, p, x *float32, n int) {
	panic("png: no vector kernel")
}

// extras2AVX512 is never called outside amd64.
func extras2AVX512(a *extras2Args, j0, j1, p, r, x *float32, n int) {
	panic("png: no vector kernel")
}

// combine2AVX512 is never called outside amd64.
func combine2AVX512(a *combine2Args, dst, j0, j1, p, x, r *float32, n int) int {
	panic("png: no vector kernel")
}

// range2AVX512 is never called outside amd64.
func range2AVX512(a *box2Args, j0, j1, p, r, x *float32, bins *uint8, n int, hist *[boxHists][boxBins]uint32) {
	panic("png: no vector kernel")
}

// two2AVX512 is never called outside amd64.
func two2AVX512(d, e, x0, x1 *float32, a0, a1 float64, n int, ss *[8]float64) {
	panic("png: no vector kernel")
}

// firstOutAVX512 is never called outside amd64.
func firstOutAVX512(x *float32, n int, lo, hi float32) int { panic("png: no vector kernel") }

// dot64AVX512 is never called outside amd64.
func dot64AVX512(x, y *float32, n int, lanes *[8]float64) { panic("png: no vector kernel") }

// gram3AVX512 is never called outside amd64.
func gram3AVX512(lanes *[9][8]float64, j0, j1, j2, p, x *float32, n int) {
	panic("png: no vector kernel")
}

// range3AVX512 is never called outside amd64.
func range3AVX512(a *box3Args, j0, j1, j2, p, r, x *float32, bins *uint8, n int, hist *[boxHists][boxBins]uint32) {
	panic("png: no vector kernel")
}

// extras3AVX512 is never called outside amd64.
func extras3AVX512(a *extras3Args, j0, j1, j2, p, r, x *float32, n int) {
	panic("png: no vector kernel")
}

// combine3AVX512 is never called outside amd64.
func combine3AVX512(a *combine3Args, dst, j0, j1, j2, p, x, r *float32, n int) int {
	panic("png: no vector kernel")
}

// plain2AVX512 is never called outside amd64.
func plain2AVX512(lanes *[5][8]float64, j0, j1, x *float32, n int) {
	panic("png: no vector kernel")
}

// plain3AVX512 is never called outside amd64.
func plain3AVX512(lanes *[9][8]float64, j0, j1, j2, x *float32, n int) {
	panic("png: no vector kernel")
}

// pieces2AVX512 is never called outside amd64.
func pieces2AVX512(a *pieces2Args, j0, j1, x, p, r *float32, n int) {
	panic("png: no vector kernel")
}

// pieces3AVX512 is never called outside amd64.
func pieces3AVX512(a *pieces3Args, j0, j1, j2, x, p, r *float32, n int) {
	panic("png: no vector kernel")
}
