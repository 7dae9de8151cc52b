package kernels

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"gorgonia.org/tensor"
)

// Into is the destination the backend offers an op's DoInto: Buf, a dead
// float32 buffer the result may be written into (an int64 result takes
// two float32 per element), and Wrap, a dead tensor that wrapped Buf, or
// nil. When the result is Buf itself with Wrap's shape, the op returns
// Wrap instead of a new tensor (a Gorgonia tensor is a header, its shape
// and its strides: several heap objects per op run, most of what a small
// model's step allocated). The caller passes a pointer to an Into it
// keeps (a slice in an interface is one more heap object per call) and
// guarantees that nothing else reads Buf or Wrap while the op runs.
type Into struct {
	Buf  []float32
	Wrap *tensor.Dense
}

// bufOf is buf's elements as []T: buf itself when it is a []T, an Into's
// Buf when T is float32, else nil, false.
func bufOf[T float](buf any) ([]T, bool) {
	switch b := buf.(type) {
	case []T:
		return b, true
	case *Into:
		var z T
		if _, ok := any(z).(float32); ok && b != nil {
			return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b.Buf))), len(b.Buf)), true
		}
	}
	return nil, false
}

// buf32 is buf's float32 elements (a []float32 or an Into's Buf), or nil.
func buf32(buf any) []float32 {
	b, _ := bufOf[float32](buf)
	return b
}

// offered holds the tensors offered with the buffers of the DoInto calls
// running (Into.Wrap), by the address of the buffer's first element:
// newTensor returns one of them instead of making a tensor when asked for
// exactly its buffer and shape. A buffer belongs to one running op at a
// time, so an entry is read only by the kernel that the op runs. The map
// is consulted only while it holds an entry (offeredN).
var offered struct {
	sync.Mutex
	m map[unsafe.Pointer]*tensor.Dense
}

var offeredN atomic.Int32

// offer registers into's tensor for its buffer while an op runs,
// returning the key that withdraw takes back (nil: nothing offered).
func offer(into *Into) unsafe.Pointer {
	if into == nil || into.Wrap == nil || len(into.Buf) == 0 {
		return nil
	}
	key := unsafe.Pointer(&into.Buf[0])
	offered.Lock()
	if offered.m == nil {
		offered.m = make(map[unsafe.Pointer]*tensor.Dense)
	}
	offered.m[key] = into.Wrap
	offered.Unlock()
	offeredN.Add(1)
	return key
}

// withdraw ends the offer that offer registered under key.
func withdraw(key unsafe.Pointer) {
	if key == nil {
		return
	}
	offered.Lock()
	delete(offered.m, key)
	offered.Unlock()
	offeredN.Add(-1)
}

// offeredFor is the offered tensor of shape s backed by exactly backing,
// or nil.
func offeredFor[T float | int64](s tensor.Shape, backing []T) *tensor.Dense {
	if len(backing) == 0 || offeredN.Load() == 0 {
		return nil
	}
	key := unsafe.Pointer(&backing[0])
	offered.Lock()
	d := offered.m[key]
	offered.Unlock()
	if d == nil || d.RequiresIterator() || d.IsScalar() || !d.Shape().Eq(s) {
		return nil
	}
	var z T
	switch any(z).(type) {
	case float32:
		if d.Dtype() != tensor.Float32 {
			return nil
		}
		if f := d.Float32s(); len(f) != len(backing) || unsafe.Pointer(&f[0]) != key {
			return nil
		}
		return d
	}
	return nil
}
