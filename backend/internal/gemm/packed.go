package gemm

import (
	"fmt"

	"github.com/paretonav/paretonav/internal/par"
)

// PackedA is op(a) of m×k products packed once into the micro-panels the
// kernels read, for many products with the same a and different b: a
// convolution's filters over its samples and im2col bands, which Sgemm
// would otherwise pack again for every call (and every 3072 columns).
// SgemmPacked gives Sgemm's bits: the same panels, the same loops; where
// Sgemm would not pack a (few columns read a in place, the dot-product
// and Cᵀ shapes, no kernel) it calls Sgemm.
type PackedA struct {
	transA bool
	m, k   int
	a      []float32 // op(a) unpacked, for the products that do not pack it
	lda    int
	mr, mp int       // the kernel's panel height; m rounded up to whole panels
	data   []float32 // k-blocks of blockK columns, each mp×kc in panels
	off    int       // the first row of data's this product uses (rows: a multiple of mr)
}

// PackedALen is the length of the buffer PackA needs for an m×k op(a)
// (0 without a micro-kernel).
func PackedALen(m, k int) int {
	if !Accelerated() {
		return 0
	}
	return (m + active.mr - 1) / active.mr * active.mr * k
}

// PackA packs op(a) (m×k; a stored k×m when transA) into buf, of at least
// PackedALen(m, k) values, which the returned PackedA keeps using. It
// panics on invalid dimensions or short slices, like Sgemm.
func PackA(transA bool, m, k int, a []float32, lda int, buf []float32) PackedA {
	check(transA, false, m, 0, k, a, lda, nil, 1, nil, 1) // a's dimensions and length
	p := PackedA{transA: transA, m: m, k: k, a: a, lda: lda}
	if !Accelerated() {
		return p
	}
	mr := active.mr
	p.mr, p.mp = mr, (m+mr-1)/mr*mr
	if len(buf) < p.mp*k {
		panic(fmt.Sprintf("gemm: PackA: len(buf) = %d < %d", len(buf), p.mp*k))
	}
	p.data = buf[:p.mp*k]
	for pc := 0; pc < k; pc += blockK {
		kc := min(blockK, k-pc)
		for ic := 0; ic < m; ic += blockM {
			packA(transA, a, lda, ic, pc, min(blockM, m-ic), kc, mr, 1, p.data[pc*p.mp+ic*kc:])
		}
	}
	return p
}

// SgemmPacked computes c = op(a)·op(b) + beta·c for the packed op(a) of
// p (m×k) and op(b) k×n, as Sgemm with alpha 1, on the calling goroutine.
func SgemmPacked(p *PackedA, transB bool, n int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if p.data == nil || !Accelerated() || active.mr != p.mr {
		Sgemm(p.transA, transB, p.m, n, p.k, 1, p.a, p.lda, b, ldb, beta, c, ldc)
		return
	}
	sgemm(p.transA, transB, p.m, n, p.k, 1, p.a, p.lda, b, ldb, beta, c, ldc, p, true)
}

// rows returns the rows [i0, i1) of p's op(a) as a PackedA sharing p's
// panels; i0 must be a multiple of the panel height (rowAlign is).
func (p *PackedA) rows(i0, i1 int) PackedA {
	q := *p
	q.m = i1 - i0
	if p.transA {
		q.a = p.a[i0:]
	} else {
		q.a = p.a[i0*p.lda:]
	}
	if p.data != nil {
		if i0%p.mr != 0 {
			panic(fmt.Sprintf("gemm: packed rows from %d, not a multiple of the panel height %d", i0, p.mr))
		}
		q.off = p.off + i0
	}
	return q
}

// SgemmPackedParallel is SgemmPacked with c split into blocks among up to
// workers goroutines, as SgemmParallel splits it: columns, and rows too
// where the columns give fewer blocks than workers (the blocks' rows
// start on the packed panels' boundaries).
func SgemmPackedParallel(workers int, p *PackedA, transB bool, n int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	check(p.transA, transB, p.m, n, p.k, p.a, p.lda, b, ldb, c, ldc)
	s := splitOf(workers, p.m, n, p.k)
	if s.blocks() <= 1 {
		SgemmPacked(p, transB, n, b, ldb, beta, c, ldc)
		return
	}
	par.For(s.blocks(), func(t int) {
		i0, i1, j0, j1 := s.block(t, p.m, n)
		q := p.rows(i0, i1)
		bs := b[j0:]
		if transB {
			bs = b[j0*ldb:]
		}
		SgemmPacked(&q, transB, j1-j0, bs, ldb, beta, c[i0*ldc+j0:], ldc)
	})
}
