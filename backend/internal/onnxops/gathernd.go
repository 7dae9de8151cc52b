package onnxops

import (
	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// GatherND (opset 11; 12 adds batch_dims) with constant indices: the
// dynamo exporter writes it for advanced indexing, Swin's relative
// position bias table indexed by its relative_position_index, for one.
// The data may be a run-time node (a trainable table); its gradient
// scatters back, adding where an index repeats. Negative indices count
// from the end of their axis.

func init() {
	graph.Register("GatherND", 11, lowerGatherND)
}

func lowerGatherND(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	x, err := graph.Input(n, in, 0)
	if err != nil {
		return nil, err
	}
	it, err := graph.ConstInput(n, in, 1, "indices")
	if err != nil {
		return nil, err
	}
	bd64, err := graph.AttrInt(n, "batch_dims", 0)
	if err != nil {
		return nil, err
	}
	bd := int(bd64)
	q, r := len(it.Shape), len(x.Shape)
	if q < 1 || bd < 0 || bd >= q || bd >= r {
		return nil, graph.NodeErr(n, "batch_dims %d with indices of rank %d and data of rank %d: expected 0 <= batch_dims < both ranks", bd, q, r)
	}
	k := it.Shape[q-1]
	if k < 1 || bd+k > r {
		return nil, graph.NodeErr(n, "indices' last dimension is %d: expected 1 to %d (data rank %d minus batch_dims %d)", k, r-bd, r, bd)
	}
	for i := 0; i < bd; i++ {
		if it.Shape[i] != x.Shape[i] {
			return nil, graph.NodeErr(n, "batch dimension %d: indices have %d, data %d; expected equal", i, it.Shape[i], x.Shape[i])
		}
	}
	out := append(append([]int{}, it.Shape[:q-1]...), x.Shape[bd+k:]...)
	batches := shape.Numel(x.Shape[:bd])
	tuples := shape.Numel(it.Shape[bd : q-1])
	inner := shape.Numel(x.Shape[bd+k:])
	batchSize := shape.Numel(x.Shape[bd:])
	ind := it.Int64s()
	idx := make([]int, 0, shape.Numel(out))
	for bi := 0; bi < batches; bi++ {
		for ti := 0; ti < tuples; ti++ {
			tuple := ind[(bi*tuples+ti)*k : (bi*tuples+ti+1)*k]
			off := 0
			for j, v := range tuple {
				d := x.Shape[bd+j]
				if v < 0 {
					v += int64(d)
				}
				if v < 0 || v >= int64(d) {
					return nil, graph.NodeErr(n, "index %d out of range for data axis %d of size %d", tuple[j], bd+j, d)
				}
				off = off*d + int(v)
			}
			base := bi*batchSize + off*inner
			for j := 0; j < inner; j++ {
				idx = append(idx, base+j)
			}
		}
	}
	v, err := b.Move(n, "GatherND", []*graph.Value{x}, out, idx)
	if err != nil {
		return nil, err
	}
	return []*graph.Value{v}, nil
}
