package onnxops

import (
	"math"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Slice: starts/ends/axes attributes before opset 10, inputs (with steps)
// from 10 on; they must be known when the graph is built.

func init() {
	graph.Register("Slice", 1, lowerSlice)
	graph.Register("Slice", 10, lowerSlice)
}

func lowerSlice(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	x, first, step, out, err := sliceGeometry(b, n, in)
	if err != nil {
		return nil, err
	}
	r := len(x.Shape)
	ist := shape.Strides(x.Shape)
	idx := make([]int, shape.Numel(out))
	ctr := make([]int, r)
	for i := range idx {
		off := 0
		for d := 0; d < r; d++ {
			off += (first[d] + ctr[d]*step[d]) * ist[d]
		}
		idx[i] = off
		shape.NextIndex(ctr, out)
	}
	v, err := b.Move(n, "Slice", []*graph.Value{x}, out, idx)
	if err != nil {
		return nil, err
	}
	return []*graph.Value{v}, nil
}

// sliceGeometry reads Slice node n's input x and the slice it takes:
// along each axis the first element, the step and the count (out, the
// result's shape).
func sliceGeometry(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) (x *graph.Value, first, step, out []int, err error) {
	if x, err = graph.Input(n, in, 0); err != nil {
		return nil, nil, nil, nil, err
	}
	var starts, ends, axes, steps []int64
	if b.Opset < 10 {
		if starts, err = graph.AttrInts(n, "starts", nil); err != nil {
			return nil, nil, nil, nil, err
		}
		if ends, err = graph.AttrInts(n, "ends", nil); err != nil {
			return nil, nil, nil, nil, err
		}
		if axes, err = graph.AttrInts(n, "axes", nil); err != nil {
			return nil, nil, nil, nil, err
		}
	} else {
		for i, p := range []*[]int64{&starts, &ends, &axes, &steps} {
			if *p, err = graph.OptConstInts(n, in, i+1, []string{"starts", "ends", "axes", "steps"}[i]); err != nil {
				return nil, nil, nil, nil, err
			}
		}
	}
	if len(starts) != len(ends) {
		return nil, nil, nil, nil, graph.NodeErr(n, "starts %v and ends %v differ in length", starts, ends)
	}
	r := len(x.Shape)
	if axes == nil {
		for i := range starts {
			axes = append(axes, int64(i))
		}
	}
	if steps == nil {
		for range starts {
			steps = append(steps, 1)
		}
	}
	if len(axes) != len(starts) || len(steps) != len(starts) {
		return nil, nil, nil, nil, graph.NodeErr(n, "starts, ends, axes and steps must have the same length (%d, %d, %d, %d)", len(starts), len(ends), len(axes), len(steps))
	}
	first = make([]int, r)
	step = make([]int, r)
	out = append([]int{}, x.Shape...)
	for i := range step {
		step[i] = 1
	}
	for i, ax := range axes {
		a, err := graph.NormAxis(n, ax, r)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		d := int64(x.Shape[a])
		st := steps[i]
		if st == 0 {
			return nil, nil, nil, nil, graph.NodeErr(n, "step 0 on axis %d", ax)
		}
		s, e := starts[i], ends[i]
		if s < 0 {
			s += d
		}
		if e < 0 && e > math.MinInt64/2 {
			e += d
		}
		cnt := int64(0)
		if st > 0 {
			s, e = max(0, min(s, d)), max(0, min(e, d))
			if e > s {
				cnt = (e - s + st - 1) / st
			}
		} else {
			s, e = max(-1, min(s, d-1)), max(-1, min(e, d-1))
			if s > e {
				cnt = (s - e - st - 1) / (-st)
			}
		}
		first[a], step[a], out[a] = int(s), int(st), int(cnt)
	}
	return x, first, step, out, nil
}
