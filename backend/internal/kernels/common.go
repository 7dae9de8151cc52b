package kernels

import (
	"fmt"
	"hash"
	"hash/fnv"
	"runtime"
	"sync"
	"unsafe"

	"github.com/paretonav/paretonav/backend/internal/wrap"
	"github.com/paretonav/paretonav/internal/par"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// float is the set of element types every op in this package computes in.
type float interface{ ~float32 | ~float64 }

// kernelFn computes one result tensor from its operand tensors.
type kernelFn func(in []tensor.Tensor) (tensor.Tensor, error)

// Dependency markers for gradSpec.deps beyond the op's own inputs.
const (
	depOut  = -1 // the op's output
	depGrad = -2 // the gradient flowing into the op's output
)

// intoFn is a kernelFn writing its result into buf when buf is a []T
// of the result's length (zeroing it first), into a fresh slice
// otherwise (buf nil or of another length or type). The result tensor is
// backed by the slice written.
type intoFn func(buf any, in []tensor.Tensor) (tensor.Tensor, error)

// outBuf is buf zeroed when it is a []T of n values, else a fresh []T.
func outBuf[T float](buf any, n int) []T {
	if b, ok := bufOf[T](buf); ok && len(b) == n {
		ClearPar(b)
		return b
	}
	return make([]T, n)
}

// clearMin is the fewest elements a goroutine of ClearPar zeroes: 1 MB
// of float32 clears in tens of microseconds, so a chunk of it is long next
// to waking a worker; a buffer of w·clearMin and more uses w workers, up
// to GOMAXPROCS.
const clearMin = 1 << 18

// ClearPar zeroes b, splitting a long b among GOMAXPROCS goroutines.
func ClearPar[T any](b []T) {
	w := len(b) / clearMin // before GOMAXPROCS, which takes a lock
	if w > 1 {
		w = min(w, runtime.GOMAXPROCS(0))
	}
	if w <= 1 {
		clear(b)
		return
	}
	chunk := (len(b) + w - 1) / w
	par.For(w, func(i int) { clear(b[i*chunk : min((i+1)*chunk, len(b))]) })
}

// gradSpec describes how to compute the gradient of one input of a fnOp.
type gradSpec struct {
	// deps lists what the gradient needs: input indices, depOut or depGrad.
	deps []int
	// fn computes the gradient (shaped like the input) from the deps' values.
	fn kernelFn
	// into, when set, is fn writing into a given buffer (fnOp.DoInto).
	into intoFn
}

// fnOp is the one Gorgonia Op type behind every op of this package. It is
// immutable after construction and holds no execution state, so one instance
// may appear in several machines. Shapes are concrete at build time.
type fnOp struct {
	name     string       // op description including every parameter; hashed
	inDims   []int        // rank of each input
	inTypes  []hm.Type    // element type of each input; nil means the op's float type
	outShape tensor.Shape // concrete output shape
	outType  hm.Type      // element type of the output; nil means the op's float type
	fwd      kernelFn
	into     intoFn     // optional: fwd writing into a given buffer
	grads    []gradSpec // per input; a nil fn means not differentiable
	// reluInto, when set, is into followed by Relu, in one pass over the
	// data (BatchNorm with running statistics: FuseReluInto).
	reluInto intoFn
	// reluGrads, when set, computes the gradients of X, scale and B from
	// the gradient of the Relu reading the output (BatchNormReluGrads).
	reluGrads func(in []tensor.Tensor, gy tensor.Tensor, dx []float32, wantScale, wantB bool) (gx, gscale, gb tensor.Tensor)
	// parent and input name, for a gradient op SymDiff built, the op and
	// the input it is the gradient of.
	parent *fnOp
	input  int
	// flops, when set, returns the floating-point operations of the
	// forward pass (input −1) or of the gradient of an input, as a direct
	// computation and as executed (OpFLOPs).
	flops func(input int) (direct, executed int64)
	wino  bool // a convolution that runs as Winograd F(2×2, 3×3)
	// winoGradW: its weight gradient runs as Winograd too
	winoGradW bool
}

var _ gorgonia.Op = (*fnOp)(nil)
var _ gorgonia.SDOp = (*fnOp)(nil)
var _ gorgonia.ADOp = (*fnOp)(nil)

func (op *fnOp) Arity() int { return len(op.inDims) }

func (op *fnOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	ts := make([]hm.Type, 0, len(op.inDims)+1)
	for i, d := range op.inDims {
		var of hm.Type = a
		if op.inTypes != nil && op.inTypes[i] != nil {
			of = op.inTypes[i]
		}
		ts = append(ts, &gorgonia.TensorType{Dims: d, Of: of})
	}
	var of hm.Type = a
	if op.outType != nil {
		of = op.outType
	}
	ts = append(ts, &gorgonia.TensorType{Dims: op.outShape.Dims(), Of: of})
	return hm.NewFnType(ts...)
}

func (op *fnOp) InferShape(...gorgonia.DimSizer) (tensor.Shape, error) {
	return op.outShape.Clone(), nil
}

func (op *fnOp) Do(vals ...gorgonia.Value) (ret gorgonia.Value, err error) {
	if len(vals) != len(op.inDims) {
		return nil, fmt.Errorf("ops: %s: got %d inputs, expected %d", op.name, len(vals), len(op.inDims))
	}
	ts, err := borrowTensors(op.name, vals)
	if err != nil {
		return nil, err
	}
	defer returnTensors(ts)
	return runKernel(op.name, op.fwd, *ts)
}

// DoInto is Do writing the result into buf where the op supports it:
// buf must be the backing data (used) of this op's own previous result,
// which the caller guarantees is dead and shares no memory with vals. used
// is the backing data of the result when the op wrote into a buffer of
// its own (fresh or buf), nil when it ran Do (whose result may share
// memory with other values and must not be reused). buf is a []float32
// or an *Into (which also offers the tensor that last wrapped the
// buffer); used is then buf itself when the result is written there.
func (op *fnOp) DoInto(buf any, vals ...gorgonia.Value) (v gorgonia.Value, used any, err error) {
	if op.into == nil {
		v, err = op.Do(vals...)
		return v, nil, err
	}
	if len(vals) != len(op.inDims) {
		return nil, nil, fmt.Errorf("ops: %s: got %d inputs, expected %d", op.name, len(vals), len(op.inDims))
	}
	ts, err := borrowTensors(op.name, vals)
	if err != nil {
		return nil, nil, err
	}
	into, _ := buf.(*Into)
	key := offer(into)
	t, err := runInto(op.name, op.into, buf, *ts)
	withdraw(key)
	returnTensors(ts)
	if err != nil {
		return nil, nil, err
	}
	b := buf32(buf)
	if t.Dtype() == tensor.Int64 { // used: the float32 buffer holding d, if any
		d, _ := t.Data().([]int64)
		if len(d) > 0 && len(b) == 2*len(d) && unsafe.Pointer(&b[0]) == unsafe.Pointer(&d[0]) {
			if into != nil {
				return t, into, nil
			}
			return t, b, nil
		}
		return t, nil, nil
	}
	// A result written into buf hands back buf itself, already an
	// interface value: t.Data() would box the slice again (an allocation
	// per op run).
	if len(b) > 0 && t.Dtype() == tensor.Float32 {
		if d := data[float32](t); len(d) == len(b) && &d[0] == &b[0] {
			if into != nil {
				return t, into, nil
			}
			return t, buf, nil
		}
	}
	return t, t.Data(), nil
}

// intsIn is an int64 result of n elements over buf when buf is a float32
// buffer of 2n values aligned to 8 bytes (a pool buffer the backend gives
// an int64 value: DoInto), else a fresh slice. Its contents are undefined.
func intsIn(buf any, n int) []int64 {
	if b := buf32(buf); n > 0 && len(b) == 2*n && uintptr(unsafe.Pointer(&b[0]))%8 == 0 {
		return unsafe.Slice((*int64)(unsafe.Pointer(&b[0])), n)
	}
	return make([]int64, n)
}

// FuseReluInto runs op, a node's op, followed by Relu (max(y, 0) per
// element, as the backend's float32 Relu computes it) in one pass, writing
// into buf (nil: a fresh buffer) as DoInto does. ok is false, and nothing
// runs, for ops that have no fused form (every op but BatchNorm with
// running statistics) and for float64 data.
func FuseReluInto(op gorgonia.Op, buf *Into, vals ...gorgonia.Value) (v gorgonia.Value, used []float32, ok bool, err error) {
	f, isFn := op.(*fnOp)
	if !isFn || f.reluInto == nil || len(vals) != len(f.inDims) {
		return nil, nil, false, nil
	}
	ts, err := asTensors(f.name, vals)
	if err != nil {
		return nil, nil, true, err
	}
	if ts[0].Dtype() != tensor.Float32 {
		return nil, nil, false, nil
	}
	key := offer(buf)
	t, err := runInto(f.name+"+Relu", f.reluInto, buf, ts)
	withdraw(key)
	if err != nil {
		return nil, nil, true, err
	}
	return t, data[float32](t), true, nil
}

func (op *fnOp) ReturnsPtr() bool     { return false }
func (op *fnOp) CallsExtern() bool    { return false }
func (op *fnOp) OverwritesInput() int { return -1 }
func (op *fnOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "paretonav/ops.%s->%v", op.name, op.outShape)
}
func (op *fnOp) Hashcode() uint32 {
	h := fnv.New32a()
	op.WriteHash(h)
	return h.Sum32()
}
func (op *fnOp) String() string { return op.name }

