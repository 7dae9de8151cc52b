package graph

import (
	"fmt"
	"hash"
	"hash/fnv"
	"sync"
	"sync/atomic"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/paretonav/paretonav/backend/internal/kernels"
	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/backend/internal/wrap"
)

// Node is a node of the Gorgonia graph under construction.
type Node = *G.Node

// kernelIDs numbers kernel ops so that no two are ever merged by
// Gorgonia's hash-consing of nodes.
var kernelIDs atomic.Uint64

// ForwardFunc writes the output of a kernel into dst (zeroed, len of the
// output) from its inputs (flat, row-major, read-only).
type ForwardFunc func(dst []float64, in [][]float64)

// BackwardFunc writes into dst (zeroed, len of input k) the gradient of
// the loss with respect to input k, given the inputs, the forward output
// and the gradient flowing into the output.
type BackwardFunc func(k int, dst []float64, in [][]float64, out, grad []float64)

// Forward32Func is a ForwardFunc on float32 data, for float32 graphs: dst
// is zeroed and becomes the output. It must give the same values as the
// op's ForwardFunc rounded to float32 (so that float32 graphs compute the
// same whichever path runs): compute each element in float64 from the
// float32 inputs and round once. The matrix products (Gemm, MatMul) are
// the exception: they accumulate in float32 (matmul32.go).
type Forward32Func func(dst []float32, in [][]float32)

// Backward32Func is a BackwardFunc on float32 data with the same
// exactness rule as Forward32Func. A dst element that accumulates several
// terms sums them in float64 in the float64 path's order and is rounded
// once (a float32 running sum would differ). It returns false, leaving
// dst untouched, when it does not handle input k (the float64 path runs
// instead).
type Backward32Func func(k int, dst []float32, in [][]float32, out, grad []float32) bool

// KernelOp is a Gorgonia Op computed by Go closures on flat float64 data.
// Shapes are fixed when the op is built (graphs are built for concrete
// shapes), so the closures capture everything they need. Its gradient is
// a KernelGradOp per differentiable input; second derivatives are not
// supported. Do recovers panics and names the ONNX node.
type KernelOp struct {
	Name  string // ONNX node name, for errors
	Kind  string // short op description, e.g. "Relu"
	id    uint64
	dt    tensor.Dtype
	Ins   [][]int
	Out   []int
	Fwd   ForwardFunc
	Bwd   BackwardFunc
	Diffs []bool
	// Fwd32 and bwd32, when set, run in float32 graphs on the float32 data
	// directly (no float64 copies of inputs and result).
	Fwd32 Forward32Func
	Bwd32 Backward32Func
	// PlainCopy marks a move whose output is its one input's values
	// unchanged, in the same order (Reshape, Flatten, Squeeze, Identity):
	// the executor may hand the output the input's buffer when the input
	// dies there (program.takeCopied).
	PlainCopy bool
	// gradReads, when set, says which operands of the gradient (the
	// inputs, the output, the output's gradient) bwd and bwd32 read; the
	// others are passed as nil, and the executor does not keep them alive
	// for the backward passes. nil: all of them.
	GradReads []bool
	// fills, when set, says that fwd32 and bwd32 write every element of
	// dst, so a reused buffer is not zeroed first.
	Fills bool
	// FwdFills says it of fwd32 alone, gradFills[k] of bwd32 for input k
	// (nil: none): kernels that write every element in some passes only
	// (a product whose operand is broadcast sums into its gradient).
	FwdFills  bool
	GradFills []bool
	// FLOPs, when set, returns the floating-point operations of the
	// forward pass (k = −1) or of the gradient of input k (OpFLOPs).
	FLOPs func(k int) int64
}

// OpFLOPs returns the floating-point operations one run of op does, when
// it is a KernelOp or KernelGradOp whose kernel counts them
// (KernelOp.FLOPs); ok is false otherwise.
func OpFLOPs(op G.Op) (flops int64, ok bool) {
	switch o := op.(type) {
	case *KernelOp:
		if o.FLOPs != nil {
			return o.FLOPs(-1), true
		}
	case *KernelGradOp:
		if o.Of.FLOPs != nil {
			return o.Of.FLOPs(o.k), true
		}
	}
	return 0, false
}

