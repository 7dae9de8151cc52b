// Package gemm is the backend's float32 matrix product: a Goto/BLIS style
// Sgemm (packed panels of A and B, KC×NC/MC cache blocking, pooled packing
// buffers, a register-blocked micro-kernel in Go assembly) for amd64 CPUs
// with AVX2 and FMA (6×16 kernel) or AVX-512F (6×32 kernel, and a 12×32
// one over two of its packed panels for every whole 12-row tile), chosen
// by CPUID at start-up. Three shape-driven variants keep small products fast:
// A·Bᵀ with long rows runs a 3×4 dot-product kernel (no packing), products
// with few rows of A read B in place, products with few columns compute
// Cᵀ. Other CPUs and architectures (and tests forcing it) fall back to
// gonum's blas32. Sgemm is deterministic: the same arguments on the same
// kind of CPU give bit-identical results (the summation order depends on
// the kernel and the shapes, so SgemmParallel's split may change it).
package gemm

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/paretonav/paretonav/internal/par"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// Cache blocking: a KC×NC panel of B is packed once and reused by every
// MC×KC panel of A; a KC×NR micro-panel of B stays in L1 while the MR-row
// micro-panels of A stream through it.
const (
	blockK = 256
	blockM = 96   // multiple of every kernel's MR
	blockN = 3072 // multiple of every kernel's NR
)

// kernel is a micro-kernel: c[i*ldc+j] += Σ_l a[l*mr+i]·b[l*nr+j] for the
// packed micro-panels a (kc×mr) and b (kc×nr) and an mr×nr tile of c.
type kernel struct {
	mr, nr int
	name   string
	// over, when not 0, writes the tile over c instead of adding to it.
	fn func(kc int, a, b, c *float32, ldc, over int)
	// farC, when not 0, is the bit of over by which fn and direct
	// prefetch the tile of c before the loop (for c's rows at least
	// farRow values apart).
	farC int
	// direct, if set, is fn reading an untransposed b in place (row l of
	// the kc×nr panel at b + l·ldb), used when m is small and packing B
	// would cost as much as the product. With far ≠ 0 (rows at least
	// farRow values apart) it may prefetch each row's next panel.
	direct func(kc int, a, b, c *float32, ldc, ldb, over, far int)
	// directA, if set, is fn reading an untransposed a in place (row i of
	// the mr×kc panel at a + i·lda), used when n is small: each value of
	// a then meets few columns of b, and packing it would cost as much as
	// the product.
	directA func(kc int, a *float32, lda int, b, c *float32, ldc, over int)
	// fn2, direct2 and directA2, if set, are fn, direct and directA for
	// 2·mr rows: two adjacent packed micro-panels of a (the second at
	// a + mr·kc) or 2·mr rows of a in place. Each element of c is summed
	// in the same order, so they give the same bits; they run whole tiles
	// of 2·mr rows, where one pair of loads of b feeds twice the FMAs.
	fn2      func(kc int, a, b, c *float32, ldc, over int)
	direct2  func(kc int, a, b, c *float32, ldc, ldb, over, far int)
	directA2 func(kc int, a *float32, lda int, b, c *float32, ldc, over int)
	// rows and rows2, if set, are direct and direct2 with row l of the
	// kc×nr panel of b at b + offs[l] values (SgemmRows).
	rows  func(kc int, a, b, c *float32, ldc int, offs *int, over int)
	rows2 func(kc int, a, b, c *float32, ldc int, offs *int, over int)
	// dot, if set, is a 3×4 dot-product kernel for op(a)·op(b) with a
	// not transposed and b transposed (rows of both contiguous along k):
	// c[i*ldc+j] += alpha·Σ_{l<k} ai[l]·bj[l], k ≥ 1.
	dot func(k int, a0, a1, a2, b0, b1, b2, b3, c *float32, ldc int, alpha float32)
	// dotSeg, if set, is dot over rows of nitem items of nseg segments
	// of k values, segment s of item t at ai + t·ia + s·sa and bj + t·ib
	// + s·sb (SdotRowsSeg).
	dotSeg func(k, nseg, sa, sb int, a0, a1, a2, b0, b1, b2, b3, c *float32, ldc int, alpha float32, nitem, ia, ib int)
}

