// Package parallel splits the element loops of backend's kernels over the
// cores: ranges of at least ElemChunk elements each, on the shared workers
// of internal/par, and no goroutine or closure at all for a loop too short
// to split.
package parallel

import (
	"runtime"

	"github.com/paretonav/paretonav/internal/par"
)

// ElemChunk is the fewest elements an element-wise kernel gives one
// goroutine: below it, starting a goroutine costs more than it saves.
const ElemChunk = 1 << 14

// Elems calls f on consecutive ranges [lo, hi) covering [0, n),
// on up to GOMAXPROCS goroutines, each range at least ElemChunk long. f
// must treat elements independently: any split gives the same result.
func Elems(n int, f func(lo, hi int)) { Items(n, 1, f) }

// Items is Elems for n items of per elements each: each
// goroutine gets at least ElemChunk elements.
func Items(n, per int, f func(lo, hi int)) {
	// The work bound first: runtime.GOMAXPROCS takes the scheduler's lock,
	// a cost per call that small kernels, most calls, need not pay.
	w := min(n*max(per, 1)/ElemChunk, n)
	if w > 1 {
		w = min(w, runtime.GOMAXPROCS(0))
	}
	if w <= 1 {
		f(0, n)
		return
	}
	par.Ranges(n, w, 1, func(_, lo, hi int) { f(lo, hi) })
}

// Vec2 and Vec3 are the operands of an element-wise kernel run by
// ForElems: the destination and one or two sources.
type (
	Vec2 struct{ D, X []float32 }
	Vec3 struct{ D, X, Y []float32 }
)

// ForElems is Elems for a kernel f that captures nothing, reading
// its operands from a: a loop too short to split runs f on the caller
// without making a closure. The closure a caller of Elems writes
// is a heap object per call, even when the loop stays on the caller (the
// workers may run it, so the compiler cannot keep it on the stack): a
// few per kernel, thousands per step of a small model.
func ForElems[A any](n int, a A, f func(a A, lo, hi int)) { ForItems(n, 1, a, f) }

// OneChunk reports whether ForItems(n, per, ·) runs as one chunk on
// the caller. A generic kernel's f is a heap object even when it
// captures nothing (it carries its type's dictionary), so generic
// callers test this first and call their kernel directly.
func OneChunk(n, per int) bool { return min(n*max(per, 1)/ElemChunk, n) <= 1 }

// ForItems is ForElems for n items of per elements each (Items).
func ForItems[A any](n, per int, a A, f func(a A, lo, hi int)) {
	if OneChunk(n, per) {
		f(a, 0, n)
		return
	}
	Items(n, per, func(lo, hi int) { f(a, lo, hi) })
}

// Copy copies src into dst (of one length) on all cores when it is long.
func Copy(dst, src []float32) {
	ForElems(len(dst), Vec2{D: dst, X: src[:len(dst)]}, func(v Vec2, lo, hi int) { copy(v.D[lo:hi], v.X[lo:hi]) })
}