// Kernel adds a KernelOp node computing out from ins. diff says which
// inputs are differentiable (nil: all, when bwd is not nil; none
// otherwise).
func (b *Builder) Kernel(node, kind string, ins []Node, out []int, fwd ForwardFunc, bwd BackwardFunc, diff []bool) (Node, error) {
	return b.Kernel32(node, kind, ins, out, fwd, bwd, diff, nil, nil)
}

// Kernel32 is kernel with float32 closures fwd32 and bwd32 (either may be
// nil) used in float32 graphs instead of fwd and bwd; see Forward32Func
// for the rule they follow.
func (b *Builder) Kernel32(node, kind string, ins []Node, out []int, fwd ForwardFunc, bwd BackwardFunc, diff []bool, fwd32 Forward32Func, bwd32 Backward32Func) (Node, error) {
	op := &KernelOp{Name: node, Kind: kind, id: kernelIDs.Add(1), dt: b.Dtype, Out: append([]int{}, out...), Fwd: fwd, Bwd: bwd, Fwd32: fwd32, Bwd32: bwd32}
	for _, n := range ins {
		op.Ins = append(op.Ins, append([]int{}, n.Shape()...))
	}
	op.Diffs = make([]bool, len(ins))
	for i := range op.Diffs {
		op.Diffs[i] = bwd != nil && (diff == nil || diff[i])
	}
	r, err := G.ApplyOp(op, ins...)
	if err != nil {
		return nil, fmt.Errorf("node %q (%s): building kernel: %w", node, kind, err)
	}
	return r, nil
}

// FillingKernel32 is kernel32 for kernels whose fwd32 and bwd32 write every
// element of their output (KernelOp.Fills), so that their buffers are not
// zeroed first.
func (b *Builder) FillingKernel32(node, kind string, ins []Node, out []int, fwd ForwardFunc, bwd BackwardFunc, diff []bool, fwd32 Forward32Func, bwd32 Backward32Func) (Node, error) {
	r, err := b.Kernel32(node, kind, ins, out, fwd, bwd, diff, fwd32, bwd32)
	if err != nil {
		return nil, err
	}
	r.Op().(*KernelOp).Fills = true
	return r, nil
}

// typeOf is the Gorgonia type of a value of shape s.
func typeOf(dt tensor.Dtype, s []int) hm.Type {
	if len(s) == 0 {
		return dt
	}
	return G.TensorType{Dims: len(s), Of: dt}
}

// fnTypeOf is the type of an op taking operands of shapes ins, then
// more (the last of more is the result), all of element type dt.
func fnTypeOf(dt tensor.Dtype, ins [][]int, more ...[]int) hm.Type {
	ts := make([]hm.Type, 0, len(ins)+len(more))
	for _, s := range ins {
		ts = append(ts, typeOf(dt, s))
	}
	for _, s := range more {
		ts = append(ts, typeOf(dt, s))
	}
	return hm.NewFnType(ts...)
}

func (op *KernelOp) Arity() int { return len(op.Ins) }

func (op *KernelOp) Type() hm.Type { return fnTypeOf(op.dt, op.Ins, op.Out) }

func (op *KernelOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape(append([]int{}, op.Out...)), nil
}

func (op *KernelOp) Do(vals ...G.Value) (v G.Value, err error) {
	v, _, err = op.DoInto32(nil, nil, vals)
	return v, err
}

// DoInto32 is Do writing a float32 result into buf when its length is the
// output's (a fresh buffer otherwise); used is the buffer the result
// value is backed by, nil when the float64 path ran. buf must not share
// memory with any of vals nor with any value still to be read.
func (op *KernelOp) DoInto32(buf []float32, reuse *tensor.Dense, vals []G.Value) (v G.Value, used []float32, err error) {
	defer recoverOp(op.Name, op.Kind, &err)
	if op.dt == tensor.Float32 && op.Fwd32 != nil {
		arr := operands32.Get().(*[8][]float32)
		defer putOperands32(arr)
		if in, ok := readF32(arr[:0], vals, op.Ins); ok {
			dst := outBuf32For(buf, shape.Numel(op.Out), op.Fills || op.FwdFills)
			op.Fwd32(dst, in)
			return Value32(reuse, op.Out, dst), dst, nil
		}
	}
	v, err = op.do64(vals)
	return v, nil, err
}

