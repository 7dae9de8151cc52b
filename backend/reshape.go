package backend

import (
	"sort"

	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Shape-only ops (the data keep their order): Reshape, Flatten, Squeeze,
// Unsqueeze, Identity. Axes move from attribute to input at opset 13.

func init() {
	register("Reshape", 1, lowerReshape) // shape attribute
	register("Reshape", 5, lowerReshape) // shape input
	register("Flatten", 1, lowerFlatten)
	register("Squeeze", 1, lowerSqueeze)
	register("Squeeze", 13, lowerSqueeze)
	register("Unsqueeze", 1, lowerUnsqueeze)
	register("Unsqueeze", 13, lowerUnsqueeze)
	register("Identity", 1, lowerIdentity)
}

// reshapeTo gives x the shape s (same number of elements).
func reshapeTo(b *builder, n *onnxpb.NodeProto, x *value, s []int) ([]*value, error) {
	if shape.Numel(s) != shape.Numel(x.shape) {
		return nil, nodeErr(n, "cannot reshape %v (%d elements) to %v", x.shape, shape.Numel(x.shape), s)
	}
	if x.isConst() {
		t := *x.c
		t.Name, t.Shape = n.Output[0], append([]int{}, s...)
		return []*value{constValue(&t)}, nil
	}
	v, err := b.move(n, n.GetOpType(), []*value{x}, s, shape.Identity(shape.Numel(s)))
	if err != nil {
		return nil, err
	}
	return []*value{v}, nil
}

func lowerIdentity(b *builder, n *onnxpb.NodeProto, in []*value) ([]*value, error) {
	x, err := input(n, in, 0)
	if err != nil {
		return nil, err
	}
	return []*value{x}, nil
}

func lowerReshape(b *builder, n *onnxpb.NodeProto, in []*value) ([]*value, error) {
	x, err := input(n, in, 0)
	if err != nil {
		return nil, err
	}
	var spec []int64
	if b.opset < 5 {
		if spec, err = attrInts(n, "shape", nil); err != nil {
			return nil, err
		}
	} else {
		t, err := constInput(n, in, 1, "shape")
		if err != nil {
			return nil, err
		}
		spec = t.Int64s()
	}
	allowZero, err := attrInt(n, "allowzero", 0)
	if err != nil {
		return nil, err
	}
	s := make([]int, len(spec))
	neg := -1
	for i, d := range spec {
		switch {
		case d == 0 && allowZero == 0:
			if i >= len(x.shape) {
				return nil, nodeErr(n, "shape %v copies dimension %d of an input of rank %d", spec, i, len(x.shape))
			}
			s[i] = x.shape[i]
		case d == -1:
			if neg >= 0 {
				return nil, nodeErr(n, "shape %v has more than one -1", spec)
			}
			neg = i
		case d < 0:
			return nil, nodeErr(n, "shape %v has a negative dimension %d", spec, d)
		default:
			s[i] = int(d)
		}
	}
	if neg >= 0 {
		s[neg] = 1
		p := shape.Numel(s)
		if p == 0 || shape.Numel(x.shape)%p != 0 {
			return nil, nodeErr(n, "cannot infer -1 in shape %v for an input of shape %v", spec, x.shape)
		}
		s[neg] = shape.Numel(x.shape) / p
	}
	return reshapeTo(b, n, x, s)
}

func lowerFlatten(b *builder, n *onnxpb.NodeProto, in []*value) ([]*value, error) {
	x, err := input(n, in, 0)
	if err != nil {
		return nil, err
	}
	ax, err := attrInt(n, "axis", 1)
	if err != nil {
		return nil, err
	}
	a := int(ax)
	if a < 0 {
		a += len(x.shape)
	}
	if a < 0 || a > len(x.shape) {
		return nil, nodeErr(n, "axis %d out of range for rank %d", ax, len(x.shape))
	}
	return reshapeTo(b, n, x, []int{shape.Numel(x.shape[:a]), shape.Numel(x.shape[a:])})
}

// axesOf returns the axes of Squeeze/Unsqueeze: attribute before opset
// 13, optional constant input from 13 on.
func axesOf(b *builder, n *onnxpb.NodeProto, in []*value) ([]int64, error) {
	if b.opset < 13 {
		return attrInts(n, "axes", nil)
	}
	return optConstInts(n, in, 1, "axes")
}

func lowerSqueeze(b *builder, n *onnxpb.NodeProto, in []*value) ([]*value, error) {
	x, err := input(n, in, 0)
	if err != nil {
		return nil, err
	}
	axes, err := axesOf(b, n, in)
	if err != nil {
		return nil, err
	}
	drop := map[int]bool{}
	if axes == nil {
		for i, d := range x.shape {
			if d == 1 {
				drop[i] = true
			}
		}
	}
	for _, a := range axes {
		i, err := normAxis(n, a, len(x.shape))
		if err != nil {
			return nil, err
		}
		if x.shape[i] != 1 {
			return nil, nodeErr(n, "cannot squeeze axis %d of shape %v (size %d, expected 1)", a, x.shape, x.shape[i])
		}
		drop[i] = true
	}
	var s []int
	for i, d := range x.shape {
		if !drop[i] {
			s = append(s, d)
		}
	}
	return reshapeTo(b, n, x, s)
}

func lowerUnsqueeze(b *builder, n *onnxpb.NodeProto, in []*value) ([]*value, error) {
	x, err := input(n, in, 0)
	if err != nil {
		return nil, err
	}
	axes, err := axesOf(b, n, in)
	if err != nil {
		return nil, err
	}
	if len(axes) == 0 {
		return nil, nodeErr(n, "axes are required")
	}
	r := len(x.shape) + len(axes)
	ins := map[int]bool{}
	for _, a := range axes {
		i, err := normAxis(n, a, r)
		if err != nil {
			return nil, err
		}
		if ins[i] {
			return nil, nodeErr(n, "axis %d repeated in %v", a, axes)
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
			s = append(s, x.shape[j])
			j++
		}
	}
	return reshapeTo(b, n, x, s)
}