// Sgemm runs A·Bᵀ as dot products (when the kernel has a dot kernel) for
// k ≥ dotMinK, k ≥ dotMinRatio·n and n·k ≤ dotMaxB: with short rows the
// dot kernel's reductions cost more than packing B; the rows of b, read
// again for every three rows of a, should stay in L2. Measured first with
// the Go packing loops (GFLOP/s packed -> dots: 10×81×784 12 -> 100,
// 20×250×100 27 -> 53, 128×256×256 78 -> 110, 64×288×64 52 -> 49,
// 64×576×32 52 -> 29); since the packing kernels only rows long next to
// their count still favour the dots (both cores: 10×81×784 41 -> 88,
// 128×256×256 84 -> 81, 20×250×100 55 -> 35, 64×576×384 118 -> 87,
// 512×2304×96 126 -> 44). Tests change them to cover both paths.
// Products of at least one whole panel of columns that blocked reads a in
// place for (aInPlace) skip them: a is then neither packed nor read again
// for every four columns (two cores, the swapped weight gradients of 3×3
// convolutions: 1152×128×384 166 against 110 GFLOP/s, 576×64×256 178
// against 101, 120×32×1024 166 against 129; 128 rows, not whole panels,
// within ±5% either way).
var (
	dotMinK     = 48
	dotMaxB     = 1 << 18
	dotMinRatio = 2
)

// useDirectA enables reading a in place (kernel.directA) for products of at
// most directAMaxN columns; tests turn it off to compare. Rows that do not
// fill a whole panel (512 filters are 85 panels of 6 and 2 rows) are
// packed, the whole panels read in place: MTAN's 512-filter 3×3 layers
// over a batch of 4×6 planes (512×96×4608) went from 87 to 97–102 GFLOP/s
// of CPU time on one core with the panels in place. The swapped
// weight gradients of convolutions with 64 and 128 filters are such
// products (BenchmarkDirectA, one core: 576×64×6144 146 → 170 GFLOP/s,
// 576×128×6144 171 → 181; the 3×3 weight gradients on MTAN's large planes
// 8–14% faster on two cores, BenchmarkConvGradW).
var (
	useDirectA  = true
	directAMaxN = 128
)

// aliasRow is the row stride of a (in values: 4 KB) whose multiples keep
// a product with a partial last panel packing all of a: rows a multiple
// of 4 KB apart fall into the same L1 sets, and twelve of them read in
// place evict each other (a 64×64×1024 A·Bᵀ ran at 55–73 GFLOP/s of CPU
// time in place against 76–84 packed, and at 76–88 in place with rows
// 1040 values apart).
const aliasRow = 1024

// useWide enables the micro-kernels' 2·mr-row variants (kernel.fn2) for
// whole tiles; tests turn it off to compare. The 12×32 AVX-512 kernel ran
// hot in L1 at 225 against 200 GFLOP/s for the 6×32 one on one core.
var useWide = true

// Products with m ≤ directMaxM and an untransposed b read full-width
// panels of b in place instead of packing them (kernel.direct). With the
// 12×32 kernels, 128 rows still pay: 128×1536×1152 (a 128-filter 3×3
// convolution's forward band) ran at 158 against 148 GFLOP/s packed,
// 96×1000×576 at 147 against 142, 256 rows the same either way.
var directMaxM = 128

// farRow is the row stride of b (in values: 4 KB) from which the direct
// kernel prefetches the rows' next panels itself: each of the kc rows of
// a panel then lies on its own page, more streams than the hardware
// prefetchers follow. On 1×1 convolutions over MTAN's 288×384 planes
// (64×110592×64 products) that took one core from 73 to 110 GFLOP/s;
// with rows closer together (the 3×3 convolutions' 1 MB im2col bands,
// 64×384×576) the prefetches cost about 7% (BenchmarkDirectFar).
var farRow = 1024

