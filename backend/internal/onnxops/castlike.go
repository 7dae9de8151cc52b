package onnxops

import (
	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// CastLike (opset 15; 19 adds saturate, which only concerns float8
// targets): input 0 cast to the element type of input 1. The dynamo
// exporter writes it to give a scalar constant the type of the tensor it
// meets (CastLike(Constant, x) before Expand, BatchNormalization's
// epsilon and momentum). A constant input is converted at build time, to
// the target's type when the target is a constant too and to the graph's
// float type when it is a run-time tensor (every run-time tensor is a
// float of the graph's type); a run-time input meets a float target and
// passes through unchanged, its gradient too.

func init() { graph.Register("CastLike", 15, lowerCastLike) }

func lowerCastLike(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	x, err := graph.Input(n, in, 0)
	if err != nil {
		return nil, err
	}
	like, err := graph.Input(n, in, 1)
	if err != nil {
		return nil, err
	}
	to := importer.Float32
	if like.IsConst() {
		to = like.C.Type
	}
	if !x.IsConst() {
		switch to {
		case importer.Float32, importer.Float64, importer.Float16, onnxpb.TensorProto_BFLOAT16:
			return []*graph.Value{x}, nil
		}
		return nil, graph.NodeErr(n, "casting a run-time tensor like a %v constant is not supported (only to floating-point types)", to)
	}
	cast := &onnxpb.NodeProto{
		Name:      proto.String(n.GetName()),
		OpType:    proto.String("Cast"),
		Input:     n.Input[:1],
		Output:    n.Output,
		Attribute: []*onnxpb.AttributeProto{{Name: proto.String("to"), Type: onnxpb.AttributeProto_INT.Enum(), I: proto.Int64(int64(to))}},
	}
	return evalConst(b, cast, []*importer.Tensor{x.C})
}
