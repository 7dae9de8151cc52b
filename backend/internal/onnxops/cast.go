package onnxops

import (
	"math"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/parallel"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
	"google.golang.org/protobuf/proto"
)

// Cast. Constants are converted at build time (importer.EvalNode); a
// run-time float tensor cast to a float type is the identity (every float
// node has the graph's element type). A run-time tensor cast to BOOL is a
// run-time bool (1 where it is non-zero, compare.go), and to an integer
// type its values truncated toward zero, as ONNX casts floats to integers;
// both carry no gradient and stay float nodes (a mask cast to int64 and
// summed, say), so they cannot serve as shapes or indices.
//
// CastLike (opset 15; 19 adds saturate, which only concerns float8
// targets): input 0 cast to the element type of input 1. The dynamo
// exporter writes it to give a scalar constant the type of the tensor it
// meets (CastLike(Constant, x) before Expand, BatchNormalization's
// epsilon and momentum). A constant input is converted at build time, to
// the target's type when the target is a constant too and to the graph's
// float type when it is a run-time tensor (every run-time tensor is a
// float of the graph's type); a run-time input meets a float target and
// passes through unchanged, its gradient too.

func init() {
	graph.Register("Cast", 1, lowerCast)
	graph.Register("CastLike", 15, lowerCastLike)
}

func lowerCast(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	x, err := graph.Input(n, in, 0)
	if err != nil {
		return nil, err
	}
	if x.IsConst() {
		return evalConst(b, n, []*importer.Tensor{x.C})
	}
	to, err := graph.AttrInt(n, "to", 0)
	if err != nil {
		return nil, err
	}
	switch importer.DataType(to) {
	case importer.Float32, importer.Float64, importer.Float16, onnxpb.TensorProto_BFLOAT16:
		return []*graph.Value{x}, nil
	case importer.Bool:
		if err := refuseIntNodes(n, x); err != nil {
			return nil, err
		}
		v, err := boolOf(b, n, x, func(v float64) bool { return v != 0 })
		if err != nil {
			return nil, err
		}
		return []*graph.Value{v}, nil
	}
	if graph.IsIntNode(x) && importer.DataType(to) == importer.Int64 {
		return []*graph.Value{x}, nil
	}
	if graph.IntegerType(importer.DataType(to)) && !graph.IsIntNode(x) {
		v, err := truncOf(b, n, x)
		if err != nil {
			return nil, err
		}
		return []*graph.Value{v}, nil
	}
	return nil, graph.NodeErr(n, "casting a run-time tensor to %v is not supported (only to floating-point types, BOOL and integer types)", importer.DataType(to))
}

// truncOf adds a node holding x's values truncated toward zero, without
// gradient (a run-time Cast to an integer type).
func truncOf(b *graph.Builder, n *onnxpb.NodeProto, x *graph.Value) (*graph.Value, error) {
	fwd := func(dst []float64, in [][]float64) {
		for i, v := range in[0] {
			dst[i] = math.Trunc(v)
		}
	}
	fwd32 := func(dst []float32, in [][]float32) {
		parallel.Elems(len(dst), func(lo, hi int) {
			for i, v := range in[0][lo:hi] {
				dst[lo+i] = float32(math.Trunc(float64(v)))
			}
		})
	}
	r, err := b.FillingKernel32(n.GetName(), n.GetOpType(), []graph.Node{b.Node(x)}, x.Shape, fwd, nil, nil, fwd32, nil)
	if err != nil {
		return nil, err
	}
	return graph.NodeValue(r), nil
}

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
