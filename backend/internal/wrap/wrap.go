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

// maxRank is the highest rank the cache keys; tensors of higher rank are
// made fresh each time.
const maxRank = 8

// key is a tensor's identity in the cache: its memory, length, element
// kind and shape. The address is a uintptr, which the garbage collector
// does not follow: a key must not keep its memory alive. An address
// reused by new memory cannot find the old tensor: the old tensor holds
// the old memory, so that while one lives, the other cannot be there.
type key struct {
	p    uintptr
	n    int
	f64  bool
	rank int
	dims [maxRank]int
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
// one. A scalar shape or a rank above maxRank always gives a new tensor.
func Dense[T float32 | float64](shape []int, backing []T) *tensor.Dense {
	if len(shape) == 0 || len(shape) > maxRank || len(backing) == 0 {
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(backing))
	}
	k := key{p: uintptr(unsafe.Pointer(&backing[0])), n: len(backing), rank: len(shape)}
	var z T
	_, k.f64 = any(z).(float64)
	copy(k.dims[:], shape)
	s := &cache[(k.p>>6)%shards]
	s.mu.Lock()
	if w, ok := s.m[k]; ok {
		if d := w.Value(); d != nil {
			s.mu.Unlock()
			return d
		}
	}
	s.mu.Unlock()
	d := tensor.New(tensor.WithShape(shape...), tensor.WithBacking(backing))
	w := weak.Make(d)
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
