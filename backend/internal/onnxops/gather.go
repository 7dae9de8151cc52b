package onnxops

import (
	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Gather along an axis with constant indices (negative indices count from
// the end). The data may be a run-time node.

func init() { graph.Register("Gather", 1, lowerGather) }

func lowerGather(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	x, err := graph.Input(n, in, 0)
	if err != nil {
		return nil, err
	}
	it, err := graph.ConstInput(n, in, 1, "indices")
	if err != nil {
		return nil, err
	}
	a, err := graph.AxisAttr(n, 0, len(x.Shape))
	if err != nil {
		return nil, err
	}
	ind := it.Int64s()
	d := x.Shape[a]
	for i, v := range ind {
		if v < 0 {
			v += int64(d)
		}
		if v < 0 || v >= int64(d) {
			return nil, graph.NodeErr(n, "index %d out of range for axis %d of size %d", ind[i], a, d)
		}
		ind[i] = v
	}
	out := append(append(append([]int{}, x.Shape[:a]...), it.Shape...), x.Shape[a+1:]...)
	outer, inner := shape.Numel(x.Shape[:a]), shape.Numel(x.Shape[a+1:])
	idx := make([]int, 0, shape.Numel(out))
	for o := 0; o < outer; o++ {
		for _, v := range ind {
			base := (o*d + int(v)) * inner
			for j := 0; j < inner; j++ {
				idx = append(idx, base+j)
			}
		}
	}
	v, err := b.Move(n, "Gather", []*graph.Value{x}, out, idx)
	if err != nil {
		return nil, err
	}
	return []*graph.Value{v}, nil
}