// active is the micro-kernel chosen for this CPU at start-up (nil: none,
// the fallback runs); useKernel lets tests force the fallback.
var (
	active    *kernel
	useKernel = true
)

// Accelerated reports whether Sgemm runs its own assembly micro-kernel on
// this CPU (false: it calls gonum's blas32).
func Accelerated() bool { return active != nil && useKernel }

// Kernel names the micro-kernel in use ("gonum" for the fallback).
func Kernel() string {
	if !Accelerated() {
		return "gonum"
	}
	return active.name
}

// Sgemm computes c = alpha·op(a)·op(b) + beta·c for row-major matrices,
// with BLAS semantics: op(a) is m×k (a stored k×m when transA), op(b) is
// k×n (b stored n×k when transB), c is m×n; lda, ldb and ldc are the row
// strides. When beta is 0, c is overwritten (NaN in c does not propagate).
// It runs on the calling goroutine. It panics on invalid arguments.
func Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, nil, true)
}

// SgemmBlocked is Sgemm with every product through the packed panels:
// A·Bᵀ never runs as dot products. The Winograd weight gradient's
// products (m×n filters by channels over k = 128 tiles, 64 of each) ran
// as dot products at 10.4 ms a pass and packed at 6.5 (MTAN's 64-channel
// 3×3 layers at 64×96, batch 4, two cores). It runs on the calling
// goroutine and panics on invalid arguments.
func SgemmBlocked(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, nil, false)
}