// do64 runs the float64 closures.
func (op *KernelOp) do64(vals []G.Value) (G.Value, error) {
	var sc F64Scratch
	defer sc.Release()
	in, err := readInputsInto(&sc, op.Name, op.Kind, vals, op.Ins)
	if err != nil {
		return nil, err
	}
	dst := resultBuf(&sc, op.dt, shape.Numel(op.Out))
	op.Fwd(dst, in)
	return MakeValue(op.dt, op.Out, dst), nil
}

func (op *KernelOp) ReturnsPtr() bool     { return false }
func (op *KernelOp) CallsExtern() bool    { return false }
func (op *KernelOp) OverwritesInput() int { return -1 }
func (op *KernelOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "kernel %s %s %d", op.Name, op.Kind, op.id)
}
func (op *KernelOp) Hashcode() uint32 {
	h := fnv.New32a()
	op.WriteHash(h)
	return h.Sum32()
}
func (op *KernelOp) String() string { return op.Kind + "[" + op.Name + "]" }

// DiffWRT implements G.SDOp.
func (op *KernelOp) DiffWRT(int) []bool { return append([]bool{}, op.Diffs...) }

// SymDiff implements G.SDOp: one KernelGradOp node per differentiable input.
func (op *KernelOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	out := make(G.Nodes, len(inputs))
	for k := range inputs {
		if !op.Diffs[k] {
			continue
		}
		children := append(append(G.Nodes{}, inputs...), output, grad)
		shapes := append(append(make([][]int, 0, len(op.Ins)+2), op.Ins...), op.Out, op.Out)
		n, err := G.ApplyOp(&KernelGradOp{Of: op, k: k, shapes: shapes}, children...)
		if err != nil {
			return nil, fmt.Errorf("node %q (%s): gradient of input %d: %w", op.Name, op.Kind, k, err)
		}
		out[k] = n
	}
	return out, nil
}

// KernelGradOp computes the gradient of a KernelOp with respect to input k
// from (inputs..., output, output gradient).
type KernelGradOp struct {
	Of *KernelOp
	k  int
	// shapes are the operands' shapes: the inputs', the output's and the
	// output gradient's.
	shapes [][]int
}

func (op *KernelGradOp) Arity() int { return len(op.Of.Ins) + 2 }

func (op *KernelGradOp) Type() hm.Type {
	p := op.Of
	return fnTypeOf(p.dt, p.Ins, p.Out, p.Out, p.Ins[op.k])
}

func (op *KernelGradOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape(append([]int{}, op.Of.Ins[op.k]...)), nil
}

func (op *KernelGradOp) Do(vals ...G.Value) (v G.Value, err error) {
	v, _, err = op.DoInto32(nil, nil, vals)
	return v, err
}

// DoInto32 is KernelOp.DoInto32 for the gradient.
// ReadsArgs reports which of the gradient op's operands it reads (nil:
// all); see KernelOp.GradReads.
func (op *KernelGradOp) ReadsArgs() []bool { return op.Of.GradReads }

// dropUnread returns vals with the operands the gradient does not read set
// to nil, in dst's backing array when it has room.
func (op *KernelGradOp) dropUnread(dst, vals []G.Value) []G.Value {
	r := op.Of.GradReads
	if r == nil {
		return vals
	}
	out := dst[:0]
	for i, v := range vals {
		if i >= len(r) || !r[i] {
			v = nil
		}
		out = append(out, v)
	}
	return out
}

