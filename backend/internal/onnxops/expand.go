package onnxops

import (
	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Expand (numpy broadcast to a shape) and Tile (repeat along each axis) on
// run-time or constant data; the shape and repeats must be known when the
// graph is built. Both are data movement: the gradient sums the copies.

func init() {
	graph.Register("Expand", 8, lowerExpand)
	graph.Register("Tile", 1, lowerTile)
}

func lowerExpand(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	x, err := graph.Input(n, in, 0)
	if err != nil {
		return nil, err
	}
	st, err := graph.ConstInput(n, in, 1, "shape")
	if err != nil {
		return nil, err
	}
	out, err := shape.Broadcast(x.Shape, graph.Ints(st.Int64s()))
	if err != nil {
		return nil, graph.NodeErr(n, "input %q and shape %v (opset %d): %v", n.Input[0], st.Int64s(), b.Opset, err)
	}
	idx := shape.BroadcastIndex(x.Shape, out)
	if idx == nil {
		idx = shape.Identity(shape.Numel(out))
	}
	v, err := b.Move(n, "Expand", []*graph.Value{x}, out, idx)
	if err != nil {
		return nil, err
	}
	return []*graph.Value{v}, nil
}

func lowerTile(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	x, err := graph.Input(n, in, 0)
	if err != nil {
		return nil, err
	}
	var reps []int64
	if b.Opset < 6 {
		// Tile-1: tiles (a scalar count) along the axis given by the input axis.
		return nil, b.LimitErr(n, "Tile before opset 6 (tiles and axis inputs)")
	}
	rt, err := graph.ConstInput(n, in, 1, "repeats")
	if err != nil {
		return nil, err
	}
	reps = rt.Int64s()
	r := len(x.Shape)
	if len(reps) != r {
		return nil, graph.NodeErr(n, "repeats has %d values, expected one per axis of input %q of shape %v", len(reps), n.Input[0], x.Shape)
	}
	out := make([]int, r)
	for i, d := range x.Shape {
		if reps[i] < 0 {
			return nil, graph.NodeErr(n, "repeats[%d] = %d is negative", i, reps[i])
		}
		out[i] = d * int(reps[i])
	}
	ist := shape.Strides(x.Shape)
	idx := make([]int, shape.Numel(out))
	ctr := make([]int, r)
	for i := range idx {
		j := 0
		for d := 0; d < r; d++ {
			j += (ctr[d] % x.Shape[d]) * ist[d]
		}
		idx[i] = j
		shape.NextIndex(ctr, out)
	}
	v, err := b.Move(n, "Tile", []*graph.Value{x}, out, idx)
	if err != nil {
		return nil, err
	}
	return []*graph.Value{v}, nil
}
