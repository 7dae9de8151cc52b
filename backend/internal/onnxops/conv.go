package onnxops

import (
	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/kernels"
	"github.com/paretonav/paretonav/backend/internal/rewrite"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Conv (opsets 1 and 11 share one signature): X, W, optional B; attributes
// auto_pad, dilations, group, kernel_shape (checked against W), pads,
// strides. 1-D and 2-D convolutions are supported (kernels.Conv).

func init() {
	graph.Register("Conv", 1, lowerConv)
}

func lowerConv(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	x, w, bias, p, err := convOperands(b, n, in)
	if err != nil {
		return nil, err
	}
	y, err := kernels.Conv(b.Node(x), b.Node(w), bias, p)
	if err != nil {
		return nil, graph.NodeErr(n, "%v", err)
	}
	b.WinoScratch = max(b.WinoScratch, kernels.WinogradScratchBytes(x.Shape, w.Shape, p))
	band, batch, cache := kernels.ColScratchBytes(x.Shape, w.Shape, p)
	b.ColBand, b.ColBatch, b.ColCache = max(b.ColBand, band), max(b.ColBatch, batch), b.ColCache+cache
	return []*graph.Value{graph.NodeValue(y)}, nil
}

// convOperands reads Conv node n's input X, filter W, bias (nil when
// omitted) and parameters.
func convOperands(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) (x, w *graph.Value, bias graph.Node, p kernels.ConvParams, err error) {
	if x, err = graph.Input(n, in, 0); err != nil {
		return
	}
	if w, err = graph.Input(n, in, 1); err != nil {
		return
	}
	var v []int64
	if v, err = graph.AttrInts(n, "strides", nil); err != nil {
		return
	}
	p.Strides = graph.Ints(v)
	if v, err = graph.AttrInts(n, "pads", nil); err != nil {
		return
	}
	p.Pads = graph.Ints(v)
	if v, err = graph.AttrInts(n, "dilations", nil); err != nil {
		return
	}
	p.Dilations = graph.Ints(v)
	g, err := graph.AttrInt(n, "group", 1)
	if err != nil {
		return
	}
	p.Group, p.WholeKernel = int(g), b.WholeConvKernels
	if p.AutoPad, err = graph.AttrString(n, "auto_pad", kernels.AutoPadNotSet); err != nil {
		return
	}
	k, err := graph.AttrInts(n, "kernel_shape", nil)
	if err != nil {
		return
	}
	for i, kv := range k {
		if 2+i >= len(w.Shape) || int(kv) != w.Shape[2+i] {
			err = graph.NodeErr(n, "kernel_shape %v does not match W of shape %v", k, w.Shape)
			return
		}
	}
	if bv := graph.OptInput(in, 2); bv != nil {
		bias = b.Node(bv)
	}
	return x, w, bias, p, nil
}

func init() { graph.RegisterFused(rewrite.ConvConcat, lowerFusedConvConcat) }

// lowerFusedConvConcat lowers a fused ConvConcat (rewrite.ConvConcat: a
// Conv of a Concat's result) over the Concat's parts (kernels.ConvConcat),
// which is then not formed unless something else reads it, where the
// Concat is a kernel along the channels of 4-D values and the Conv is
// pointwise (kernels.PointwiseConv); as the Conv otherwise.
func lowerFusedConvConcat(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	k := len(rewrite.Fallback(n).Input)
	x, parts := in[0], in[k:]
	if x == nil || len(x.Shape) != 4 || !concatOfChannels(x, rewrite.AttrInt(n, rewrite.AttrConcatAxis, 0)) {
		return b.LowerFallback(n, in)
	}
	_, w, bias, p, err := convOperands(b, rewrite.Fallback(n), in[:k])
	if err != nil || !kernels.PointwiseConv(x.Shape, w.Shape, p) {
		return b.LowerFallback(n, in)
	}
	nodes := make([]graph.Node, len(parts))
	for i, v := range parts {
		if v == nil {
			return b.LowerFallback(n, in)
		}
		nodes[i] = b.Node(v)
	}
	y, err := kernels.ConvConcat(nodes, b.Node(w), bias, p)
	if err != nil {
		return nil, graph.NodeErr(n, "%v", err)
	}
	return []*graph.Value{graph.NodeValue(y)}, nil
}
