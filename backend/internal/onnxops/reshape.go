package onnxops

import (
	"sort"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Shape-only ops (the data keep their order): Reshape, Flatten, Squeeze,
// Unsqueeze, Identity. Axes move from attribute to input at opset 13.

func init() {
	graph.Register("Reshape", 1, lowerReshape) // shape attribute
	graph.Register("Reshape", 5, lowerReshape) // shape input
	graph.Register("Flatten", 1, lowerFlatten)
	graph.Register("Squeeze", 1, lowerSqueeze)
	graph.Register("Squeeze", 13, lowerSqueeze)
	graph.Register("Unsqueeze", 1, lowerUnsqueeze)
	graph.Register("Unsqueeze", 13, lowerUnsqueeze)
	graph.Register("Identity", 1, lowerIdentity)
}

// reshapeTo gives x the shape s (same number of elements).
func reshapeTo(b *graph.Builder, n *onnxpb.NodeProto, x *graph.Value, s []int) ([]*graph.Value, error) {
	if shape.Numel(s) != shape.Numel(x.Shape) {
		return nil, graph.NodeErr(n, "cannot reshape %v (%d elements) to %v", x.Shape, shape.Numel(x.Shape), s)
	}
	if x.IsConst() {
		t := *x.C
		t.Name, t.Shape = n.Output[0], append([]int{}, s...)
		return []*graph.Value{graph.ConstValue(&t)}, nil
	}
	v, err := b.Move(n, n.GetOpType(), []*graph.Value{x}, s, shape.Identity(shape.Numel(s)))
	if err != nil {
		return nil, err
	}
	return []*graph.Value{v}, nil
}

func lowerIdentity(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	x, err := graph.Input(n, in, 0)
	if err != nil {
		return nil, err
	}
	return []*graph.Value{x}, nil
}

func lowerReshape(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	x, err := graph.Input(n, in, 0)
	if err != nil {
		return nil, err
	}
	var spec []int64
	if b.Opset < 5 {
		if spec, err = graph.AttrInts(n, "shape", nil); err != nil {
			return nil, err
		}
	} else {
		t, err := graph.ConstInput(n, in, 1, "shape")
		if err != nil {
			return nil, err
		}
		spec = t.Int64s()
	}
	allowZero, err := graph.AttrInt(n, "allowzero", 0)
	if err != nil {
		return nil, err
	}
	s := make([]int, len(spec))
	neg := -1
	for i, d := range spec {
		switch {
		case d == 0 && allowZero == 0:
			if i >= len(x.Shape) {
				return nil, graph.NodeErr(n, "shape %v copies dimension %d of an input of rank %d", spec, i, len(x.Shape))
			}
			s[i] = x.Shape[i]
		case d == -1:
			if neg >= 0 {
				return nil, graph.NodeErr(n, "shape %v has more than one -1", spec)
			}
			neg = i
		case d < 0:
			return nil, graph.NodeErr(n, "shape %v has a negative dimension %d", spec, d)
		default:
			s[i] = int(d)
		}
	}
	if neg >= 0 {
		s[neg] = 1
		p := shape.Numel(s)
		if p == 0 || shape.Numel(x.Shape)%p != 0 {
			return nil, graph.NodeErr(n, "cannot infer -1 in shape %v for an input of shape %v", spec, x.Shape)
		}
		s[neg] = shape.Numel(x.Shape) / p
	}
	return reshapeTo(b, n, x, s)
}

func lowerFlatten(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	x, err := graph.Input(n, in, 0)
	if err != nil {
		return nil, err
	}
	ax, err := graph.AttrInt(n, "axis", 1)
	if err != nil {
		return nil, err
	}
	a := int(ax)
	if a < 0 {
		a += len(x.Shape)
	}
	if a < 0 || a > len(x.Shape) {
		return nil, graph.NodeErr(n, "axis %d out of range for rank %d", ax, len(x.Shape))
	}
	return reshapeTo(b, n, x, []int{shape.Numel(x.Shape[:a]), shape.Numel(x.Shape[a:])})
}

// axesOf returns the axes of Squeeze/Unsqueeze: attribute before opset
// 13, optional constant input from 13 on.
func axesOf(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]int64, error) {
	if b.Opset < 13 {
		return graph.AttrInts(n, "axes", nil)
	}
	return graph.OptConstInts(n, in, 1, "axes")
}

func lowerSqueeze(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	x, err := graph.Input(n, in, 0)
	if err != nil {
		return nil, err
	}
	axes, err := axesOf(b, n, in)
	if err != nil {
		return nil, err
	}
	drop := map[int]bool{}
	if axes == nil {
		for i, d := range x.Shape {
			if d == 1 {
				drop[i] = true
			}
		}
	}
	for _, a := range axes {
		i, err := graph.NormAxis(n, a, len(x.Shape))
		if err != nil {
			return nil, err
		}
		if x.Shape[i] != 1 {
			return nil, graph.NodeErr(n, "cannot squeeze axis %d of shape %v (size %d, expected 1)", a, x.Shape, x.Shape[i])
		}
		drop[i] = true
	}
	var s []int
	for i, d := range x.Shape {
		if !drop[i] {
			s = append(s, d)
		}
	}
	return reshapeTo(b, n, x, s)
}

func lowerUnsqueeze(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	x, err := graph.Input(n, in, 0)
	if err != nil {
		return nil, err
	}
	axes, err := axesOf(b, n, in)
	if err != nil {
		return nil, err
	}
	if len(axes) == 0 {
		return nil, graph.NodeErr(n, "axes are required")
	}
	r := len(x.Shape) + len(axes)
	ins := map[int]bool{}
	for _, a := range axes {
		i, err := graph.NormAxis(n, a, r)
		if err != nil {
			return nil, err
		}
		if ins[i] {
			return nil, graph.NodeErr(n, "axis %d repeated in %v", a, axes)
		}
		ins[i] = true
	}
	keys := make([]int, 0, len(ins))
	for k := range ins {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	s := make([]int, 0, r)
	j := 0
	for i := 0; i < r; i++ {
		if ins[i] {
			s = append(s, 1)
		} else {
			s = append(s, x.Shape[j])
			j++
		}
	}
	return reshapeTo(b, n, x, s)
}
