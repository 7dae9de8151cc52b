package onnxops

import (
	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/kernels"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Resize and Upsample, nearest and linear over the spatial axes of 3-D and
// 4-D inputs (kernels.Resize). Upsample (opset 7: attribute scales; 9: input
// scales) and Resize-10 use asymmetric coordinates and ONNX Runtime's
// nearest rounding (floor when enlarging, ceil when shrinking). Resize 11+
// reads X, roi (ignored), scales, sizes, with coordinate_transformation_mode
// and nearest_mode, and from opset 18 the axes attribute (scales and sizes
// for those axes only); cubic mode, tf_crop_and_resize, exclude_outside,
// antialias and keep_aspect_ratio_policy other than stretch (18) are not
// supported; half_pixel_symmetric is accepted from opset 19. scales and sizes must be
// known when the graph is built.

func init() {
	graph.Register("Upsample", 7, lowerResize)
	graph.Register("Upsample", 9, lowerResize)
	graph.Register("Resize", 10, lowerResize)
	graph.Register("Resize", 11, lowerResize)
}

func lowerResize(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	x, err := graph.Input(n, in, 0)
	if err != nil {
		return nil, err
	}
	mode, err := graph.AttrString(n, "mode", kernels.ResizeNearest)
	if err != nil {
		return nil, err
	}
	if mode == "bilinear" {
		mode = kernels.ResizeLinear
	}
	if mode != kernels.ResizeNearest && mode != kernels.ResizeLinear {
		return nil, graph.NodeErr(n, "mode %q is not supported, expected nearest or linear", mode)
	}
	p := kernels.ResizeParams{Mode: mode}
	legacy := n.GetOpType() == "Upsample" || b.Opset < 11
	if legacy {
		p.CoordMode, p.NearestMode = kernels.CoordAsymmetric, kernels.NearestSimple
		switch {
		case n.GetOpType() == "Upsample" && b.Opset < 9:
			if p.Scales, err = graph.AttrFloats(n, "scales", nil); err != nil {
				return nil, err
			}
		default:
			t, err := graph.ConstInput(n, in, 1, "scales")
			if err != nil {
				return nil, err
			}
			p.Scales = t.Float64s()
		}
	} else {
		if p.CoordMode, err = graph.AttrString(n, "coordinate_transformation_mode", kernels.CoordHalfPixel); err != nil {
			return nil, err
		}
		if p.NearestMode, err = graph.AttrString(n, "nearest_mode", kernels.NearestRoundPreferFloor); err != nil {
			return nil, err
		}
		if p.CoordMode == kernels.CoordHalfPixelSymmetric && b.Opset < 19 {
			return nil, graph.NodeErr(n, "coordinate_transformation_mode %q needs opset 19, the model imports %d", p.CoordMode, b.Opset)
		}
		if p.CoordMode == "tf_crop_and_resize" {
			return nil, graph.NodeErr(n, "coordinate_transformation_mode tf_crop_and_resize is not supported")
		}
		for _, a := range []string{"exclude_outside", "antialias"} {
			if v, err := graph.AttrInt(n, a, 0); err != nil {
				return nil, err
			} else if v != 0 {
				return nil, graph.NodeErr(n, "%s = %d is not supported", a, v)
			}
		}
		if graph.OptInput(in, 2) != nil {
			t, err := graph.ConstInput(n, in, 2, "scales")
			if err != nil {
				return nil, err
			}
			p.Scales = t.Float64s()
		}
		sizes, err := graph.OptConstInts(n, in, 3, "sizes")
		if err != nil {
			return nil, err
		}
		if len(sizes) > 0 {
			p.Sizes = graph.Ints(sizes)
		}
		if len(p.Scales) == 0 {
			p.Scales = nil
		}
		if b.Opset >= 18 {
			if err := resizeAxes(n, x.Shape, &p); err != nil {
				return nil, err
			}
		}
	}
	if p.Scales == nil && p.Sizes == nil {
		return nil, graph.NodeErr(n, "neither scales nor sizes given")
	}
	y, err := kernels.Resize(b.Node(x), p)
	if err != nil {
		return nil, graph.NodeErr(n, "%v", err)
	}
	return []*graph.Value{graph.NodeValue(y)}, nil
}

// resizeAxes applies Resize-18's keep_aspect_ratio_policy (only stretch is
// supported) and axes: scales and sizes given for those axes only are
// completed with 1 and X's size on the others.
func resizeAxes(n *onnxpb.NodeProto, shape []int, p *kernels.ResizeParams) error {
	rank := len(shape)
	policy, err := graph.AttrString(n, "keep_aspect_ratio_policy", "stretch")
	if err != nil {
		return err
	}
	if policy != "stretch" && p.Sizes != nil {
		return graph.NodeErr(n, "keep_aspect_ratio_policy %q is not supported (only stretch)", policy)
	}
	if !graph.HasAttr(n, "axes") {
		return nil
	}
	axes, err := graph.AttrInts(n, "axes", nil)
	if err != nil {
		return err
	}
	full := make([]int, len(axes))
	seen := map[int]bool{}
	for i, a := range axes {
		if a < -int64(rank) || a >= int64(rank) {
			return graph.NodeErr(n, "axes %v: axis %d out of range for input %q of rank %d", axes, a, n.Input[0], rank)
		}
		if a < 0 {
			a += int64(rank)
		}
		if seen[int(a)] {
			return graph.NodeErr(n, "axes %v: axis %d repeated", axes, a)
		}
		seen[int(a)], full[i] = true, int(a)
	}
	if p.Scales != nil {
		if len(p.Scales) != len(axes) {
			return graph.NodeErr(n, "scales %v: expected one per axis of %v", p.Scales, axes)
		}
		s := make([]float64, rank)
		for i := range s {
			s[i] = 1
		}
		for i, a := range full {
			s[a] = p.Scales[i]
		}
		p.Scales = s
	}
	if p.Sizes != nil {
		if len(p.Sizes) != len(axes) {
			return graph.NodeErr(n, "sizes %v: expected one per axis of %v", p.Sizes, axes)
		}
		s := append([]int{}, shape...)
		for i, a := range full {
			s[a] = p.Sizes[i]
		}
		p.Sizes = s
	}
	return nil
}
