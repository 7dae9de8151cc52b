package backend

import (
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
	register("ScatterND", 11, lowerScatterND)
}

func lowerScatterND(b *builder, n *onnxpb.NodeProto, in []*value) ([]*value, error) {
	if a := attr(n, "reduction"); a != nil && string(a.GetS()) != "none" {
		return nil, &UnsupportedError{Ops: []UnsupportedOp{{n.GetOpType(), "", n.GetName(), b.opset}}}
	}
	x, err := input(n, in, 0)
	if err != nil {
		return nil, err
	}
	iv, err := input(n, in, 1)
	if err != nil {
		return nil, err
	}
	u, err := input(n, in, 2)
	if err != nil {
		return nil, err
	}
	if isIntNode(iv) {
		return scatterNDRuntime(b, n, x, iv, u)
	}
	it, err := constInput(n, in, 1, "indices")
	if err != nil {
		return nil, err
	}
	q, r := len(it.Shape), len(x.shape)
	if q < 1 {
		return nil, nodeErr(n, "indices are a scalar: expected rank 1 or more")
	}
	k := it.Shape[q-1]
	if k < 1 || k > r {
		return nil, nodeErr(n, "indices' last dimension is %d: expected 1 to the data rank %d", k, r)
	}
	want := append(append([]int{}, it.Shape[:q-1]...), x.shape[k:]...)
	if !shape.Equal(u.shape, want) {
		return nil, nodeErr(n, "updates have shape %v: expected %v (indices %v, data %v)", u.shape, want, it.Shape, x.shape)
	}
	size, inner := shape.Numel(x.shape), shape.Numel(x.shape[k:])
	idx := make([]int, size)
	for i := range idx {
		idx[i] = i
	}
	ind := it.Int64s()
	for t := 0; t < shape.Numel(it.Shape[:q-1]); t++ {
		off := 0
		for j, v := range ind[t*k : (t+1)*k] {
			d := x.shape[j]
			if v < 0 {
				v += int64(d)
			}
			if v < 0 || v >= int64(d) {
				return nil, nodeErr(n, "index %d out of range for data axis %d of size %d", ind[t*k+j], j, d)
			}
			off = off*d + int(v)
		}
		for j := 0; j < inner; j++ {
			idx[off*inner+j] = size + t*inner + j
		}
	}
	v, err := b.move(n, "ScatterND", []*value{x, u}, x.shape, idx)
	if err != nil {
		return nil, err
	}
	return []*value{v}, nil
}

// scatterNDRuntime is ScatterND with run-time int64 indices iv into
// constant zero data x: the flat positions are computed in int64, the
// updates written there by kernels.MaxUnpool on [1, 1, L] views, and the
// result takes the data's shape.
func scatterNDRuntime(b *builder, n *onnxpb.NodeProto, x, iv, u *value) ([]*value, error) {
	if !x.isConst() {
		return nil, nodeErr(n, "data is computed at run time and the indices too: only zeros (a constant) can receive run-time indices")
	}
	for _, v := range x.c.Float64s() {
		if v != 0 {
			return nil, nodeErr(n, "data is a non-zero constant and the indices are computed at run time: only zeros can receive run-time indices")
		}
	}
	q, r := len(iv.shape), len(x.shape)
	if q < 1 {
		return nil, nodeErr(n, "indices are a scalar: expected rank 1 or more")
	}
	k := iv.shape[q-1]
	if k < 1 || k > r {
		return nil, nodeErr(n, "indices' last dimension is %d: expected 1 to the data rank %d", k, r)
	}
	want := append(append([]int{}, iv.shape[:q-1]...), x.shape[k:]...)
	if !shape.Equal(u.shape, want) {
		return nil, nodeErr(n, "updates have shape %v: expected %v (indices %v, data %v)", u.shape, want, iv.shape, x.shape)
	}
	size, inner, tuples := shape.Numel(x.shape), shape.Numel(x.shape[k:]), shape.Numel(iv.shape[:q-1])
	l := tuples * inner
	dims := append([]int{}, x.shape[:k]...)
	flat, err := b.intOp(n, "ScatterND positions", []*value{iv}, []int{1, 1, l}, func(dst []int64, in [][]int64) {
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
	u3, err := b.move(n, "ScatterND updates", []*value{u}, []int{1, 1, l}, shape.Identity(l))
	if err != nil {
		return nil, err
	}
	y, err := kernels.MaxUnpool(b.node(u3), flat.n, kernels.PoolParams{Kernel: []int{1}}, []int{1, 1, size})
	if err != nil {
		return nil, nodeErr(n, "%v", err)
	}
	out, err := b.move(n, "ScatterND", []*value{nodeValue(y)}, x.shape, shape.Identity(size))
	if err != nil {
		return nil, err
	}
	return []*value{out}, nil
}