// DiffWRT reports which inputs the op is differentiable with respect to.
func (op *fnOp) DiffWRT(n int) []bool {
	out := make([]bool, n)
	for i := range out {
		out[i] = i < len(op.grads) && op.grads[i].fn != nil
	}
	return out
}

// SymDiff builds one gradient node per differentiable input.
func (op *fnOp) SymDiff(inputs gorgonia.Nodes, output, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	if len(inputs) != len(op.inDims) {
		return nil, fmt.Errorf("ops: %s: SymDiff got %d inputs, expected %d", op.name, len(inputs), len(op.inDims))
	}
	ret := make(gorgonia.Nodes, len(inputs))
	for i, g := range op.grads {
		if g.fn == nil {
			continue
		}
		deps := make([]*gorgonia.Node, len(g.deps))
		for j, d := range g.deps {
			switch d {
			case depOut:
				deps[j] = output
			case depGrad:
				deps[j] = grad
			default:
				deps[j] = inputs[d]
			}
		}
		gop := &fnOp{
			name:     fmt.Sprintf("d%s/d%d", op.name, i),
			outShape: inputs[i].Shape(),
			fwd:      g.fn,
			into:     g.into,
			parent:   op,
			input:    i,
		}
		gop.inDims, gop.inTypes = nodeTypes(deps)
		n, err := apply(gop, deps...)
		if err != nil {
			return nil, err
		}
		ret[i] = n
	}
	return ret, nil
}

