package backend

import (
	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Expand (numpy broadcast to a shape) and Tile (repeat along each axis) on
// run-time or constant data; the shape and repeats must be known when the
// graph is built. Both are data movement: the gradient sums the copies.

func init() {
	register("Expand", 8, lowerExpand)
	register("Tile", 1, lowerTile)
}

func lowerExpand(b *builder, n *onnxpb.NodeProto, in []*value) ([]*value, error) {
	x, err := input(n, in, 0)
	if err != nil {
		return nil, err
	}
	st, err := constInput(n, in, 1, "shape")
	if err != nil {
		return nil, err
	}
	out, err := shape.Broadcast(x.shape, ints(st.Int64s()))
	if err != nil {
		return nil, nodeErr(n, "input %q and shape %v (opset %d): %v", n.Input[0], st.Int64s(), b.opset, err)
	}
	idx := shape.BroadcastIndex(x.shape, out)
	if idx == nil {
		idx = shape.Identity(shape.Numel(out))
	}
	v, err := b.move(n, "Expand", []*value{x}, out, idx)
	if err != nil {
		return nil, err
	}
	return []*value{v}, nil
}

func lowerTile(b *builder, n *onnxpb.NodeProto, in []*value) ([]*value, error) {
	x, err := input(n, in, 0)
	if err != nil {
		return nil, err
	}
	var reps []int64
	if b.opset < 6 {
		// Tile-1: tiles (a scalar count) along the axis given by the input axis.
		return nil, b.limitErr(n, "Tile before opset 6 (tiles and axis inputs)")
	}
	rt, err := constInput(n, in, 1, "repeats")
	if err != nil {
		return nil, err
	}
	reps = rt.Int64s()
	r := len(x.shape)
	if len(reps) != r {
		return nil, nodeErr(n, "repeats has %d values, expected one per axis of input %q of shape %v", len(reps), n.Input[0], x.shape)
	}
	out := make([]int, r)
	for i, d := range x.shape {
		if reps[i] < 0 {
			return nil, nodeErr(n, "repeats[%d] = %d is negative", i, reps[i])
		}
		out[i] = d * int(reps[i])
	}
	ist := shape.Strides(x.shape)
	idx := make([]int, shape.Numel(out))
	ctr := make([]int, r)
	for i := range idx {
		j := 0
		for d := 0; d < r; d++ {
			j += (ctr[d] % x.shape[d]) * ist[d]
		}
		idx[i] = j
		shape.NextIndex(ctr, out)
	}
	v, err := b.move(n, "Tile", []*value{x}, out, idx)
	if err != nil {
		return nil, err
	}
	return []*value{v}, nil
}
