package png

import "github.com/paretonav/paretonav/internal/cpu"

// useVec is whether the passes over the weights run their AVX-512
// kernels on this CPU (the tests turn it off to compare them with the Go
// loops).
var useVec = cpu.AVX512

// gram2AVX512 is metricGramRange2's kernel on n columns (a multiple of
// 8): lanes[k][l] is the sum over the columns ≡ l (mod 8) of K00, K10,
// K11, jp0 and jp1's terms (k = 0 … 4), each in column order.
//
//go:noescape
func gram2AVX512(lanes *[5][8]float64, j0, j1, p, x *float32, n int)

// extras2AVX512 is boxExtras2's kernel on n columns (a multiple of 8),
// P not nil; x is read only where a.flags asks for the unbounded
// update's test.
//
//go:noescape
func extras2AVX512(a *extras2Args, j0, j1, p, r, x *float32, n int)

// combine2AVX512 is boxCombine's kernel for m = 2 with a metric and a
// bound on n columns (a multiple of 8); it returns nonzero where an
// element written is not finite.
//
//go:noescape
func combine2AVX512(a *combine2Args, dst, j0, j1, p, x, r *float32, n int) int

// range2AVX512 is boxRange2's kernel on n columns (a multiple of 8) with
// a metric: it stores their ρ bins, counts them in hist, and answers a's
// sums per lane and the number of weights clipped.
//
//go:noescape
func range2AVX512(a *box2Args, j0, j1, p, r, x *float32, bins *uint8, n int, hist *[boxHists][boxBins]uint32)

// two2AVX512 is combineTwo's kernel on n values (a multiple of 8), e nil
// for 0; ss[l] is the sum of the squares of the values ≡ l (mod 8).
//
//go:noescape
func two2AVX512(d, e, x0, x1 *float32, a0, a1 float64, n int, ss *[8]float64)

// firstOutAVX512 is outsideRange's kernel on n values (a multiple of
// 16): the first index whose value is not in (lo, hi], or n.
//
//go:noescape
func firstOutAVX512(x *float32, n int, lo, hi float32) int

// dot64AVX512 is dot64's kernel on n values (a multiple of 8): lanes[l]
// sums the products of the values ≡ l (mod 8).
//
//go:noescape
func dot64AVX512(x, y *float32, n int, lanes *[8]float64)

// gram3AVX512 is metricGramRange3's kernel on n columns (a multiple of
// 8): lanes[k][l] is the sum over the columns ≡ l (mod 8) of K00, K10,
// K11, K20, K21, K22, jp0, jp1 and jp2's terms (k = 0 … 8).
//
//go:noescape
func gram3AVX512(lanes *[9][8]float64, j0, j1, j2, p, x *float32, n int)

// range3AVX512 is boxRange3's kernel on n columns (a multiple of 8) with
// a metric (see range2AVX512).
//
//go:noescape
func range3AVX512(a *box3Args, j0, j1, j2, p, r, x *float32, bins *uint8, n int, hist *[boxHists][boxBins]uint32)

// extras3AVX512 is boxExtras3's kernel on n columns (a multiple of 8),
// P not nil (see extras2AVX512).
//
//go:noescape
func extras3AVX512(a *extras3Args, j0, j1, j2, p, r, x *float32, n int)

// combine3AVX512 is boxCombine's kernel for m = 3 with a metric and a
// bound on n columns (a multiple of 8); it returns nonzero where an
// element written is not finite.
//
//go:noescape
func combine3AVX512(a *combine3Args, dst, j0, j1, j2, p, x, r *float32, n int) int

// plain2AVX512 is gramRange2's kernel on n columns (a multiple of 8):
// lanes[k][l] is the sum over the columns ≡ l (mod 8) of K00, K10, K11,
// je0 and je1's terms (k = 0 … 4), each in column order.
//
//go:noescape
func plain2AVX512(lanes *[5][8]float64, j0, j1, x *float32, n int)

// plain3AVX512 is gramRange3's kernel on n columns (a multiple of 8):
// lanes[k][l] is the sum over the columns ≡ l (mod 8) of K00, K10, K11,
// K20, K21, K22, je0, je1 and je2's terms (k = 0 … 8).
//
//go:noescape
func plain3AVX512(lanes *[9][8]float64, j0, j1, j2, x *float32, n int)

// pieces2AVX512 is boxCols.pieces2's kernel on n copied weights (a
// multiple of 8): a's sums per lane of h, g0, g1, H00, H01, H10 and H11's
// terms and the number of weights clipped.
//
//go:noescape
func pieces2AVX512(a *pieces2Args, j0, j1, x, p, r *float32, n int)

// pieces3AVX512 is boxCols.pieces3's kernel on n copied weights (a
// multiple of 8): a's sums per lane of h, g0, g1, g2 and H's nine
// entries' terms (row-major) and the number of weights clipped.
//
//go:noescape
func pieces3AVX512(a *pieces3Args, j0, j1, j2, x, p, r *float32, n int)
