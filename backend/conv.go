package backend

import (
	"github.com/paretonav/paretonav/backend/internal/kernels"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Conv (opsets 1 and 11 share one signature): X, W, optional B; attributes
// auto_pad, dilations, group, kernel_shape (checked against W), pads,
// strides. 1-D and 2-D convolutions are supported (kernels.Conv).

func init() {
	register("Conv", 1, lowerConv)
}

// ints converts ONNX int64 attribute values to ints.
func ints(v []int64) []int {
	if v == nil {
		return nil
	}
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out
}

func lowerConv(b *builder, n *onnxpb.NodeProto, in []*value) ([]*value, error) {
	x, err := input(n, in, 0)
	if err != nil {
		return nil, err
	}
	w, err := input(n, in, 1)
	if err != nil {
		return nil, err
	}
	var p kernels.ConvParams
	var v []int64
	if v, err = attrInts(n, "strides", nil); err != nil {
		return nil, err
	}
	p.Strides = ints(v)
	if v, err = attrInts(n, "pads", nil); err != nil {
		return nil, err
	}
	p.Pads = ints(v)
	if v, err = attrInts(n, "dilations", nil); err != nil {
		return nil, err
	}
	p.Dilations = ints(v)
	g, err := attrInt(n, "group", 1)
	if err != nil {
		return nil, err
	}
	p.Group = int(g)
	if p.AutoPad, err = attrString(n, "auto_pad", kernels.AutoPadNotSet); err != nil {
		return nil, err
	}
	if k, err := attrInts(n, "kernel_shape", nil); err != nil {
		return nil, err
	} else if k != nil {
		for i, kv := range k {
			if 2+i >= len(w.shape) || int(kv) != w.shape[2+i] {
				return nil, nodeErr(n, "kernel_shape %v does not match W of shape %v", k, w.shape)
			}
		}
	}
	var bias gnode
	if bv := optInput(in, 2); bv != nil {
		bias = b.node(bv)
	}
	if parts := b.concatParts[x.n]; FuseConcatConv && parts != nil && kernels.PointwiseConv(x.shape, w.shape, p) {
		y, err := kernels.ConvConcat(parts, b.node(w), bias, p)
		if err != nil {
			return nil, nodeErr(n, "%v", err)
		}
		return []*value{nodeValue(y)}, nil
	}
	y, err := kernels.Conv(b.node(x), b.node(w), bias, p)
	if err != nil {
		return nil, nodeErr(n, "%v", err)
	}
	b.winoScratch = max(b.winoScratch, kernels.WinogradScratchBytes(x.shape, w.shape, p))
	band, batch, cache := kernels.ColScratchBytes(x.shape, w.shape, p)
	b.colBand, b.colBatch, b.colCache = max(b.colBand, band), max(b.colBatch, batch), b.colCache+cache
	return []*value{nodeValue(y)}, nil
}

// FuseConcatConv runs a pointwise Conv of a Concat along channels over the
// Concat's parts (kernels.ConvConcat), which is then not formed unless
// something else reads it; tests turn it off to compare.
var FuseConcatConv = true
