package png

import (
	"runtime"

	"github.com/paretonav/paretonav/internal/par"
)

// minColsPerWorker is the fewest columns of J worth a goroutine: below it
// the start-up cost outweighs the work.
const minColsPerWorker = 1 << 14

// numWorkers resolves a Workers setting (0 = runtime.NumCPU()) and caps it
// so that each worker gets at least minColsPerWorker columns of n.
func numWorkers(workers, n int) int {
	if workers <= 0 {
		workers = runtime.NumCPU()
	}
	if max := (n + minColsPerWorker - 1) / minColsPerWorker; workers > max {
		workers = max
	}
	if workers < 1 {
		workers = 1
	}
	return workers
}

// splitCols runs f(w, lo, hi) for workers contiguous column ranges covering
// [0, n), each starting on a multiple of align (except the last end), and
// waits for all of them. Worker w always gets the w-th range, so that a
// reduction over w in order is deterministic for a given worker count.
// The ranges run on the backend's worker pool (internal/par), whose
// workers are usually still awake from the kernels of the step's backward
// passes: a goroutine per range cost a thread wake-up (a futex call) per
// range and direction, a point of the ConvNeXt fixture's step.
func splitCols(n, workers, align int, f func(w, lo, hi int)) {
	if workers <= 1 {
		f(0, 0, n)
		return
	}
	chunk := (n + workers - 1) / workers
	chunk = (chunk + align - 1) / align * align
	par.For(workers, func(w int) {
		if lo, hi := w*chunk, min((w+1)*chunk, n); lo < hi {
			f(w, lo, hi)
		}
	})
}
