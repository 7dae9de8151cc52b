package backend

import (
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
	register("BatchNormalization", 1, lowerBatchNorm)
}

func lowerBatchNorm(b *builder, n *onnxpb.NodeProto, in []*value) ([]*value, error) {
	var vs [5]*value
	for i := range vs {
		v, err := input(n, in, i)
		if err != nil {
			return nil, err
		}
		vs[i] = v
	}
	// ONNX's default ε is applied here; kernels.BatchNorm takes ε as given.
	eps, err := attrFloat(n, "epsilon", 1e-5)
	if err != nil {
		return nil, err
	}
	if sp, err := attrInt(n, "spatial", 1); err != nil {
		return nil, err
	} else if sp != 1 {
		return nil, nodeErr(n, "spatial = %d is not supported, expected 1", sp)
	}
	tm, err := attrInt(n, "training_mode", 0)
	if err != nil {
		return nil, err
	}
	p := kernels.BatchNormParams{Epsilon: eps, Training: b.bnTrain || tm != 0}
	y, err := kernels.BatchNorm(b.node(vs[0]), b.node(vs[1]), b.node(vs[2]), b.node(vs[3]), b.node(vs[4]), p)
	if err != nil {
		return nil, nodeErr(n, "%v", err)
	}
	return []*value{nodeValue(y)}, nil
}
