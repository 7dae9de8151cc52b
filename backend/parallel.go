package backend

import (
	"runtime"

	"github.com/paretonav/paretonav/backend/internal/par"
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
