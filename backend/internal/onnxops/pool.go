package onnxops

import (
	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/kernels"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Pooling: MaxPool (Indices output from opset 8, ceil_mode and dilations
// from 10; storage_order 1 is not supported), AveragePool (count_include_pad
// from 7, ceil_mode from 10, dilations from 19), GlobalAveragePool,
// GlobalMaxPool and MaxUnpool (9, 11). Attributes an opset lacks are simply
// absent, so one lowering serves every opset. MaxPool's Indices are ONNX's
// flat N×C×H×W indices as an int64 node; MaxUnpool accepts them as int64 or
// float (after arithmetic lowered in floats) nodes or constants.

func init() {
	graph.Register("MaxPool", 1, lowerMaxPool)
	graph.Register("AveragePool", 1, lowerAveragePool)
	graph.Register("GlobalAveragePool", 1, lowerGlobalPool)
	graph.Register("GlobalMaxPool", 1, lowerGlobalPool)
	graph.Register("MaxUnpool", 9, lowerMaxUnpool)
}

// poolParams reads the window attributes shared by the pooling ops.
func poolParams(n *onnxpb.NodeProto) (kernels.PoolParams, error) {
	var p kernels.PoolParams
	for _, a := range []struct {
		name string
		dst  *[]int
	}{{"kernel_shape", &p.Kernel}, {"strides", &p.Strides}, {"pads", &p.Pads}, {"dilations", &p.Dilations}} {
		v, err := graph.AttrInts(n, a.name, nil)
		if err != nil {
			return p, err
		}
		*a.dst = graph.Ints(v)
	}
	if p.Kernel == nil {
		return p, graph.NodeErr(n, "attribute kernel_shape is required")
	}
	c, err := graph.AttrInt(n, "ceil_mode", 0)
	if err != nil {
		return p, err
	}
	p.CeilMode = c != 0
	ci, err := graph.AttrInt(n, "count_include_pad", 0)
	if err != nil {
		return p, err
	}
	p.CountIncludePad = ci != 0
	if p.AutoPad, err = graph.AttrString(n, "auto_pad", kernels.AutoPadNotSet); err != nil {
		return p, err
	}
	return p, nil
}

func lowerMaxPool(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	x, err := graph.Input(n, in, 0)
	if err != nil {
		return nil, err
	}
	p, err := poolParams(n)
	if err != nil {
		return nil, err
	}
	if so, err := graph.AttrInt(n, "storage_order", 0); err != nil {
		return nil, err
	} else if so != 0 {
		return nil, b.LimitErr(n, "storage_order=%d (column-major Indices)", so)
	}
	if err := poolRank(b, n, x); err != nil {
		return nil, err
	}
	y, idx, err := kernels.MaxPool(b.Node(x), p)
	if err != nil {
		return nil, graph.NodeErr(n, "%v", err)
	}
	return []*graph.Value{graph.NodeValue(y), graph.NodeValue(idx)}, nil
}

func lowerAveragePool(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	x, err := graph.Input(n, in, 0)
	if err != nil {
		return nil, err
	}
	p, err := poolParams(n)
	if err != nil {
		return nil, err
	}
	if err := poolRank(b, n, x); err != nil {
		return nil, err
	}
	y, err := kernels.AveragePool(b.Node(x), p)
	if err != nil {
		return nil, graph.NodeErr(n, "%v", err)
	}
	return []*graph.Value{graph.NodeValue(y)}, nil
}

func lowerGlobalPool(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	x, err := graph.Input(n, in, 0)
	if err != nil {
		return nil, err
	}
	f := kernels.GlobalAveragePool
	if n.GetOpType() == "GlobalMaxPool" {
		f = kernels.GlobalMaxPool
	}
	y, err := f(b.Node(x))
	if err != nil {
		return nil, graph.NodeErr(n, "%v", err)
	}
	return []*graph.Value{graph.NodeValue(y)}, nil
}

func lowerMaxUnpool(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	x, err := graph.Input(n, in, 0)
	if err != nil {
		return nil, err
	}
	iv, err := graph.Input(n, in, 1)
	if err != nil {
		return nil, err
	}
	p, err := poolParams(n)
	if err != nil {
		return nil, err
	}
	os, err := graph.OptConstInts(n, in, 2, "output_shape")
	if err != nil {
		return nil, err
	}
	var idx graph.Node
	if iv.IsConst() {
		idx = b.Node(iv)
	} else {
		idx = iv.N
	}
	if idx, err = kernels.AsIndices(idx); err != nil {
		return nil, graph.NodeErr(n, "%v", err)
	}
	y, err := kernels.MaxUnpool(b.Node(x), idx, p, graph.Ints(os))
	if err != nil {
		return nil, graph.NodeErr(n, "%v", err)
	}
	return []*graph.Value{graph.NodeValue(y)}, nil
}

// poolRank returns a *LimitError unless x is 3-D (NCL) or 4-D (NCHW):
// backend/internal/kernels pools one or two spatial dimensions.
func poolRank(b *graph.Builder, n *onnxpb.NodeProto, x *graph.Value) error {
	if r := len(x.Shape); r != 3 && r != 4 {
		return b.LimitErr(n, "%d-D input %v (only 1-D and 2-D pooling, NCL or NCHW)", r, x.Shape)
	}
	return nil
}
