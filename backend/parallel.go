package backend

import (
	"runtime"

	"github.com/paretonav/paretonav/internal/par"
)

// elemChunk is the fewest elements an element-wise kernel gives one
// goroutine: below it, starting a goroutine costs more than it saves.
const elemChunk = 1 << 14

// parallelElems calls f on consecutive ranges [lo, hi) covering [0, n),
// on up to GOMAXPROCS goroutines, each range at least elemChunk long. f
// must treat elements independently: any split gives the same result.
func parallelElems(n int, f func(lo, hi int)) { parallelItems(n, 1, f) }

// parallelItems is parallelElems for n items of per elements each: each
// goroutine gets at least elemChunk elements.
func parallelItems(n, per int, f func(lo, hi int)) {
	// The work bound first: runtime.GOMAXPROCS takes the scheduler's lock,
	// a cost per call that small kernels, most calls, need not pay.
	w := min(n*max(per, 1)/elemChunk, n)
	if w > 1 {
		w = min(w, runtime.GOMAXPROCS(0))
	}
	if w <= 1 {
		f(0, n)
		return
	}
	chunk := (n + w - 1) / w
	par.For((n+chunk-1)/chunk, func(i int) { f(i*chunk, min((i+1)*chunk, n)) })
}

// vec2 and vec3 are the operands of an element-wise kernel run by
// forElems: the destination and one or two sources.
type (
	vec2 struct{ d, x []float32 }
	vec3 struct{ d, x, y []float32 }
)

// forElems is parallelElems for a kernel f that captures nothing, reading
// its operands from a: a loop too short to split runs f on the caller
// without making a closure. The closure a caller of parallelElems writes
// is a heap object per call, even when the loop stays on the caller (the
// workers may run it, so the compiler cannot keep it on the stack): a
// few per kernel, thousands per step of a small model.
func forElems[A any](n int, a A, f func(a A, lo, hi int)) { forItems(n, 1, a, f) }

// oneItemChunk reports whether forItems(n, per, ·) runs as one chunk on
// the caller. A generic kernel's f is a heap object even when it
// captures nothing (it carries its type's dictionary), so generic
// callers test this first and call their kernel directly.
func oneItemChunk(n, per int) bool { return min(n*max(per, 1)/elemChunk, n) <= 1 }

// forItems is forElems for n items of per elements each (parallelItems).
func forItems[A any](n, per int, a A, f func(a A, lo, hi int)) {
	if oneItemChunk(n, per) {
		f(a, 0, n)
		return
	}
	parallelItems(n, per, func(lo, hi int) { f(a, lo, hi) })
}

// copyPar copies src into dst (of one length) on all cores when it is long.
func copyPar(dst, src []float32) {
	forElems(len(dst), vec2{dst, src[:len(dst)]}, func(v vec2, lo, hi int) { copy(v.d[lo:hi], v.x[lo:hi]) })
}
