package gemm

import "github.com/paretonav/paretonav/internal/cpu"

// sgemmKernel6x16 is the AVX2+FMA micro-kernel (MR=6, NR=16, 12 YMM
// accumulators): c[i*ldc+j] += Σ_l a[l*6+i]·b[l*16+j] (= when over ≠ 0).
//
//go:noescape
func sgemmKernel6x16(kc int, a, b, c *float32, ldc, over int)

// sgemmKernel6x32 is the AVX-512F micro-kernel (MR=6, NR=32, 12 ZMM
// accumulators): c[i*ldc+j] += Σ_l a[l*6+i]·b[l*32+j] (= when bit 0 of
// over is set); with bit 1 set it prefetches the tile of c first.
//
//go:noescape
func sgemmKernel6x32(kc int, a, b, c *float32, ldc, over int)

// sgemmKernel6x16s is sgemmKernel6x16 with B read in place (not packed):
// row l of the kc×16 panel starts at b + l·ldb. far is not used.
//
//go:noescape
func sgemmKernel6x16s(kc int, a, b, c *float32, ldc, ldb, over, far int)

// sgemmKernel6x32s is sgemmKernel6x32 with B read in place (not packed):
// row l of the kc×32 panel starts at b + l·ldb. With far ≠ 0 it prefetches
// each row's next panel (the next 32 values) as it goes.
//
//go:noescape
func sgemmKernel6x32s(kc int, a, b, c *float32, ldc, ldb, over, far int)

// sgemmKernel6x32a is sgemmKernel6x32 with A read in place (not packed):
// row i of the 6×kc panel starts at a + i·lda.
//
//go:noescape
func sgemmKernel6x32a(kc int, a *float32, lda int, b, c *float32, ldc, over int)

// sgemmKernel12x32 is sgemmKernel6x32 over two adjacent packed
// micro-panels of a (rows 0–5 at a, rows 6–11 at a + 6·kc): a 12×32 tile
// of c, each element summed in the same order as sgemmKernel6x32 sums it.
//
//go:noescape
func sgemmKernel12x32(kc int, a, b, c *float32, ldc, over int)

// sgemmKernel12x32s is sgemmKernel6x32s over two adjacent packed
// micro-panels of a, as sgemmKernel12x32.
//
//go:noescape
func sgemmKernel12x32s(kc int, a, b, c *float32, ldc, ldb, over, far int)

// sgemmKernel12x32a is sgemmKernel6x32a for twelve rows of a in place.
//
//go:noescape
func sgemmKernel12x32a(kc int, a *float32, lda int, b, c *float32, ldc, over int)

// sdotKernel3x4 is the AVX-512F dot-product kernel for A·Bᵀ with long
// rows: c[i*ldc+j] += alpha·Σ_{l<k} ai[l]·bj[l] (i < 3, j < 4, k ≥ 1).
//
//go:noescape
func sdotKernel3x4(k int, a0, a1, a2, b0, b1, b2, b3, c *float32, ldc int, alpha float32)

// sdotKernel3x4AVX2 is sdotKernel3x4 for AVX2+FMA.
//
//go:noescape
func sdotKernel3x4AVX2(k int, a0, a1, a2, b0, b1, b2, b3, c *float32, ldc int, alpha float32)

var (
	kernelAVX2 = &kernel{mr: 6, nr: 16, name: "avx2-6x16", fn: sgemmKernel6x16, direct: sgemmKernel6x16s, dot: sdotKernel3x4AVX2,
		rows: sgemmKernel6x16o, dotSeg: sdotKernel3x4SegAVX2}
	kernelAVX512 = &kernel{mr: 6, nr: 32, name: "avx512-6x32", fn: sgemmKernel6x32, direct: sgemmKernel6x32s, directA: sgemmKernel6x32a, dot: sdotKernel3x4, farC: 2,
		fn2: sgemmKernel12x32, direct2: sgemmKernel12x32s, directA2: sgemmKernel12x32a,
		rows: sgemmKernel6x32o, rows2: sgemmKernel12x32o, dotSeg: sdotKernel3x4Seg}
)

func init() {
	hasAVX2, hasAVX512 := cpu.AVX2, cpu.AVX512
	switch {
	case hasAVX512:
		active = kernelAVX512
	case hasAVX2:
		active = kernelAVX2
	}
}

// kernels lists the micro-kernels this CPU can run (for tests and
// benchmarks).
func kernels() []*kernel {
	avx2, avx512 := cpu.AVX2, cpu.AVX512
	var ks []*kernel
	if avx2 {
		ks = append(ks, kernelAVX2)
	}
	if avx512 {
		ks = append(ks, kernelAVX512)
	}
	return ks
}

// sgemmKernel6x32o is sgemmKernel6x32s with row l of the kc×32 panel of
// B at b + offs[l] (in values): rows anywhere, read in place.
//
//go:noescape
func sgemmKernel6x32o(kc int, a, b, c *float32, ldc int, offs *int, over int)

// sgemmKernel12x32o is sgemmKernel6x32o over two adjacent packed
// micro-panels of a, as sgemmKernel12x32.
//
//go:noescape
func sgemmKernel12x32o(kc int, a, b, c *float32, ldc int, offs *int, over int)

// sdotKernel3x4Seg is sdotKernel3x4 over rows of nitem items of nseg
// segments of k values: segment s of item t of row ai at ai + t·ia + s·sa,
// of row bj at bj + t·ib + s·sb (in values): c[i*ldc+j] += alpha·Σ_t Σ_s
// Σ_{l<k} ai[t·ia+s·sa+l]·bj[t·ib+s·sb+l], k, nseg, nitem ≥ 1.
//
//go:noescape
func sdotKernel3x4Seg(k, nseg, sa, sb int, a0, a1, a2, b0, b1, b2, b3, c *float32, ldc int, alpha float32, nitem, ia, ib int)

// sgemmKernel6x16o is sgemmKernel6x16s with row l of the kc×16 panel of
// B at b + offs[l] (in values).
//
//go:noescape
func sgemmKernel6x16o(kc int, a, b, c *float32, ldc int, offs *int, over int)

// sdotKernel3x4SegAVX2 is sdotKernel3x4Seg for AVX2+FMA.
//
//go:noescape
func sdotKernel3x4SegAVX2(k, nseg, sa, sb int, a0, a1, a2, b0, b1, b2, b3, c *float32, ldc int, alpha float32, nitem, ia, ib int)
