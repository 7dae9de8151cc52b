package finetune

import (
	"runtime"

	"github.com/paretonav/paretonav/internal/par"
)

// minSpan is the fewest elements a span of a vector pass gets: below it
// handing the span to a worker costs more than the pass over it.
const minSpan = 1 << 16

// spansPerWorker is how many spans each worker's share of a pass is cut
// into, so that a worker slowed by another process does not hold the
// others up for a whole share.
const spansPerWorker = 4

// spans runs f over contiguous ranges [lo, hi) covering [0, n), on the
// worker pool the backend's kernels use (internal/par), and returns when
// all have returned. The loop's passes over θ-sized vectors (the
// optimizer's proposal and update, the finiteness checks) are element by
// element, so what they compute does not depend on how [0, n) is cut;
// a sum over a vector runs on one core, in an order fixed by the
// vector's length alone (stepvec's lanes), as its order decides the
// result's last bits.
func spans(n int, f func(lo, hi int)) {
	k := min(spansPerWorker*runtime.GOMAXPROCS(0), n/minSpan)
	par.Ranges(n, k, 1, func(_, lo, hi int) { f(lo, hi) })
}

// copyVec copies src into dst (of the same length) in spans on the worker
// pool: θ-sized copies are a memory-bound pass each, which one core does
// not saturate.
func copyVec(dst, src []float32) {
	spans(len(src), func(lo, hi int) { copy(dst[lo:hi], src[lo:hi]) })
}
