package onnxops

import (
	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/kernels"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// BatchNormalization (opsets 1, 6, 7, 9, 14, 15): X, scale, B, mean, var.
// Inference mode uses the running statistics; training mode (the builder's
// bnTrain option, or training_mode = 1 from opset 14) uses the batch
// statistics and differentiates through them. Only Y is produced: the
// running-statistics outputs of training mode are not computed, and the
// running statistics are never updated inside the graph. spatial = 0
// (opsets < 9) is not supported.

func init() {
	graph.Register("BatchNormalization", 1, lowerBatchNorm)
}

func lowerBatchNorm(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	var vs [5]*graph.Value
	for i := range vs {
		v, err := graph.Input(n, in, i)
		if err != nil {
			return nil, err
		}
		vs[i] = v
	}
	// ONNX's default ε is applied here; kernels.BatchNorm takes ε as given.
	eps, err := graph.AttrFloat(n, "epsilon", 1e-5)
	if err != nil {
		return nil, err
	}
	if sp, err := graph.AttrInt(n, "spatial", 1); err != nil {
		return nil, err
	} else if sp != 1 {
		return nil, graph.NodeErr(n, "spatial = %d is not supported, expected 1", sp)
	}
	tm, err := graph.AttrInt(n, "training_mode", 0)
	if err != nil {
		return nil, err
	}
	p := kernels.BatchNormParams{Epsilon: eps, Training: b.BNTrain || tm != 0}
	y, err := kernels.BatchNorm(b.Node(vs[0]), b.Node(vs[1]), b.Node(vs[2]), b.Node(vs[3]), b.Node(vs[4]), p)
	if err != nil {
		return nil, graph.NodeErr(n, "%v", err)
	}
	return []*graph.Value{graph.NodeValue(y)}, nil
}
