package onnxops

import (
	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Dropout in inference mode: the identity (the ratio, an attribute before
// opset 12 and an input from 12 on, is ignored; so is training_mode, which
// must not be true). The optional mask output is all ones.

func init() {
	graph.Register("Dropout", 1, lowerDropout)
	graph.Register("Dropout", 12, lowerDropout)
}

func lowerDropout(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	x, err := graph.Input(n, in, 0)
	if err != nil {
		return nil, err
	}
	if b.Opset >= 12 && graph.OptInput(in, 2) != nil {
		t, err := graph.ConstInput(n, in, 2, "training_mode")
		if err != nil {
			return nil, err
		}
		if v := t.Int64s(); len(v) == 1 && v[0] != 0 {
			return nil, graph.NodeErr(n, "training_mode is true; only inference-mode Dropout is supported")
		}
	}
	if len(n.Output) > 1 && n.Output[1] != "" {
		return nil, graph.NodeErr(n, "the mask output %q is not supported", n.Output[1])
	}
	return []*graph.Value{x}, nil
}
