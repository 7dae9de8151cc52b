package onnxops

import (
	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/kernels"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Pad: opset 1 reads attribute paddings, opset 2 attribute pads, opset 11
// the inputs pads and constant_value (and axes from 18), all of which must be
// known when the graph is built. Modes constant, reflect, edge and, from
// opset 19, wrap.

func init() {
	graph.Register("Pad", 1, lowerPad)
	graph.Register("Pad", 2, lowerPad)
	graph.Register("Pad", 11, lowerPad)
}

func lowerPad(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	x, err := graph.Input(n, in, 0)
	if err != nil {
		return nil, err
	}
	mode, err := graph.AttrString(n, "mode", kernels.PadConstant)
	if err != nil {
		return nil, err
	}
	if mode == kernels.PadWrap && b.Opset < 19 {
		return nil, graph.NodeErr(n, "mode %q needs opset 19, the model imports %d", mode, b.Opset)
	}
	p := kernels.PadParams{Mode: mode}
	r := len(x.Shape)
	switch {
	case b.Opset < 2:
		v, err := graph.AttrInts(n, "paddings", nil)
		if err != nil {
			return nil, err
		}
		p.Pads = graph.Ints(v)
		if p.Value, err = graph.AttrFloat(n, "value", 0); err != nil {
			return nil, err
		}
	case b.Opset < 11:
		v, err := graph.AttrInts(n, "pads", nil)
		if err != nil {
			return nil, err
		}
		p.Pads = graph.Ints(v)
		if p.Value, err = graph.AttrFloat(n, "value", 0); err != nil {
			return nil, err
		}
	default:
		t, err := graph.ConstInput(n, in, 1, "pads")
		if err != nil {
			return nil, err
		}
		pads := graph.Ints(t.Int64s())
		if cv := graph.OptInput(in, 2); cv != nil {
			c, err := graph.ConstInput(n, in, 2, "constant_value")
			if err != nil {
				return nil, err
			}
			if f := c.Float64s(); len(f) > 0 {
				p.Value = f[0]
			}
		}
		axes, err := graph.OptConstInts(n, in, 3, "axes")
		if err != nil {
			return nil, err
		}
		if axes != nil {
			if len(pads) != 2*len(axes) {
				return nil, graph.NodeErr(n, "pads %v: expected %d values for axes %v", pads, 2*len(axes), axes)
			}
			full := make([]int, 2*r)
			for i, a := range axes {
				ax, err := graph.NormAxis(n, a, r)
				if err != nil {
					return nil, err
				}
				full[ax], full[r+ax] = pads[i], pads[len(axes)+i]
			}
			pads = full
		}
		p.Pads = pads
	}
	y, err := kernels.Pad(b.Node(x), p)
	if err != nil {
		return nil, graph.NodeErr(n, "%v", err)
	}
	return []*graph.Value{graph.NodeValue(y)}, nil
}
