package kernels

import (
	"runtime"

	"github.com/paretonav/paretonav/internal/par"
)

// Bounds of productGrid's blocks. A product under gridMinWork
// multiply-adds (about 10 µs on one core, gemm's own bound) runs whole:
// waking workers and packing its operands once more per block cost more
// than it saves. A block along the first axis is at least gridMinFirst
// long: each block packs all of the other operand, and over 48 rows that
// packing is at most 1/96 of the block's flops. Along the second axis a
// block is at least gridMinSecond long: two of the micro-kernel's
// 32-column panels (a narrower block computes whole panels for few
// values).
const (
	gridMinWork   = 1 << 21
	gridMinFirst  = 48
	gridMinSecond = 64
)

// productGrid returns how many blocks a product of extent a along its
// first axis and b along its second (k multiply-adds an element) splits
// into among w workers: the grid of the most blocks up to w, blocks at
// least gridMinFirst and gridMinSecond long, and of those grids the one
// split most along the first axis, so that the blocks number about w on
// any number of cores; 1×1
// for a product under gridMinWork or one worker.
func productGrid(w, a, b, k int) (na, nb int) {
	if w <= 1 || int64(a)*int64(b)*int64(k) < gridMinWork {
		return 1, 1
	}
	maxA, maxB := max(1, min(w, a/gridMinFirst)), max(1, b/gridMinSecond)
	na, nb = maxA, 1
	// The grid of most blocks up to w; of those, the most along a.
	for i := maxA; i >= 1 && na*nb < w; i-- {
		if j := min(w/i, maxB); i*j > na*nb {
			na, nb = i, j
		}
	}
	return na, nb
}

// oneBlock reports whether gridFor(a, b, k, ·) runs as one block on the
// caller whatever the cores (as oneChunk for parallelWork).
func oneBlock(a, b, k int) bool {
	return a <= 0 || b <= 0 || int64(a)*int64(b)*int64(k) < gridMinWork
}

// gridFor runs f on the blocks of productGrid(GOMAXPROCS, a, b, k): block
// [a0, a1) × [b0, b1), on the calling goroutine and the workers.
func gridFor(a, b, k int, f func(a0, a1, b0, b1 int)) {
	// Work under gridMinWork is one block whatever the workers: run it
	// here before GOMAXPROCS (the scheduler's lock) and the pool.
	if oneBlock(a, b, k) {
		f(0, max(a, 0), 0, max(b, 0))
		return
	}
	na, nb := productGrid(runtime.GOMAXPROCS(0), a, b, k)
	ca, cb := (a+na-1)/na, (b+nb-1)/nb
	na, nb = (a+ca-1)/ca, (b+cb-1)/cb
	par.For(na*nb, func(t int) {
		a0, b0 := (t/nb)*ca, (t%nb)*cb
		f(a0, min(a0+ca, a), b0, min(b0+cb, b))
	})
}