// DoDiff computes the gradients from the bound values and adds them to the
// inputs' gradient values (as Gorgonia's LispMachine expects).
func (op *fnOp) DoDiff(_ gorgonia.ExecutionContext, inputs gorgonia.Nodes, output *gorgonia.Node) error {
	gy, err := output.Grad()
	if err != nil {
		return fmt.Errorf("ops: %s: DoDiff: output gradient: %w", op.name, err)
	}
	for i, g := range op.grads {
		if g.fn == nil {
			continue
		}
		vals := make([]gorgonia.Value, len(g.deps))
		for j, d := range g.deps {
			switch d {
			case depOut:
				vals[j] = output.Value()
			case depGrad:
				vals[j] = gy
			default:
				vals[j] = inputs[d].Value()
			}
		}
		ts, err := asTensors(op.name, vals)
		if err != nil {
			return err
		}
		d, err := runKernel(op.name, g.fn, ts)
		if err != nil {
			return err
		}
		dst, err := inputs[i].Grad()
		if err != nil {
			return fmt.Errorf("ops: %s: DoDiff: gradient of input %d: %w", op.name, i, err)
		}
		dt, ok := dst.(tensor.Tensor)
		if !ok {
			return fmt.Errorf("ops: %s: DoDiff: gradient of input %d is %T, expected a tensor", op.name, i, dst)
		}
		if err := addInto(dt, d.(tensor.Tensor)); err != nil {
			return fmt.Errorf("ops: %s: DoDiff: %w", op.name, err)
		}
	}
	return nil
}

