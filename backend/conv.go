package backend

import (
	"github.com/paretonav/paretonav/backend/internal/kernels"
	"github.com/paretonav/paretonav/backend/internal/rewrite"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Conv (opsets 1 and 11 share one signature): X, W, optional B; attributes
// auto_pad, dilations, group, kernel_shape (checked against W), pads,
// strides. 1-D and 2-D convolutions are supported (kernels.Conv).

func init() {
	register("Conv", 1, lowerConv)
}

func lowerConv(b *builder, n *onnxpb.NodeProto, in []*value) ([]*value, error) {
	x, w, bias, p, err := convOperands(b, n, in)
	if err != nil {
		return nil, err
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

// convOperands reads Conv node n's input X, filter W, bias (nil when
// omitted) and parameters.
func convOperands(b *builder, n *onnxpb.NodeProto, in []*value) (x, w *value, bias gnode, p kernels.ConvParams, err error) {
	if x, err = input(n, in, 0); err != nil {
		return
	}
	if w, err = input(n, in, 1); err != nil {
		return
	}
	var v []int64
	if v, err = attrInts(n, "strides", nil); err != nil {
		return
	}
	p.Strides = ints(v)
	if v, err = attrInts(n, "pads", nil); err != nil {
		return
	}
	p.Pads = ints(v)
	if v, err = attrInts(n, "dilations", nil); err != nil {
		return
	}
	p.Dilations = ints(v)
	g, err := attrInt(n, "group", 1)
	if err != nil {
		return
	}
	p.Group = int(g)
	if p.AutoPad, err = attrString(n, "auto_pad", kernels.AutoPadNotSet); err != nil {
		return
	}
	k, err := attrInts(n, "kernel_shape", nil)
	if err != nil {
		return
	}
	for i, kv := range k {
		if 2+i >= len(w.shape) || int(kv) != w.shape[2+i] {
			err = nodeErr(n, "kernel_shape %v does not match W of shape %v", k, w.shape)
			return
		}
	}
	if bv := optInput(in, 2); bv != nil {
		bias = b.node(bv)
	}
	return x, w, bias, p, nil
}

func init() { registerFused(rewrite.ConvConcat, lowerFusedConvConcat) }

// lowerFusedConvConcat lowers a fused ConvConcat (rewrite.ConvConcat: a
// Conv of a Concat's result) over the Concat's parts (kernels.ConvConcat),
// which is then not formed unless something else reads it, where the
// Concat is a kernel along the channels of 4-D values and the Conv is
// pointwise (kernels.PointwiseConv); as the Conv otherwise.
func lowerFusedConvConcat(b *builder, n *onnxpb.NodeProto, in []*value) ([]*value, error) {
	k := len(rewrite.Fallback(n).Input)
	x, parts := in[0], in[k:]
	if x == nil || len(x.shape) != 4 || !concatOfChannels(x, rewrite.AttrInt(n, rewrite.AttrConcatAxis, 0)) {
		return b.lowerFallback(n, in)
	}
	_, w, bias, p, err := convOperands(b, rewrite.Fallback(n), in[:k])
	if err != nil || !kernels.PointwiseConv(x.shape, w.shape, p) {
		return b.lowerFallback(n, in)
	}
	nodes := make([]gnode, len(parts))
	for i, v := range parts {
		if v == nil {
			return b.lowerFallback(n, in)
		}
		nodes[i] = b.node(v)
	}
	y, err := kernels.ConvConcat(nodes, b.node(w), bias, p)
	if err != nil {
		return nil, nodeErr(n, "%v", err)
	}
	return []*value{nodeValue(y)}, nil
}