// sgemm is Sgemm, taking op(a)'s packed panels from pre (alpha 1) where
// it would pack them, and running A·Bᵀ as dot products only when
// mayDot.
func sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int, pre *PackedA, mayDot bool) {
	check(transA, transB, m, n, k, a, lda, b, ldb, c, ldc)
	if m == 0 || n == 0 {
		return
	}
	if !Accelerated() {
		ta, tb := blas.NoTrans, blas.NoTrans
		if transA {
			ta = blas.Trans
		}
		if transB {
			tb = blas.Trans
		}
		blas32.Implementation().Sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	if mayDot && !transA && transB && active.dot != nil && k >= dotMinK && k >= dotMinRatio*n && n*k <= dotMaxB && !(n >= active.nr && aInPlace(active, false, true, m, n, alpha)) {
		dots(active, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	if alpha == 0 || k == 0 {
		scale(m, n, beta, c, ldc)
		return
	}
	// With beta 0 the first k-block writes over c (neither zeroed first nor
	// read); otherwise c is scaled and every block adds to it.
	over := beta == 0
	if !over {
		scale(m, n, beta, c, ldc)
	}
	if n <= active.nr/2 && m >= 2*n {
		// Few columns: compute cᵀ = op(b)ᵀ·op(a)ᵀ, whose n rows pad
		// to MR instead of NR.
		blocked(active, !transB, !transA, n, m, k, alpha, b, ldb, a, lda, c, ldc, true, over, nil)
		return
	}
	if r := m % active.mr; pre == nil && r != 0 && m > r && lda%aliasRow != 0 && aInPlace(active, transA, transB, m-r, n, alpha) {
		// Whole panels read a in place; the last r rows pack theirs.
		blocked(active, transA, transB, m-r, n, k, alpha, a, lda, b, ldb, c, ldc, false, over, nil)
		blocked(active, transA, transB, r, n, k, alpha, a[(m-r)*lda:], lda, b, ldb, c[(m-r)*ldc:], ldc, false, over, nil)
		return
	}
	blocked(active, transA, transB, m, n, k, alpha, a, lda, b, ldb, c, ldc, false, over, pre)
}

// aInPlace reports whether blocked reads op(a) in place (kr.directA) for
// an m×n product rather than packing it: a untransposed, alpha 1 (packing
// scales by alpha), whole panels of mr rows, at most directAMaxN columns,
// and b not itself read in place.
func aInPlace(kr *kernel, transA, transB bool, m, n int, alpha float32) bool {
	return kr.directA != nil && useDirectA && !transA && alpha == 1 && m%kr.mr == 0 && n <= directAMaxN && !bInPlace(kr, transB, m)
}

// bInPlace reports whether blocked reads an untransposed b's full-width
// panels in place (kr.direct) for a product of m rows.
func bInPlace(kr *kernel, transB bool, m int) bool {
	return kr.direct != nil && !transB && m <= directMaxM
}

// dots computes c = alpha·a·bᵀ + beta·c as dot products of rows of a and
// rows of b (both contiguous along k), 3×4 at a time with kr.dot; edge
// blocks repeat their last row, go through a scratch tile and drop the
// duplicate results.
func dots(kr *kernel, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	scale(m, n, beta, c, ldc)
	if alpha == 0 {
		return
	}
	dotTiles(kr, m, n, k, alpha, a, lda, b, func(j int) int { return j * ldb }, c, ldc)
}

// dotTiles adds alpha·a·bᵀ to c, 3×4 at a time with kr.dot, row i of a
// at a[i·lda:], row j of b at b[boff(j):]; edge blocks repeat their last
// row, go through a scratch tile and drop the duplicate results.
func dotTiles(kr *kernel, m, n, k int, alpha float32, a []float32, lda int, b []float32, boff func(j int) int, c []float32, ldc int) {
	var t *[12]float32 // the edge tile, lent by edgeTiles on the first edge
	var ar [3]int
	var br [4]int
	for i0 := 0; i0 < m; i0 += 3 {
		h := min(3, m-i0)
		for i := range ar {
			ar[i] = (i0 + min(i, h-1)) * lda
		}
		for j0 := 0; j0 < n; j0 += 4 {
			w := min(4, n-j0)
			for j := range br {
				br[j] = boff(j0 + min(j, w-1))
			}
			if h == 3 && w == 4 {
				kr.dot(k, &a[ar[0]], &a[ar[1]], &a[ar[2]], &b[br[0]], &b[br[1]], &b[br[2]], &b[br[3]], &c[i0*ldc+j0], ldc, alpha)
				continue
			}
			if t == nil {
				t = edgeTiles.Get().(*[12]float32)
			}
			*t = [12]float32{}
			kr.dot(k, &a[ar[0]], &a[ar[1]], &a[ar[2]], &b[br[0]], &b[br[1]], &b[br[2]], &b[br[3]], &t[0], 4, alpha)
			for i := 0; i < h; i++ {
				row := c[(i0+i)*ldc+j0 : (i0+i)*ldc+j0+w]
				for j := range row {
					row[j] += t[4*i+j]
				}
			}
		}
	}
	if t != nil {
		edgeTiles.Put(t)
	}
}

// edgeTiles lends dotTiles its edge tile: the kernel, called through a
// function value, takes the tile's address, so that a tile on dotTiles'
// stack moved to the heap, an object per product.
var edgeTiles = sync.Pool{New: func() any { return new([12]float32) }}

// SdotRows adds a·bᵀ to c (m×n, row stride ldc) where row i of a is
// a[i·lda:][:k] and row j of b is b[boff[j]:][:k], rows of b that may
// overlap (a convolution's taps read shifted windows of one plane), as
// the dot-product kernel computes it. It returns false, doing nothing,
// when the CPU has no dot kernel (the caller then forms b's rows
// itself). It panics when a row lies outside its slice.
func SdotRows(m, n, k int, a []float32, lda int, b []float32, boff []int, c []float32, ldc int) bool {
	if !Accelerated() || active.dot == nil {
		return false
	}
	if m < 0 || n < 0 || k < 1 || len(boff) < n || lda < k || ldc < n {
		panic(fmt.Sprintf("gemm: SdotRows: m=%d n=%d k=%d lda=%d ldc=%d with %d row offsets", m, n, k, lda, ldc, len(boff)))
	}
	if m == 0 || n == 0 {
		return true
	}
	if len(a) < (m-1)*lda+k || len(c) < (m-1)*ldc+n {
		panic(fmt.Sprintf("gemm: SdotRows: len(a) = %d, len(c) = %d too short", len(a), len(c)))
	}
	for _, o := range boff[:n] {
		if o < 0 || o+k > len(b) {
			panic(fmt.Sprintf("gemm: SdotRows: row of b at %d (k=%d) outside len(b) = %d", o, k, len(b)))
		}
	}
	dotTiles(active, m, n, k, 1, a, lda, b, func(j int) int { return boff[j] }, c, ldc)
	return true
}

// SgemmParallel is Sgemm with c split into blocks (splitOf) run among up
// to workers goroutines; workers <= 1 or a small product runs on the
// calling goroutine. Without a micro-kernel it calls gonum's Sgemm, which
// has its own parallelism.
func SgemmParallel(workers int, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	check(transA, transB, m, n, k, a, lda, b, ldb, c, ldc)
	s := splitOf(workers, m, n, k)
	if s.blocks() <= 1 {
		Sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	par.For(s.blocks(), func(t int) {
		i0, i1, j0, j1 := s.block(t, m, n)
		var as, bs []float32
		if transA {
			as = a[i0:]
		} else {
			as = a[i0*lda:]
		}
		if transB {
			bs = b[j0*ldb:]
		} else {
			bs = b[j0:]
		}
		Sgemm(transA, transB, i1-i0, j1-j0, k, alpha, as, lda, bs, ldb, beta, c[i0*ldc+j0:], ldc)
	})
}

// Bounds of splitOf's blocks. A product under parallelMin multiply-adds
// (about 10 µs on one core) runs whole: waking workers and packing a and
// b once more per block cost more than it saves. A block is at least
// minCols columns (two 32-column micro-panels: a narrower one packs b for
// too little work) and, when the rows are split too, minRows rows (two
// of the kernels' row blocks, blockM, so that packing b once per block
// stays small next to the block's product). Block widths are whole
// micro-panels: colAlign columns, rowAlign rows (a multiple of every
// kernel's MR, so that a packed a splits along its panels).
const (
	parallelMin = 1 << 21
	minCols     = 64
	minRows     = 2 * blockM
	colAlign    = 32
	rowAlign    = 12
)

// split is the grid of blocks a parallel product runs as: rb×cb blocks of
// rc rows and cc columns (the last row and column of blocks smaller).
type split struct{ rc, cc, rb, cb int }

// blocks is the number of blocks of s.
func (s split) blocks() int { return s.rb * s.cb }

// block returns the rows [i0, i1) and columns [j0, j1) of block t of an
// m×n product split as s.
func (s split) block(t, m, n int) (i0, i1, j0, j1 int) {
	i0, j0 = (t/s.cb)*s.rc, (t%s.cb)*s.cc
	return i0, min(i0+s.rc, m), j0, min(j0+s.cc, n)
}

// splitOf returns the blocks an m×n×k product splits into among up to
// workers goroutines: as many blocks as workers where the product allows,
// of at least minCols columns and minRows rows, columns first (a column
// block packs only its own part of b; a row block packs all of b again).
// So a product of few columns (a Linear's 96 outputs over 1024 rows; any
// product on many cores) splits its rows too, and the blocks number about
// workers whatever that is. One block (the whole product) without a
// micro-kernel, for workers <= 1 or under parallelMin multiply-adds.
func splitOf(workers, m, n, k int) split {
	whole := split{rc: max(m, 1), cc: max(n, 1), rb: 1, cb: 1}
	if !Accelerated() || workers <= 1 || int64(m)*int64(n)*int64(k) < parallelMin {
		return whole
	}
	maxCw, maxRw := max(1, min(workers, n/minCols)), max(1, m/minRows)
	cw, rw := maxCw, 1
	if cw < workers {
		// The grid of most blocks up to workers; of those, the most columns.
		for c := maxCw; c >= 1; c-- {
			if r := min(workers/c, maxRw); r*c > rw*cw {
				cw, rw = c, r
			}
		}
	}
	if rw*cw <= 1 {
		return whole
	}
	cc := ((n+cw-1)/cw + colAlign - 1) / colAlign * colAlign
	rc := m
	if rw > 1 {
		rc = ((m+rw-1)/rw + rowAlign - 1) / rowAlign * rowAlign
	}
	return split{rc: rc, cc: cc, rb: (m + rc - 1) / rc, cb: (n + cc - 1) / cc}
}

// check panics like a reference BLAS on invalid dimensions, strides or
// slices too short for them.
func check(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	if m < 0 || n < 0 || k < 0 {
		panic(fmt.Sprintf("gemm: negative dimension m=%d n=%d k=%d", m, n, k))
	}
	ar, ac := m, k
	if transA {
		ar, ac = k, m
	}
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	need := func(name string, rows, cols, ld int, s []float32) {
		if ld < max(1, cols) {
			panic(fmt.Sprintf("gemm: ld%s = %d < %d", name, ld, max(1, cols)))
		}
		if rows > 0 && cols > 0 && len(s) < (rows-1)*ld+cols {
			panic(fmt.Sprintf("gemm: len(%s) = %d < %d", name, len(s), (rows-1)*ld+cols))
		}
	}
	need("a", ar, ac, lda, a)
	need("b", br, bc, ldb, b)
	need("c", m, n, ldc, c)
}

// packing buffers (one KC×NC panel of B, one MC×KC panel of A with room
// for an edge tile), kept between products in bounded lists: a sync.Pool
// is emptied by every garbage collection, and under a large model's memory
// limit collections came every few tens of milliseconds, each emptying
// made 3 MB buffers anew (2.6 GB in two steps of the full MTAN at
// 288×384).
var (
	poolA = packBufs{size: blockM*blockK + tileLen}
	poolB = packBufs{size: blockN * blockK}
)

// packBufs is a list of free packing buffers of one size.
type packBufs struct {
	mu   sync.Mutex
	size int
	free []*[]float32
}

// Get returns a free buffer, or a new one.
func (p *packBufs) Get() *[]float32 {
	p.mu.Lock()
	if n := len(p.free); n > 0 {
		b := p.free[n-1]
		p.free[n-1] = nil
		p.free = p.free[:n-1]
		p.mu.Unlock()
		return b
	}
	p.mu.Unlock()
	b := make([]float32, p.size)
	return &b
}

// Put keeps b for reuse, up to two buffers per worker and two more.
func (p *packBufs) Put(b *[]float32) {
	p.mu.Lock()
	// A short list is kept without asking GOMAXPROCS, which takes the
	// scheduler's lock (4 ≤ 2·GOMAXPROCS + 2 always).
	if n := len(p.free); n < 4 || n < 2*runtime.GOMAXPROCS(0)+2 {
		p.free = append(p.free, b)
	}
	p.mu.Unlock()
}

// tileLen is the room for an edge tile (mr×nr ≤ 16×32) after a packed
// panel of A in poolA's buffers: a tile on the stack would escape to the
// heap, its address passed to a kernel through a function value.
const tileLen = 16 * 32

// blocked is the Goto/BLIS loop nest around the micro-kernel kr: c +=
// alpha·op(a)·op(b), or cᵀ += alpha·op(a)·op(b) when transC (c then holds
// an n×m matrix; every tile goes through the scratch tile). With over, the
// first k-block writes c (cᵀ) instead of adding to it: c need not be
// zeroed and is not read.
func blocked(kr *kernel, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, transC, over bool, pre *PackedA) {
	mr, nr := kr.mr, kr.nr
	pa := poolA.Get()
	defer poolA.Put(pa)
	pb := poolB.Get()
	defer poolB.Put(pb)
	bufA, bufB := *pa, *pb
	tile := bufA[blockM*blockK:][:tileLen]
	far, pfc := 0, 0
	if ldb >= farRow {
		far = 1
	}
	if ldc >= farRow && !transC {
		pfc = kr.farC
	}
	// a or b read in place instead of packed (never a for cᵀ).
	inPlaceA := !transC && aInPlace(kr, transA, transB, m, n, alpha)
	direct := bInPlace(kr, transB, m)
	wide := useWide && kr.fn2 != nil && (kr.direct == nil || kr.direct2 != nil) && (kr.directA == nil || kr.directA2 != nil)
	for jc := 0; jc < n; jc += blockN {
		nc := min(blockN, n-jc)
		for pc := 0; pc < k; pc += blockK {
			kc := min(blockK, k-pc)
			first := over && pc == 0 // write c, do not add to it
			ov := 0
			if first {
				ov = 1
			}
			ovc := ov | pfc // the tile of c in place: prefetched where c's rows lie far apart
			if direct {
				// Only the last, partial panel is packed.
				if r := nc % nr; r != 0 {
					packB(false, b, ldb, pc, jc+nc-r, kc, r, nr, bufB[(nc-r)*kc:])
				}
			} else {
				packB(transB, b, ldb, pc, jc, kc, nc, nr, bufB)
			}
			for ic := 0; ic < m; ic += blockM {
				mc := min(blockM, m-ic)
				ap := bufA // the mc×kc block of op(a), packed
				switch {
				case inPlaceA:
				case pre != nil:
					ap = pre.data[pc*pre.mp+(pre.off+ic)*kc:]
				default:
					packA(transA, a, lda, ic, pc, mc, kc, mr, alpha, bufA)
				}
				for jr := 0; jr < nc; jr += nr {
					w := min(nr, nc-jr)
					bp := &bufB[jr*kc]
					for ir := 0; ir < mc; ir += mr {
						h := min(mr, mc-ir) // mr when inPlaceA: m is a multiple of mr
						ci := (ic+ir)*ldc + jc + jr
						if wide && w == nr && ir+2*mr <= mc && !transC {
							// A whole tile of 2·mr rows, in place in c.
							switch {
							case inPlaceA:
								kr.directA2(kc, &a[(ic+ir)*lda+pc], lda, bp, &c[ci], ldc, ovc)
							case direct:
								kr.direct2(kc, &ap[ir*kc], &b[pc*ldb+jc+jr], &c[ci], ldc, ldb, ovc, far)
							default:
								kr.fn2(kc, &ap[ir*kc], bp, &c[ci], ldc, ovc)
							}
							ir += mr
							continue
						}
						// A whole tile goes to c in place; an edge one (or cᵀ's)
						// through the scratch tile, written over.
						full := h == mr && w == nr && !transC
						t := tile[:mr*nr]
						dst, ld, ov := &t[0], nr, 1
						if full {
							dst, ld, ov = &c[ci], ldc, ovc
						}
						switch {
						case inPlaceA:
							kr.directA(kc, &a[(ic+ir)*lda+pc], lda, bp, dst, ld, ov)
						case direct && w == nr:
							kr.direct(kc, &ap[ir*kc], &b[pc*ldb+jc+jr], dst, ld, ldb, ov, far)
						default:
							kr.fn(kc, &ap[ir*kc], bp, dst, ld, ov)
						}
						if full {
							continue
						}
						if transC {
							for j := 0; j < w; j++ {
								col := c[(jc+jr+j)*ldc+ic+ir : (jc+jr+j)*ldc+ic+ir+h]
								if first {
									for i := range col {
										col[i] = t[i*nr+j]
									}
									continue
								}
								for i := range col {
									col[i] += t[i*nr+j]
								}
							}
							continue
						}
						for i := 0; i < h; i++ {
							row := c[ci+i*ldc : ci+i*ldc+w]
							if first {
								copy(row, t[i*nr:i*nr+w])
								continue
							}
							for j, v := range t[i*nr : i*nr+w] {
								row[j] += v
							}
						}
					}
				}
			}
		}
	}
}

// scale sets c = beta·c (c = 0 when beta is 0, whatever c held).
func scale(m, n int, beta float32, c []float32, ldc int) {
	switch beta {
	case 1:
	case 0:
		for i := 0; i < m; i++ {
			clear(c[i*ldc : i*ldc+n])
		}
	default:
		for i := 0; i < m; i++ {
			row := c[i*ldc : i*ldc+n]
			for j := range row {
				row[j] *= beta
			}
		}
	}
}
