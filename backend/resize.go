package backend

import (
	"github.com/paretonav/paretonav/backend/ops"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Resize and Upsample, nearest and linear over the spatial axes of 3-D and
// 4-D inputs (ops.Resize). Upsample (opset 7: attribute scales; 9: input
// scales) and Resize-10 use asymmetric coordinates and ONNX Runtime's
// nearest rounding (floor when enlarging, ceil when shrinking). Resize 11+
// reads X, roi (ignored), scales, sizes, with coordinate_transformation_mode
// and nearest_mode; cubic mode, tf_crop_and_resize, exclude_outside,
// antialias and the axes attribute are not supported. scales and sizes must
// be known when the graph is built.

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
	mode, err := attrString(n, "mode", ops.ResizeNearest)
	if err != nil {
		return nil, err
	}
	if mode == "bilinear" {
		mode = ops.ResizeLinear
	}
	if mode != ops.ResizeNearest && mode != ops.ResizeLinear {
		return nil, nodeErr(n, "mode %q is not supported, expected nearest or linear", mode)
	}
	p := ops.ResizeParams{Mode: mode}
	legacy := n.GetOpType() == "Upsample" || b.opset < 11
	if legacy {
		p.CoordMode, p.NearestMode = ops.CoordAsymmetric, ops.NearestSimple
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
		if p.CoordMode, err = attrString(n, "coordinate_transformation_mode", ops.CoordHalfPixel); err != nil {
			return nil, err
		}
		if p.NearestMode, err = attrString(n, "nearest_mode", ops.NearestRoundPreferFloor); err != nil {
			return nil, err
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
		if hasAttr(n, "axes") {
			return nil, nodeErr(n, "attribute axes is not supported")
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
	}
	if p.Scales == nil && p.Sizes == nil {
		return nil, nodeErr(n, "neither scales nor sizes given")
	}
	y, err := ops.Resize(b.node(x), p)
	if err != nil {
		return nil, nodeErr(n, "%v", err)
	}
	return []*value{nodeValue(y)}, nil
}