// nodeTypes returns ranks and element types (nil for float) of nodes.
func nodeTypes(ns []*gorgonia.Node) ([]int, []hm.Type) {
	dims := make([]int, len(ns))
	types := make([]hm.Type, len(ns))
	for i, n := range ns {
		dims[i] = n.Shape().Dims()
		if dt := n.Dtype(); dt != tensor.Float32 && dt != tensor.Float64 {
			types[i] = dt
		}
	}
	return dims, types
}

// apply adds op to the graph, turning a panic in Gorgonia into an error.
func apply(op *fnOp, children ...*gorgonia.Node) (n *gorgonia.Node, err error) {
	defer func() {
		if r := recover(); r != nil {
			n, err = nil, fmt.Errorf("ops: %s: building node panicked: %v", op.name, r)
		}
	}()
	n, err = gorgonia.ApplyOp(op, children...)
	if err != nil {
		return nil, fmt.Errorf("ops: %s: %w", op.name, err)
	}
	return n, nil
}

// runInto runs f writing into buf, as runKernel runs a kernelFn (a
// closure binding buf would be a heap object per op run).
func runInto(name string, f intoFn, buf any, in []tensor.Tensor) (out tensor.Tensor, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("ops: %s: kernel panicked: %v", name, r)
		}
	}()
	return f(buf, in)
}

// runKernel runs f, turning a panic into an error.
func runKernel(name string, f kernelFn, in []tensor.Tensor) (out tensor.Tensor, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("ops: %s: kernel panicked: %v", name, r)
		}
	}()
	return f(in)
}

func asTensors(name string, vals []gorgonia.Value) ([]tensor.Tensor, error) {
	ts := make([]tensor.Tensor, len(vals))
	return ts, fillTensors(name, ts, vals)
}

// fillTensors sets ts[i] to vals[i] as a tensor.
func fillTensors(name string, ts []tensor.Tensor, vals []gorgonia.Value) error {
	for i, v := range vals {
		t, ok := v.(tensor.Tensor)
		if !ok {
			return fmt.Errorf("ops: %s: input %d is %T, expected a tensor", name, i, v)
		}
		ts[i] = t
	}
	return nil
}

// operands holds the slices of operand tensors the ops running use
// (borrowTensors): a fresh slice per op run was a heap object each time.
var operands = sync.Pool{New: func() any { return new([]tensor.Tensor) }}

// borrowTensors is asTensors into a slice from operands; the caller gives
// it back with returnTensors once the kernel that reads it has returned
// (no kernel keeps its operand slice).
func borrowTensors(name string, vals []gorgonia.Value) (*[]tensor.Tensor, error) {
	p := operands.Get().(*[]tensor.Tensor)
	if cap(*p) < len(vals) {
		*p = make([]tensor.Tensor, len(vals))
	}
	*p = (*p)[:len(vals)]
	if err := fillTensors(name, *p, vals); err != nil {
		returnTensors(p)
		return nil, err
	}
	return p, nil
}

// returnTensors gives back a slice borrowTensors lent, dropping its
// references.
func returnTensors(p *[]tensor.Tensor) {
	clear(*p)
	operands.Put(p)
}

// data returns the contiguous row-major elements of t as []T, materialising
// views. A dense tensor of T's dtype gives its elements through its typed
// accessor, not Data(), which boxes the slice in an interface: a heap
// allocation per call, a fifth of the objects a step of ShuffleNet
// allocated (several calls per kernel).
func data[T float | int64](t tensor.Tensor) []T {
	if v, ok := t.(tensor.View); ok && v.IsMaterializable() {
		t = v.Materialize()
	}
	if d, ok := t.(*tensor.Dense); ok && !d.IsScalar() {
		var z T
		var p unsafe.Pointer
		n := 0
		switch any(z).(type) {
		case float32:
			if d.Dtype() == tensor.Float32 {
				f := d.Float32s()
				p, n = unsafe.Pointer(unsafe.SliceData(f)), len(f)
			}
		case float64:
			if d.Dtype() == tensor.Float64 {
				f := d.Float64s()
				p, n = unsafe.Pointer(unsafe.SliceData(f)), len(f)
			}
		case int64:
			if d.Dtype() == tensor.Int64 {
				f := d.Int64s()
				p, n = unsafe.Pointer(unsafe.SliceData(f)), len(f)
			}
		}
		if p != nil {
			return unsafe.Slice((*T)(p), n)
		}
	}
	return t.Data().([]T)
}