func (op *KernelGradOp) DoInto32(buf []float32, reuse *tensor.Dense, vals []G.Value) (v G.Value, used []float32, err error) {
	p := op.Of
	defer recoverGradOp(p, &err)
	var kept [8]G.Value
	vals = op.dropUnread(kept[:], vals)
	shapes := op.shapes
	if p.dt == tensor.Float32 && p.Bwd32 != nil {
		arr := operands32.Get().(*[8][]float32)
		defer putOperands32(arr)
		if all, ok := readF32(arr[:0], vals, shapes); ok {
			n := len(p.Ins)
			dst := outBuf32For(buf, shape.Numel(p.Ins[op.k]), p.Fills || (op.k < len(p.GradFills) && p.GradFills[op.k]))
			if p.Bwd32(op.k, dst, all[:n], all[n], all[n+1]) {
				return Value32(reuse, p.Ins[op.k], dst), dst, nil
			}
		}
	}
	v, err = op.do64(vals, shapes)
	return v, nil, err
}

// operands32 lends the arrays that hold a float32 kernel call's operand
// slices: the kernels are closures, so an array on the caller's stack
// would escape to the heap, one allocation per op run.
var operands32 = sync.Pool{New: func() any { return new([8][]float32) }}

// putOperands32 returns a to operands32, dropping its slices.
func putOperands32(a *[8][]float32) {
	clear(a[:])
	operands32.Put(a)
}

// recoverGradOp is recoverOp for the gradient of p (the op's kind is
// written only when a panic happened).
func recoverGradOp(p *KernelOp, err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("node %q (%s gradient): panic while executing: %v", p.Name, p.Kind, r)
	}
}

// do64 runs the float64 closures.
func (op *KernelGradOp) do64(vals []G.Value, shapes [][]int) (G.Value, error) {
	p := op.Of
	var sc F64Scratch
	defer sc.Release()
	all, err := readInputsInto(&sc, p.Name, p.Kind+" gradient", vals, shapes)
	if err != nil {
		return nil, err
	}
	n := len(p.Ins)
	dst := resultBuf(&sc, p.dt, shape.Numel(p.Ins[op.k]))
	p.Bwd(op.k, dst, all[:n], all[n], all[n+1])
	return MakeValue(p.dt, p.Ins[op.k], dst), nil
}

func (op *KernelGradOp) ReturnsPtr() bool     { return false }
func (op *KernelGradOp) CallsExtern() bool    { return false }
func (op *KernelGradOp) OverwritesInput() int { return -1 }
func (op *KernelGradOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "kernelgrad %s %s %d %d", op.Of.Name, op.Of.Kind, op.Of.id, op.k)
}
func (op *KernelGradOp) Hashcode() uint32 {
	h := fnv.New32a()
	op.WriteHash(h)
	return h.Sum32()
}
func (op *KernelGradOp) String() string {
	return fmt.Sprintf("∂%s[%s]/∂in%d", op.Of.Kind, op.Of.Name, op.k)
}

// recoverOp turns a panic inside an op into an error naming the node. The
// TapeMachine runs ops on its own goroutine, where a panic would end the
// process.
func recoverOp(node, kind string, err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("node %q (%s): panic while executing: %v", node, kind, r)
	}
}

// readInputs converts Gorgonia values to flat float64 slices, checking
// sizes against the expected shapes. Float64 tensors are returned without
// copying: kernels must not write into their inputs.
func readInputs(node, kind string, vals []G.Value, shapes [][]int) ([][]float64, error) {
	return readInputsInto(nil, node, kind, vals, shapes)
}

// readInputsInto is readInputs converting non-float64 data into buffers
// of sc (nil: fresh allocations).
func readInputsInto(sc *F64Scratch, node, kind string, vals []G.Value, shapes [][]int) ([][]float64, error) {
	if len(vals) != len(shapes) {
		return nil, fmt.Errorf("node %q (%s): got %d inputs, expected %d", node, kind, len(vals), len(shapes))
	}
	out := make([][]float64, len(vals))
	for i, v := range vals {
		if v == nil { // an operand the kernel does not read
			continue
		}
		d, err := valueFloatsInto(sc, v)
		if err != nil {
			return nil, fmt.Errorf("node %q (%s): input %d: %w", node, kind, i, err)
		}
		if len(d) != shape.Numel(shapes[i]) {
			return nil, fmt.Errorf("node %q (%s): input %d has %d values, expected shape %v", node, kind, i, len(d), shapes[i])
		}
		out[i] = d
	}
	return out, nil
}

