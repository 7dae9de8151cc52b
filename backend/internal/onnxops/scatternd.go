package onnxops

import (
	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/kernels"
	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// ScatterND (opset 11; 16 adds reduction add and mul, 18 max and min)
// with no reduction: a copy of the data with the update slices written at
// the indexed positions, the later update winning where an index repeats
// (ONNX Runtime's order). The dynamo exporter writes it for in-place index
// assignment and for max_unpool2d: MaxPool's run-time indices scattered
// into zeros. With constant indices, data and updates may be run-time
// nodes, their gradients following the copy (an overwritten data element
// gets none). Run-time (int64) indices need constant zero data: the
// scatter is then MaxUnpool's (kernels.MaxUnpool on the flat positions),
// differentiable in the updates. The reductions are refused as
// unsupported.

func init() {
	graph.Register("ScatterND", 11, lowerScatterND)
}

func lowerScatterND(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	if a := graph.Attr(n, "reduction"); a != nil && string(a.GetS()) != "none" {
		return nil, &graph.UnsupportedError{Ops: []graph.UnsupportedOp{{OpType: n.GetOpType(), Node: n.GetName(), Opset: b.Opset}}}
	}
	x, err := graph.Input(n, in, 0)
	if err != nil {
		return nil, err
	}
	iv, err := graph.Input(n, in, 1)
	if err != nil {
		return nil, err
	}
	u, err := graph.Input(n, in, 2)
	if err != nil {
		return nil, err
	}
	if graph.IsIntNode(iv) {
		return scatterNDRuntime(b, n, x, iv, u)
	}
	it, err := graph.ConstInput(n, in, 1, "indices")
	if err != nil {
		return nil, err
	}
	q, r := len(it.Shape), len(x.Shape)
	if q < 1 {
		return nil, graph.NodeErr(n, "indices are a scalar: expected rank 1 or more")
	}
	k := it.Shape[q-1]
	if k < 1 || k > r {
		return nil, graph.NodeErr(n, "indices' last dimension is %d: expected 1 to the data rank %d", k, r)
	}
	want := append(append([]int{}, it.Shape[:q-1]...), x.Shape[k:]...)
	if !shape.Equal(u.Shape, want) {
		return nil, graph.NodeErr(n, "updates have shape %v: expected %v (indices %v, data %v)", u.Shape, want, it.Shape, x.Shape)
	}
	size, inner := shape.Numel(x.Shape), shape.Numel(x.Shape[k:])
	idx := make([]int, size)
	for i := range idx {
		idx[i] = i
	}
	ind := it.Int64s()
	for t := 0; t < shape.Numel(it.Shape[:q-1]); t++ {
		off := 0
		for j, v := range ind[t*k : (t+1)*k] {
			d := x.Shape[j]
			if v < 0 {
				v += int64(d)
			}
			if v < 0 || v >= int64(d) {
				return nil, graph.NodeErr(n, "index %d out of range for data axis %d of size %d", ind[t*k+j], j, d)
			}
			off = off*d + int(v)
		}
		for j := 0; j < inner; j++ {
			idx[off*inner+j] = size + t*inner + j
		}
	}
	v, err := b.Move(n, "ScatterND", []*graph.Value{x, u}, x.Shape, idx)
	if err != nil {
		return nil, err
	}
	return []*graph.Value{v}, nil
}

// scatterNDRuntime is ScatterND with run-time int64 indices iv into
// constant zero data x: the flat positions are computed in int64, the
// updates written there by kernels.MaxUnpool on [1, 1, L] views, and the
// result takes the data's shape.
func scatterNDRuntime(b *graph.Builder, n *onnxpb.NodeProto, x, iv, u *graph.Value) ([]*graph.Value, error) {
	if !x.IsConst() {
		return nil, graph.NodeErr(n, "data is computed at run time and the indices too: only zeros (a constant) can receive run-time indices")
	}
	for _, v := range x.C.Float64s() {
		if v != 0 {
			return nil, graph.NodeErr(n, "data is a non-zero constant and the indices are computed at run time: only zeros can receive run-time indices")
		}
	}
	q, r := len(iv.Shape), len(x.Shape)
	if q < 1 {
		return nil, graph.NodeErr(n, "indices are a scalar: expected rank 1 or more")
	}
	k := iv.Shape[q-1]
	if k < 1 || k > r {
		return nil, graph.NodeErr(n, "indices' last dimension is %d: expected 1 to the data rank %d", k, r)
	}
	want := append(append([]int{}, iv.Shape[:q-1]...), x.Shape[k:]...)
	if !shape.Equal(u.Shape, want) {
		return nil, graph.NodeErr(n, "updates have shape %v: expected %v (indices %v, data %v)", u.Shape, want, iv.Shape, x.Shape)
	}
	size, inner, tuples := shape.Numel(x.Shape), shape.Numel(x.Shape[k:]), shape.Numel(iv.Shape[:q-1])
	l := tuples * inner
	dims := append([]int{}, x.Shape[:k]...)
	flat, err := b.IntOp(n, "ScatterND positions", []*graph.Value{iv}, []int{1, 1, l}, func(dst []int64, in [][]int64) {
		for t := 0; t < tuples; t++ {
			off := int64(0)
			for j, v := range in[0][t*k : (t+1)*k] {
				d := int64(dims[j])
				if v < 0 {
					v += d
				}
				off = off*d + min(max(v, 0), d-1) // out of range: clamped (ONNX Runtime refuses it)
			}
			for j := 0; j < inner; j++ {
				dst[t*inner+j] = off*int64(inner) + int64(j)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	u3, err := b.Move(n, "ScatterND updates", []*graph.Value{u}, []int{1, 1, l}, shape.Identity(l))
	if err != nil {
		return nil, err
	}
	y, err := kernels.MaxUnpool(b.Node(u3), flat.N, kernels.PoolParams{Kernel: []int{1}}, []int{1, 1, size})
	if err != nil {
		return nil, graph.NodeErr(n, "%v", err)
	}
	out, err := b.Move(n, "ScatterND", []*graph.Value{graph.NodeValue(y)}, x.Shape, shape.Identity(size))
	if err != nil {
		return nil, err
	}
	return []*graph.Value{out}, nil
}