// newTensor wraps backing in a dense tensor of the given shape.
// tensor.WithShape copies shape (twice: into a slice it borrows from
// Gorgonia's pool and never gives back, then into the tensor's own), so
// the tensor keeps no reference to the caller's slice; a clone here was a
// third copy, one more allocation per kernel call.
//
// When a running op was offered a tensor wrapping exactly backing with
// this shape (Into), newTensor returns it instead; otherwise a float
// tensor comes from wrap.Dense, the same tensor as last time for the same
// memory and shape (kernels wrap the same scratch and result buffers step
// after step): callers must not change it in place.
func newTensor[T float | int64](shape tensor.Shape, backing []T) tensor.Tensor {
	if d := offeredFor(shape, backing); d != nil {
		return d
	}
	var z T
	switch any(z).(type) {
	case float32:
		return wrap.Dense(shape, unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(backing))), len(backing)))
	case float64:
		return wrap.Dense(shape, unsafe.Slice((*float64)(unsafe.Pointer(unsafe.SliceData(backing))), len(backing)))
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(backing))
}

// dispatch runs f32 or f64 according to t's dtype.
func dispatch(t tensor.Tensor, f32, f64 func() (tensor.Tensor, error)) (tensor.Tensor, error) {
	switch t.Dtype() {
	case tensor.Float32:
		return f32()
	case tensor.Float64:
		return f64()
	}
	return nil, fmt.Errorf("unsupported dtype %v, expected float32 or float64", t.Dtype())
}

// addInto adds src to dst elementwise in place.
func addInto(dst, src tensor.Tensor) error {
	if dst.Shape().TotalSize() != src.Shape().TotalSize() || dst.Dtype() != src.Dtype() {
		return fmt.Errorf("cannot add %v %v into %v %v", src.Dtype(), src.Shape(), dst.Dtype(), dst.Shape())
	}
	switch dst.Dtype() {
	case tensor.Float32:
		d, s := dst.Data().([]float32), data[float32](src)
		for i := range d {
			d[i] += s[i]
		}
	case tensor.Float64:
		d, s := dst.Data().([]float64), data[float64](src)
		for i := range d {
			d[i] += s[i]
		}
	default:
		return fmt.Errorf("cannot accumulate dtype %v", dst.Dtype())
	}
	return nil
}

// parallelFor splits [0, n) into contiguous chunks run on up to GOMAXPROCS
// goroutines; f receives the worker number and its chunk.
func parallelFor(n int, f func(worker, lo, hi int)) {
	w := workers(n)
	if w <= 1 {
		f(0, 0, n)
		return
	}
	par.Ranges(n, w, 1, f)
}

// minChunkWork is the least work, in multiply-adds (or values read and
// written, for kernels that only move data), that parallelWork gives one
// chunk. Handing a chunk to another worker costs the caller about a
// microsecond when that worker is spinning and several (a futex wake-up)
// when it sleeps, and the woken worker then spins for par.Spin after the
// chunk; 32,768 multiply-adds are 10–30 µs of scalar or short-vector work
// on one core, so a chunk is at least several times its hand-over. It is a
// size per chunk, not a share of the cores: a loop of 64·minChunkWork still
// uses 64 workers.
const minChunkWork = 1 << 15