// ValueFloats returns the values of a Gorgonia value as float64, row-major.
// Float64 tensor data is returned without copying.
func ValueFloats(v G.Value) ([]float64, error) { return valueFloatsInto(nil, v) }

// F64Scratch lends float64 buffers from a process-wide pool to one kernel
// call: the float64 copies of float32 inputs and the float64 result, all
// dead once the kernel has written its (freshly allocated) output value.
// The zero value is ready; release returns every buffer.
type F64Scratch struct{ bufs []*[]float64 }

var f64Pool sync.Pool

// Get returns a zeroed buffer of n values, or a fresh slice when s is nil.
func (s *F64Scratch) Get(n int) []float64 {
	if s == nil {
		return make([]float64, n)
	}
	b, ok := f64Pool.Get().(*[]float64)
	if !ok || cap(*b) < n {
		nb := make([]float64, n)
		b = &nb
	}
	*b = (*b)[:n]
	kernels.ClearPar(*b)
	s.bufs = append(s.bufs, b)
	return *b
}

// Release returns s's buffers to the pool; slices from s must not be used
// afterwards.
func (s *F64Scratch) Release() {
	for _, b := range s.bufs {
		f64Pool.Put(b)
	}
	s.bufs = nil
}

// resultBuf is the zeroed float64 buffer a kernel writes its result into:
// pooled in float32 mode (MakeValue copies it), fresh in float64 mode
// (MakeValue wraps it as the output value).
func resultBuf(sc *F64Scratch, dt tensor.Dtype, n int) []float64 {
	if dt == tensor.Float32 {
		return sc.Get(n)
	}
	return make([]float64, n)
}

// contiguous returns x itself, or when x needs an iterator (a view) a
// materialized contiguous copy.
func contiguous(x *tensor.Dense) (*tensor.Dense, error) {
	if !x.RequiresIterator() {
		return x, nil
	}
	m := x.Materialize()
	d, ok := m.(*tensor.Dense)
	if !ok {
		return nil, fmt.Errorf("cannot materialize a %T", m)
	}
	return d, nil
}

// valueFloatsInto is ValueFloats converting non-float64 tensor data into a
// buffer from sc.
func valueFloatsInto(sc *F64Scratch, v G.Value) ([]float64, error) {
	switch x := v.(type) {
	case *G.F64:
		return []float64{float64(*x)}, nil
	case *G.F32:
		return []float64{float64(*x)}, nil
	case *tensor.Dense:
		x, err := contiguous(x)
		if err != nil {
			return nil, err
		}
		switch d := x.Data().(type) {
		case []float64:
			return d, nil
		case []float32:
			out := sc.Get(len(d))
			for i, f := range d {
				out[i] = float64(f)
			}
			return out, nil
		case float64:
			return []float64{d}, nil
		case float32:
			return []float64{float64(d)}, nil
		case []int:
			out := make([]float64, len(d))
			for i, f := range d {
				out[i] = float64(f)
			}
			return out, nil
		case []int64:
			out := make([]float64, len(d))
			for i, f := range d {
				out[i] = float64(f)
			}
			return out, nil
		default:
			return nil, fmt.Errorf("unsupported tensor data %T", d)
		}
	case nil:
		return nil, fmt.Errorf("no value")
	}
	return nil, fmt.Errorf("unsupported value type %T", v)
}

// MakeValue wraps data (row-major, shape s) as a Gorgonia value of dtype
// dt: a scalar for an empty shape, a dense tensor otherwise.
func MakeValue(dt tensor.Dtype, s []int, data []float64) G.Value {
	if dt == tensor.Float32 {
		if len(s) == 0 {
			return G.NewF32(float32(data[0]))
		}
		f := make([]float32, len(data))
		for i, x := range data {
			f[i] = float32(x)
		}
		return tensor.New(tensor.WithShape(s...), tensor.WithBacking(f))
	}
	if len(s) == 0 {
		return G.NewF64(data[0])
	}
	return tensor.New(tensor.WithShape(s...), tensor.WithBacking(data))
}

