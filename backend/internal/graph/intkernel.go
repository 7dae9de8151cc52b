package graph

import (
	"fmt"
	"hash"
	"hash/fnv"
	"unsafe"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Run-time integer tensors. MaxPool's Indices output is an int64 node
// computed from data; PyTorch's exporter does index arithmetic on it
// (MaxPool with return_indices subtracts a second MaxPool's indices to get
// per-plane indices; its MaxUnpool adds the plane offsets back) and moves
// it around (Slice, Reshape, Concat). Those ops run here in exact int64
// arithmetic: rounding indices through float32 would corrupt them beyond
// 2^24 elements. Integer nodes carry no gradient.

// IsIntNode reports whether v is a run-time int64 node.
func IsIntNode(v *Value) bool {
	return v != nil && v.N != nil && v.N.Dtype() == tensor.Int64
}

// IntForward computes an int64 result into dst from the flat values of
// the operands (run-time nodes and constants, in order), writing every
// element of dst (it may hold anything: a pool buffer, IntKernelOp.DoInto32).
type IntForward func(dst []int64, in [][]int64)

// IntOp adds a node computing an int64 tensor of shape out from ins, each
// an int64 run-time node or an integer constant (captured at build time).
func (b *Builder) IntOp(n *onnxpb.NodeProto, kind string, ins []*Value, out []int, fwd IntForward) (*Value, error) {
	op := &IntKernelOp{name: n.GetName(), kind: kind, id: kernelIDs.Add(1), out: append([]int{}, out...), fwd: fwd}
	op.consts = make([][]int64, len(ins))
	var nodes G.Nodes
	for i, v := range ins {
		switch {
		case v.IsConst():
			if v.C.IsFloat() {
				return nil, NodeErr(n, "input %d is a float constant combined with run-time int64 indices: expected an integer constant", i)
			}
			op.consts[i] = v.C.Int64s()
		case IsIntNode(v):
			nodes = append(nodes, v.N)
			op.ins = append(op.ins, append([]int{}, v.Shape...))
		default:
			return nil, NodeErr(n, "input %d is a run-time float tensor combined with run-time int64 indices: mixed integer and float arithmetic is not supported", i)
		}
	}
	r, err := G.ApplyOp(op, nodes...)
	if err != nil {
		return nil, NodeErr(n, "building integer kernel: %v", err)
	}
	return NodeValue(r), nil
}

// IntKernelOp is a Gorgonia Op on int64 tensors computed by a Go closure.
// Constant operands are held by the op (consts[i] != nil); the node
// inputs fill the other slots in order. It has no gradient.
type IntKernelOp struct {
	name, kind string
	id         uint64
	consts     [][]int64
	ins        [][]int // shapes of the node inputs
	out        []int
	fwd        IntForward
}

func (op *IntKernelOp) Arity() int { return len(op.ins) }

func (op *IntKernelOp) Type() hm.Type { return fnTypeOf(tensor.Int64, op.ins, op.out) }

func (op *IntKernelOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape(append([]int{}, op.out...)), nil
}

func (op *IntKernelOp) Do(vals ...G.Value) (v G.Value, err error) {
	v, _, err = op.DoInto32(nil, nil, vals)
	return v, err
}

// DoInto32 is Do writing a tensor result into buf, a float32 pool buffer of
// two values per element (as the kernels' int64 results: exec.pooled), when buf
// has that length and 8-byte alignment; used is buf then (nil
// otherwise). The MTANs' unpooling indices, moved every step, were fresh
// slices: 400 KB of garbage per step of the small MTAN. reuse is not
// used (the result is an int64 tensor).
func (op *IntKernelOp) DoInto32(buf []float32, _ *tensor.Dense, vals []G.Value) (v G.Value, used []float32, err error) {
	defer recoverOp(op.name, op.kind, &err)
	in := make([][]int64, len(op.consts))
	k := 0
	for i, c := range op.consts {
		if c != nil {
			in[i] = c
			continue
		}
		if k >= len(vals) {
			return nil, nil, fmt.Errorf("node %q (%s): %d inputs, expected %d", op.name, op.kind, len(vals), len(op.ins))
		}
		d, err := ValueInt64s(vals[k])
		if err != nil {
			return nil, nil, fmt.Errorf("node %q (%s): input %d: %w", op.name, op.kind, i, err)
		}
		if len(d) != shape.Numel(op.ins[k]) {
			return nil, nil, fmt.Errorf("node %q (%s): input %d has %d values, expected shape %v", op.name, op.kind, i, len(d), op.ins[k])
		}
		in[i] = d
		k++
	}
	n := shape.Numel(op.out)
	var dst []int64
	if len(op.out) > 0 && n > 0 && len(buf) == 2*n && uintptr(unsafe.Pointer(&buf[0]))%8 == 0 {
		dst, used = unsafe.Slice((*int64)(unsafe.Pointer(&buf[0])), n), buf
	} else {
		dst = make([]int64, n)
	}
	op.fwd(dst, in)
	if len(op.out) == 0 {
		return G.NewI64(dst[0]), nil, nil
	}
	return tensor.New(tensor.WithShape(op.out...), tensor.WithBacking(dst)), used, nil
}

func (op *IntKernelOp) ReturnsPtr() bool     { return false }
func (op *IntKernelOp) CallsExtern() bool    { return false }
func (op *IntKernelOp) OverwritesInput() int { return -1 }
func (op *IntKernelOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "intkernel %s %s %d", op.name, op.kind, op.id)
}
func (op *IntKernelOp) Hashcode() uint32 {
	h := fnv.New32a()
	op.WriteHash(h)
	return h.Sum32()
}
func (op *IntKernelOp) String() string { return "int:" + op.kind + "[" + op.name + "]" }

// DiffWRT implements G.SDOp: integer results have no gradient.
func (op *IntKernelOp) DiffWRT(n int) []bool { return make([]bool, n) }

// SymDiff implements G.SDOp; it is never reached (DiffWRT is all false).
func (op *IntKernelOp) SymDiff(inputs G.Nodes, _, _ *G.Node) (G.Nodes, error) {
	return make(G.Nodes, len(inputs)), nil
}

// ValueInt64s returns the values of an int64 Gorgonia value, row-major.
func ValueInt64s(v G.Value) ([]int64, error) {
	switch x := v.(type) {
	case *G.I64:
		return []int64{int64(*x)}, nil
	case *tensor.Dense:
		x, err := contiguous(x)
		if err != nil {
			return nil, err
		}
		switch d := x.Data().(type) {
		case []int64:
			return d, nil
		case int64:
			return []int64{d}, nil
		}
		return nil, fmt.Errorf("tensor data %T, expected int64", x.Data())
	case nil:
		return nil, fmt.Errorf("no value")
	}
	return nil, fmt.Errorf("value type %T, expected int64", v)
}
