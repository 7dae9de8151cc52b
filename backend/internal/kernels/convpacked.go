package kernels

import (
	"runtime"
	"sync"
	"unsafe"

	fgemm "github.com/paretonav/paretonav/backend/internal/gemm"
)

// usePackFilters enables packedFor's packed filters; tests turn it off to
// compare.
var usePackFilters = true

// packedFor is gemmFor(n) for a convolution whose products all take one
// fixed op(a) (m×k, row stride lda: the filters, or their transpose in
// the input gradient) against many b (its samples and im2col bands): the
// float32 products with that a run on it packed once, on the first of
// them (gemm.PackA, the same panels and bits as packing it per product),
// instead of once per product; other products go to gemmFor(n) as they
// were. Only filters of at most bandCacheElems values (1 MB) are packed
// once: they stay in L2 between products, where larger ones packed per
// product were faster (256 channels, 16×24: forward 271–281 against
// 258–267 GFLOP/s). MTAN's 64-channel layers at 64×96 form 16 bands a
// sample, each product packing the filters again: forward and input
// gradient 4–9% faster, 6–18% at 192×288, 128 channels 0–5%
// (interleaved runs of BenchmarkConvMTAN's shapes). release gives the
// packed copy back; call it after the last product.
func packedFor[T float](n int, tA bool, m, k int, a []T, lda int) (mul func(tA, tB bool, m, n, k int, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int), release func()) {
	base := gemmFor[T](n)
	a32, ok := any(a).([]float32)
	if !ok || !usePackFilters || !fgemm.Accelerated() || m == 0 || k == 0 || m*k > bandCacheElems {
		return base, func() {}
	}
	par := parallelProduct(n)
	var (
		once sync.Once
		buf  *[]float32
		p    fgemm.PackedA
	)
	pack := func() {
		buf = getScratch[float32](&colScratch, fgemm.PackedALen(m, k))
		p = fgemm.PackA(tA, m, k, a32, lda, *buf)
	}
	fixed := unsafe.SliceData(a32)
	packed := func(tA2, tB bool, m2, n2, k2 int, a2 []T, lda2 int, b []T, ldb int, beta T, c []T, ldc int) {
		x, ok := any(a2).([]float32)
		if !ok || tA2 != tA || m2 != m || k2 != k || lda2 != lda || unsafe.SliceData(x) != fixed || n2 == 0 {
			base(tA2, tB, m2, n2, k2, a2, lda2, b, ldb, beta, c, ldc)
			return
		}
		once.Do(pack)
		b32, c32 := any(b).([]float32), any(c).([]float32)
		if par {
			fgemm.SgemmPackedParallel(runtime.GOMAXPROCS(0), &p, tB, n2, b32, ldb, any(beta).(float32), c32, ldc)
			return
		}
		fgemm.SgemmPacked(&p, tB, n2, b32, ldb, any(beta).(float32), c32, ldc)
	}
	return packed, func() {
		if buf != nil {
			colScratch.pool.Put(buf)
		}
	}
}
