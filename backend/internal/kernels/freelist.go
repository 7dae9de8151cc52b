package kernels

import (
	"runtime"
	"sync"
)

// freeList keeps scratch buffers (*[]float32, *[]float64) between the
// operations that use them. A sync.Pool drops its contents at every
// garbage collection; under the memory limit of a large model (the full
// MTAN at 288×384 collects every few tens of milliseconds) that made each
// band buffer a fresh 16 MB allocation: 10 GB of them in two steps, and
// garbage that brought the next collection sooner. The list keeps at most
// freeKeep buffers; the rest go to the collector.
type freeList struct {
	mu   sync.Mutex
	free []any
}

// freeKeep is how many free buffers a freeList keeps: two per worker and
// two shared ones.
func freeKeep() int { return 2*runtime.GOMAXPROCS(0) + 2 }

// Put returns a buffer taken with getScratch; nothing may use it afterwards.
func (l *freeList) Put(v any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	// A short list keeps v without asking GOMAXPROCS, which takes the
	// scheduler's lock (4 ≤ freeKeep() always).
	if n := len(l.free); n < 4 || n < freeKeep() {
		l.free = append(l.free, v)
		return
	}
	// full: keep the larger buffer (a band rather than a small gather)
	small := 0
	for i, f := range l.free {
		if bufCap(f) < bufCap(l.free[small]) {
			small = i
		}
	}
	if bufCap(v) > bufCap(l.free[small]) {
		l.free[small] = v
	}
}

// take removes and returns the smallest free *[]T holding n values, or nil.
func take[T float](l *freeList, n int) *[]T {
	l.mu.Lock()
	defer l.mu.Unlock()
	best := -1
	for i, f := range l.free {
		if b, ok := f.(*[]T); ok && cap(*b) >= n && (best < 0 || cap(*b) < bufCap(l.free[best])) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	b := l.free[best].(*[]T)
	last := len(l.free) - 1
	l.free[best], l.free[last] = l.free[last], nil
	l.free = l.free[:last]
	return b
}

// bufCap is the capacity of a *[]float32 or *[]float64.
func bufCap(v any) int {
	switch b := v.(type) {
	case *[]float32:
		return cap(*b)
	case *[]float64:
		return cap(*b)
	}
	return 0
}
