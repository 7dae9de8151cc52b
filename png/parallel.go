package png

import (
	"runtime"
	"sync/atomic"

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
	par.Ranges(n, workers, align, f)
}

// maxChunks bounds the number of chunks a Constrain pass cuts the columns
// into (chunkCols), and so the memory of its per-chunk partial sums.
const maxChunks = 64

// chunkCols is the width of the chunks of a Constrain pass over n
// columns: at least minColsPerWorker, and at most maxChunks of them. It
// depends on n alone, so that partial sums kept per chunk and added in
// chunk order give the same bits whatever the number of workers.
func chunkCols(n int) int {
	return max(minColsPerWorker, (n+maxChunks-1)/maxChunks)
}

// numChunks is the number of chunks of chunkCols(n) columns covering
// [0, n) (1 for n = 0).
func numChunks(n int) int {
	return max(1, (n+chunkCols(n)-1)/chunkCols(n))
}

// forChunks runs f(k, lo, hi) for every chunk k of chunkCols(n) columns
// covering [0, n), on at most numWorkers(workers, n) goroutines of the
// worker pool, each taking the next chunk left, and waits for all of
// them. A reduction kept per chunk and summed over k in order does not
// depend on the number of workers or on which worker ran a chunk.
func forChunks(n, workers int, f func(k, lo, hi int)) {
	cw, nc := chunkCols(n), numChunks(n)
	run := func(k int) { f(k, k*cw, min((k+1)*cw, n)) }
	w := min(numWorkers(workers, n), nc)
	if w <= 1 {
		for k := 0; k < nc; k++ {
			run(k)
		}
		return
	}
	var next atomic.Int32
	par.For(w, func(int) {
		for {
			k := int(next.Add(1)) - 1
			if k >= nc {
				return
			}
			run(k)
		}
	})
}
