package backend

import (
	"github.com/paretonav/paretonav/backend/internal/kernels"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Pad: opset 1 reads attribute paddings, opset 2 attribute pads, opset 11
// the inputs pads and constant_value (and axes from 18), all of which must be
// known when the graph is built. Modes constant, reflect, edge and, from
// opset 19, wrap.

func init() {
	register("Pad", 1, lowerPad)
	register("Pad", 2, lowerPad)
	register("Pad", 11, lowerPad)
}

func lowerPad(b *builder, n *onnxpb.NodeProto, in []*value) ([]*value, error) {
	x, err := input(n, in, 0)
	if err != nil {
		return nil, err
	}
	mode, err := attrString(n, "mode", kernels.PadConstant)
	if err != nil {
		return nil, err
	}
	if mode == kernels.PadWrap && b.opset < 19 {
		return nil, nodeErr(n, "mode %q needs opset 19, the model imports %d", mode, b.opset)
	}
	p := kernels.PadParams{Mode: mode}
	r := len(x.shape)
	switch {
	case b.opset < 2:
		v, err := attrInts(n, "paddings", nil)
		if err != nil {
			return nil, err
		}
		p.Pads = ints(v)
		if p.Value, err = attrFloat(n, "value", 0); err != nil {
			return nil, err
		}
	case b.opset < 11:
		v, err := attrInts(n, "pads", nil)
		if err != nil {
			return nil, err
		}
		p.Pads = ints(v)
		if p.Value, err = attrFloat(n, "value", 0); err != nil {
			return nil, err
		}
	default:
		t, err := constInput(n, in, 1, "pads")
		if err != nil {
			return nil, err
		}
		pads := ints(t.Int64s())
		if cv := optInput(in, 2); cv != nil {
			c, err := constInput(n, in, 2, "constant_value")
			if err != nil {
				return nil, err
			}
			if f := c.Float64s(); len(f) > 0 {
				p.Value = f[0]
			}
		}
		axes, err := optConstInts(n, in, 3, "axes")
		if err != nil {
			return nil, err
		}
		if axes != nil {
			if len(pads) != 2*len(axes) {
				return nil, nodeErr(n, "pads %v: expected %d values for axes %v", pads, 2*len(axes), axes)
			}
			full := make([]int, 2*r)
			for i, a := range axes {
				ax, err := normAxis(n, a, r)
				if err != nil {
					return nil, err
				}
				full[ax], full[r+ax] = pads[i], pads[len(axes)+i]
			}
			pads = full
		}
		p.Pads = pads
	}
	y, err := kernels.Pad(b.node(x), p)
	if err != nil {
		return nil, nodeErr(n, "%v", err)
	}
	return []*value{nodeValue(y)}, nil
}
