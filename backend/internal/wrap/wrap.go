// Package wrap makes the Gorgonia tensors that wrap a step's buffers,
// handing out the same tensor again for the same memory and shape.
//
// A Gorgonia dense tensor is several heap objects (the header, its shape
// and strides, the slices tensor.WithShape borrows from Gorgonia's pool and
// never gives back), and the kernels of a step wrap thousands of buffers:
// their results, their operands' sub-views and their scratch. The buffers
// themselves are the same from step to step (the executor's pool, the
// kernels' scratch pools), so the wrappers can be too: Dense returns the
// tensor it made last time for exactly this memory, length, element type
// and shape while that tensor is alive.
//
// The cache holds the tensors weakly: it keeps neither them nor their
// memory from the garbage collector; a tensor nothing else refers to is
// made again after a collection. Two callers wrapping the same memory
// with the same shape share one tensor: the tensors handed out must not
// be changed in place (reshaped, transposed, returned to Gorgonia's
// pool), only their elements.
package wrap

import (
	"sync"
	"unsafe"
	"weak"

	"gorgonia.org/tensor"
)

// key is a tensor's identity in the cache: its memory and length, and a
// hash of its element kind and shape (a lookup then checks the shape
// itself: two shapes of one hash share an entry, the later replacing the
// earlier). The address is a uintptr, which the garbage collector does
// not follow: a key must not keep its memory alive. An address reused by
// new memory cannot find the old tensor: the old tensor holds the old
// memory, so that while one lives, the other cannot be there.
type key struct {
	p, n uintptr
	h    uint64
}

// shapeHash mixes the dimensions of shape and f64 (FNV-1a over words).
func shapeHash(shape []int, f64 bool) uint64 {
	h := uint64(14695981039346656037)
	if f64 {
		h ^= 1
	}
	for _, d := range shape {
		h = (h ^ uint64(d)) * 1099511628211
	}
	return (h ^ uint64(len(shape))) * 1099511628211
}

// shards spread the cache over several locks: the concurrent backward
// passes and the kernels' workers wrap buffers at once.
const shards = 16

type shard struct {
	mu   sync.Mutex
	m    map[key]weak.Pointer[tensor.Dense]
	adds int // insertions since the last sweep of collected entries
}

var cache [shards]shard

// Dense returns a float32 or float64 tensor of the given shape backed by
// backing (len(backing) must be the shape's size): the tensor made by the
// last call for the same memory and shape while it is alive, else a new
// one. A scalar shape always gives a new tensor.
func Dense[T float32 | float64](shape []int, backing []T) *tensor.Dense {
	if len(shape) == 0 || len(backing) == 0 {
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(backing))
	}
	var z T
	_, f64 := any(z).(float64)
	k := key{p: uintptr(unsafe.Pointer(&backing[0])), n: uintptr(len(backing)), h: shapeHash(shape, f64)}
	s := &cache[(k.p>>6)%shards]
	s.mu.Lock()
	w, ok := s.m[k]
	s.mu.Unlock()
	if ok {
		if d := w.Value(); d != nil && (d.Dtype() == tensor.Float64) == f64 && d.Shape().Eq(tensor.Shape(shape)) {
			return d
		}
	}
	d := tensor.New(tensor.WithShape(shape...), tensor.WithBacking(backing))
	w = weak.Make(d)
	s.mu.Lock()
	if s.m == nil {
		s.m = make(map[key]weak.Pointer[tensor.Dense])
	}
	s.m[k] = w
	if s.adds++; s.adds > 64 && s.adds > len(s.m) {
		// Entries whose tensor was collected accumulate as buffers come
		// and go: drop them once the insertions since the last sweep
		// outnumber the entries, so that the map stays within about twice
		// the live tensors.
		for k, w := range s.m {
			if w.Value() == nil {
				delete(s.m, k)
			}
		}
		s.adds = 0
	}
	s.mu.Unlock()
	return d
}