// minProductWork is minChunkWork for loops whose items are matrix
// products (a convolution's samples, groups or parts, in multiply-adds):
// gemm runs about 65 multiply-adds a nanosecond on one core (130–136
// GFLOP/s: dwSwapMaxM), so minChunkWork of them is half a microsecond, no
// more than the hand-over, and ShuffleNet's 1×1 convolutions over 16×16
// planes (150,000 multiply-adds a sample) woke a worker for every pass.
// 2^19 of them are about 8 µs: several times the hand-over to a spinning
// worker (about a microsecond) and more than a sleeping one's wake-up.
// Unlike gemm's own bound for splitting one product (gridMinWork, 2^21),
// a chunk of samples packs nothing again. A size per chunk: a loop of
// 64·minProductWork still uses 64 workers.
const minProductWork = 1 << 19

// chunkCount is the number of chunks parallelWork splits n items of per
// work units each into on w workers: at most w, each chunk (but a lone
// one) holding at least minChunkWork units.
func chunkCount(w, n, per int) int { return chunkCountMin(w, n, per, minChunkWork) }

// chunkCountMin is chunkCount with chunks of at least least units.
func chunkCountMin(w, n, per, least int) int {
	items := (least + max(per, 1) - 1) / max(per, 1) // items in a chunk of least units
	return max(1, min(w, n/items))
}

// oneChunk reports whether parallelWork(n, per, ·) runs as one chunk on
// the caller on any number of cores. Small kernels test it first and call
// their loop's body directly: the closure parallelWork takes is a heap
// object even when the caller runs it (a worker could have), and ops on
// small planes make hundreds of them a step.
func oneChunk(n, per int) bool { return chunkCountMin(n, n, per, minChunkWork) <= 1 }

// parallelWork is parallelFor for n items of about per work units each
// (multiply-adds, or values moved): it uses only as many chunks as give
// each at least minChunkWork, and runs a loop below that whole on the
// caller. Chunks are contiguous and cover [0, n), so a kernel whose items
// are independent gives the same values under any split.
func parallelWork(n, per int, f func(worker, lo, hi int)) {
	parallelWorkMin(n, per, minChunkWork, f)
}

// parallelProducts is parallelWork for items that are matrix products of
// per multiply-adds: chunks of at least minProductWork.
func parallelProducts(n, per int, f func(worker, lo, hi int)) {
	parallelWorkMin(n, per, minProductWork, f)
}

// parallelWorkMin is parallelWork with chunks of at least least units.
func parallelWorkMin(n, per, least int, f func(worker, lo, hi int)) {
	// The work bound first: runtime.GOMAXPROCS takes the scheduler's
	// lock, a cost per call that loops too small to split need not pay.
	c := chunkCountMin(n, n, per, least)
	if c > 1 {
		c = chunkCountMin(runtime.GOMAXPROCS(0), n, per, least)
	}
	if c <= 1 {
		f(0, 0, n)
		return
	}
	// Chunk i is [i·n/c, (i+1)·n/c): sizes differ by at most one item, so
	// none is shorter than the n/c ≥ least items chunkCount allowed for.
	par.For(c, func(i int) { f(i, i*n/c, (i+1)*n/c) })
}

// workers is the number of goroutines parallelFor uses for n items.
func workers(n int) int {
	return max(1, min(runtime.GOMAXPROCS(0), n))
}

// checkFloat reports an error unless n holds float32 or float64.
func checkFloat(op string, what string, n *gorgonia.Node) error {
	if n == nil {
		return fmt.Errorf("ops: %s: %s is nil", op, what)
	}
	if dt := n.Dtype(); dt != tensor.Float32 && dt != tensor.Float64 {
		return fmt.Errorf("ops: %s: %s has dtype %v, expected float32 or float64", op, what, dt)
	}
	return nil
}

// sameDtype reports an error unless all non-nil nodes share x's dtype.
func sameDtype(op string, x *gorgonia.Node, others ...*gorgonia.Node) error {
	for _, o := range others {
		if o != nil && o.Dtype() != x.Dtype() {
			return fmt.Errorf("ops: %s: operand dtype %v differs from input dtype %v", op, o.Dtype(), x.Dtype())
		}
	}
	return nil
}

// gatherStride sets dst[c] = src[c·s] for every c of dst (the strided
// rows of im2col).
func gatherStride[T float](dst, src []T, s int) {
	if len(dst) == 0 {
		return
	}
	src = src[:(len(dst)-1)*s+1]
	for c := range dst {
		dst[c] = src[c*s]
	}
}
