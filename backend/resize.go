package backend

import (
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
	register("Upsample", 7, lowerResize)
	register("Upsample", 9, lowerResize)
	register("Resize", 10, lowerResize)
	register("Resize", 11, lowerResize)
}

func lowerResize(b *builder, n *onnxpb.NodeProto, in []*value) ([]*value, error) {
	x, err := input(n, in, 0)
	if err != nil {
		return nil, err
	}
	mode, err := attrString(n, "mode", kernels.ResizeNearest)
	if err != nil {
		return nil, err
	}
	if mode == "bilinear" {
		mode = kernels.ResizeLinear
	}
	if mode != kernels.ResizeNearest && mode != kernels.ResizeLinear {
		return nil, nodeErr(n, "mode %q is not supported, expected nearest or linear", mode)
	}
	p := kernels.ResizeParams{Mode: mode}
	legacy := n.GetOpType() == "Upsample" || b.opset < 11
	if legacy {
		p.CoordMode, p.NearestMode = kernels.CoordAsymmetric, kernels.NearestSimple
		switch {
		case n.GetOpType() == "Upsample" && b.opset < 9:
			if p.Scales, err = attrFloats(n, "scales", nil); err != nil {
				return nil, err
			}
		default:
			t, err := constInput(n, in, 1, "scales")
			if err != nil {
				return nil, err
			}
			p.Scales = t.Float64s()
		}
	} else {
		if p.CoordMode, err = attrString(n, "coordinate_transformation_mode", kernels.CoordHalfPixel); err != nil {
			return nil, err
		}
		if p.NearestMode, err = attrString(n, "nearest_mode", kernels.NearestRoundPreferFloor); err != nil {
			return nil, err
		}
		if p.CoordMode == kernels.CoordHalfPixelSymmetric && b.opset < 19 {
			return nil, nodeErr(n, "coordinate_transformation_mode %q needs opset 19, the model imports %d", p.CoordMode, b.opset)
		}
		if p.CoordMode == "tf_crop_and_resize" {
			return nil, nodeErr(n, "coordinate_transformation_mode tf_crop_and_resize is not supported")
		}
		for _, a := range []string{"exclude_outside", "antialias"} {
			if v, err := attrInt(n, a, 0); err != nil {
				return nil, err
			} else if v != 0 {
				return nil, nodeErr(n, "%s = %d is not supported", a, v)
			}
		}
		if optInput(in, 2) != nil {
			t, err := constInput(n, in, 2, "scales")
			if err != nil {
				return nil, err
			}
			p.Scales = t.Float64s()
		}
		sizes, err := optConstInts(n, in, 3, "sizes")
		if err != nil {
			return nil, err
		}
		if len(sizes) > 0 {
			p.Sizes = ints(sizes)
		}
		if len(p.Scales) == 0 {
			p.Scales = nil
		}
		if b.opset >= 18 {
			if err := resizeAxes(n, x.shape, &p); err != nil {
				return nil, err
			}
		}
	}
	if p.Scales == nil && p.Sizes == nil {
		return nil, nodeErr(n, "neither scales nor sizes given")
	}
	y, err := kernels.Resize(b.node(x), p)
	if err != nil {
		return nil, nodeErr(n, "%v", err)
	}
	return []*value{nodeValue(y)}, nil
}

// resizeAxes applies Resize-18's keep_aspect_ratio_policy (only stretch is
// supported) and axes: scales and sizes given for those axes only are
// completed with 1 and X's size on the others.
func resizeAxes(n *onnxpb.NodeProto, shape []int, p *kernels.ResizeParams) error {
	rank := len(shape)
	policy, err := attrString(n, "keep_aspect_ratio_policy", "stretch")
	if err != nil {
		return err
	}
	if policy != "stretch" && p.Sizes != nil {
		return nodeErr(n, "keep_aspect_ratio_policy %q is not supported (only stretch)", policy)
	}
	if !hasAttr(n, "axes") {
		return nil
	}
	axes, err := attrInts(n, "axes", nil)
	if err != nil {
		return err
	}
	full := make([]int, len(axes))
	seen := map[int]bool{}
	for i, a := range axes {
		if a < -int64(rank) || a >= int64(rank) {
			return nodeErr(n, "axes %v: axis %d out of range for input %q of rank %d", axes, a, n.Input[0], rank)
		}
		if a < 0 {
			a += int64(rank)
		}
		if seen[int(a)] {
			return nodeErr(n, "axes %v: axis %d repeated", axes, a)
		}
		seen[int(a)], full[i] = true, int(a)
	}
	if p.Scales != nil {
		if len(p.Scales) != len(axes) {
			return nodeErr(n, "scales %v: expected one per axis of %v", p.Scales, axes)
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
			return nodeErr(n, "sizes %v: expected one per axis of %v", p.Sizes, axes)
		}
		s := append([]int{}, shape...)
		for i, a := range full {
			s[a] = p.Sizes[i]
		}
		p.Sizes = s
	}
	return nil
}
