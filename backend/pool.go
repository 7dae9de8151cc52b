package backend

import (
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
	register("MaxPool", 1, lowerMaxPool)
	register("AveragePool", 1, lowerAveragePool)
	register("GlobalAveragePool", 1, lowerGlobalPool)
	register("GlobalMaxPool", 1, lowerGlobalPool)
	register("MaxUnpool", 9, lowerMaxUnpool)
}

// poolParams reads the window attributes shared by the pooling ops.
func poolParams(n *onnxpb.NodeProto) (kernels.PoolParams, error) {
	var p kernels.PoolParams
	for _, a := range []struct {
		name string
		dst  *[]int
	}{{"kernel_shape", &p.Kernel}, {"strides", &p.Strides}, {"pads", &p.Pads}, {"dilations", &p.Dilations}} {
		v, err := attrInts(n, a.name, nil)
		if err != nil {
			return p, err
		}
		*a.dst = ints(v)
	}
	if p.Kernel == nil {
		return p, nodeErr(n, "attribute kernel_shape is required")
	}
	c, err := attrInt(n, "ceil_mode", 0)
	if err != nil {
		return p, err
	}
	p.CeilMode = c != 0
	ci, err := attrInt(n, "count_include_pad", 0)
	if err != nil {
		return p, err
	}
	p.CountIncludePad = ci != 0
	if p.AutoPad, err = attrString(n, "auto_pad", kernels.AutoPadNotSet); err != nil {
		return p, err
	}
	return p, nil
}

func lowerMaxPool(b *builder, n *onnxpb.NodeProto, in []*value) ([]*value, error) {
	x, err := input(n, in, 0)
	if err != nil {
		return nil, err
	}
	p, err := poolParams(n)
	if err != nil {
		return nil, err
	}
	if so, err := attrInt(n, "storage_order", 0); err != nil {
		return nil, err
	} else if so != 0 {
		return nil, b.limitErr(n, "storage_order=%d (column-major Indices)", so)
	}
	if err := poolRank(b, n, x); err != nil {
		return nil, err
	}
	y, idx, err := kernels.MaxPool(b.node(x), p)
	if err != nil {
		return nil, nodeErr(n, "%v", err)
	}
	return []*value{nodeValue(y), nodeValue(idx)}, nil
}

func lowerAveragePool(b *builder, n *onnxpb.NodeProto, in []*value) ([]*value, error) {
	x, err := input(n, in, 0)
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
	y, err := kernels.AveragePool(b.node(x), p)
	if err != nil {
		return nil, nodeErr(n, "%v", err)
	}
	return []*value{nodeValue(y)}, nil
}

func lowerGlobalPool(b *builder, n *onnxpb.NodeProto, in []*value) ([]*value, error) {
	x, err := input(n, in, 0)
	if err != nil {
		return nil, err
	}
	f := kernels.GlobalAveragePool
	if n.GetOpType() == "GlobalMaxPool" {
		f = kernels.GlobalMaxPool
	}
	y, err := f(b.node(x))
	if err != nil {
		return nil, nodeErr(n, "%v", err)
	}
	return []*value{nodeValue(y)}, nil
}

func lowerMaxUnpool(b *builder, n *onnxpb.NodeProto, in []*value) ([]*value, error) {
	x, err := input(n, in, 0)
	if err != nil {
		return nil, err
	}
	iv, err := input(n, in, 1)
	if err != nil {
		return nil, err
	}
	p, err := poolParams(n)
	if err != nil {
		return nil, err
	}
	os, err := optConstInts(n, in, 2, "output_shape")
	if err != nil {
		return nil, err
	}
	var idx gnode
	if iv.isConst() {
		idx = b.node(iv)
	} else {
		idx = iv.n
	}
	if idx, err = kernels.AsIndices(idx); err != nil {
		return nil, nodeErr(n, "%v", err)
	}
	y, err := kernels.MaxUnpool(b.node(x), idx, p, ints(os))
	if err != nil {
		return nil, nodeErr(n, "%v", err)
	}
	return []*value{nodeValue(y)}, nil
}

// poolRank returns a *LimitError unless x is 3-D (NCL) or 4-D (NCHW):
// backend/internal/kernels pools one or two spatial dimensions.
func poolRank(b *builder, n *onnxpb.NodeProto, x *value) error {
	if r := len(x.shape); r != 3 && r != 4 {
		return b.limitErr(n, "%d-D input %v (only 1-D and 2-D pooling, NCL or NCHW)", r, x.shape)
	}
	return nil
}