// readF32 appends to dst the float32 data of vals (float32 scalars or
// dense float32 tensors not needing an iterator, sizes matching shapes),
// without copying. ok is false for any other value: the caller then takes
// the float64 path, which reports errors.
func readF32(dst [][]float32, vals []G.Value, shapes [][]int) (in [][]float32, ok bool) {
	if len(vals) != len(shapes) {
		return nil, false
	}
	for i, v := range vals {
		var d []float32
		switch x := v.(type) {
		case nil: // an operand the kernel does not read
			dst = append(dst, nil)
			continue
		case *G.F32:
			d = []float32{float32(*x)}
		case *tensor.Dense:
			if x.RequiresIterator() {
				return nil, false
			}
			if t, ok := Data32(x); ok {
				d = t
				break
			}
			switch t := x.Data().(type) {
			case float32:
				d = []float32{t}
			default:
				return nil, false
			}
		default:
			return nil, false
		}
		if len(d) != shape.Numel(shapes[i]) {
			return nil, false
		}
		dst = append(dst, d)
	}
	return dst, true
}

// outBuf32 is buf zeroed when it holds n values, else a fresh zeroed
// buffer.
func outBuf32(buf []float32, n int) []float32 {
	if len(buf) != n {
		return make([]float32, n)
	}
	kernels.ClearPar(buf)
	return buf
}

// outBuf32For is outBuf32, leaving a reused buf as it is when the kernel
// fills every element.
func outBuf32For(buf []float32, n int, fills bool) []float32 {
	if fills && len(buf) == n {
		return buf
	}
	return outBuf32(buf, n)
}

// BackedBy reports whether x's float32 elements are data itself: the same
// memory, the same length, not empty. The executor's tensor reuse (Value32,
// takeReuse, bindParam, keepSinkWrap) hands a tensor back only around the
// buffer it wrapped.
func BackedBy(x *tensor.Dense, data []float32) bool {
	d, ok := Data32(x)
	return ok && len(data) > 0 && len(d) == len(data) && &d[0] == &data[0]
}

// Data32 returns the float32 elements of x, a tensor that is not a
// scalar, as Data().([]float32) does but without boxing the slice in an
// interface (a heap allocation per call, a few thousand per step of a
// small model). ok is false for other dtypes and for scalars.
func Data32(x *tensor.Dense) ([]float32, bool) {
	if x.Dtype() != tensor.Float32 || x.IsScalar() {
		return nil, false
	}
	return x.Float32s(), true
}

// Value32 is makeValue32(s, data), except that it returns reuse when reuse
// is already that value: a float32 tensor of shape s, backed by data
// itself, read without an iterator. A node whose result lands in the
// same pool buffer step after step (the executor passes the tensor of its
// last run, dead since) then makes no tensor: a Gorgonia tensor is
// several allocations (the header, its shape and strides), which were
// half of the bytes a small model's step allocated.
func Value32(reuse *tensor.Dense, s []int, data []float32) G.Value {
	if reuse != nil && len(s) > 0 && !reuse.RequiresIterator() && reuse.Shape().Eq(tensor.Shape(s)) && BackedBy(reuse, data) {
		return reuse
	}
	return makeValue32(s, data)
}

// makeValue32 wraps float32 data (row-major, shape s) as a Gorgonia value:
// a scalar for an empty shape, a dense tensor backed by data otherwise
// (wrap.Dense: the tensor made last time for the same memory and shape,
// while it lives; values are never changed in place).
func makeValue32(s []int, data []float32) G.Value {
	if len(s) == 0 {
		return G.NewF32(data[0])
	}
	return wrap.Dense(s, data)
}

// float is the element type of a kernel's data.
type Float interface{ ~float32 | ~float64 }
