package backend

import "github.com/paretonav/paretonav/importer/onnxpb"

// ScatterND (opset 11; 16 adds reduction add and mul, 18 max and min)
// with constant indices and no reduction: a copy of the data with the
// update slices written at the indexed positions, the later update winning
// where an index repeats (ONNX Runtime's order). The dynamo exporter
// writes it for max_unpool2d (updates scattered into zeros) and for
// in-place index assignment. Data and updates may be run-time nodes;
// their gradients follow the copy (an overwritten data element gets
// none). The reductions are refused as unsupported.

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
	it, err := constInput(n, in, 1, "indices")
	if err != nil {
		return nil, err
	}
	u, err := input(n, in, 2)
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
	if !equalShape(u.shape, want) {
		return nil, nodeErr(n, "updates have shape %v: expected %v (indices %v, data %v)", u.shape, want, it.Shape, x.shape)
	}
	size, inner := numel(x.shape), numel(x.shape[k:])
	idx := make([]int, size)
	for i := range idx {
		idx[i] = i
	}
	ind := it.Int64s()
	for t := 0; t < numel(it.Shape[:q-1]); t++ {
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
