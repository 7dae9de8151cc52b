package onnxops

import (
	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Build-time evaluation: every node whose inputs are all constants is
// computed by importer.EvalNode when it can (lowerGraph tries it first).
// The ops below exist only in that form: Shape and Size read the concrete
// shape of a run-time node; the others need constant inputs.

func init() {
	for _, op := range []string{"Shape", "Size"} {
		graph.Register(op, 1, lowerShapeOf)
	}
	for _, op := range []string{"Constant", "ConstantOfShape", "Range"} {
		graph.Register(op, 1, lowerFold)
	}
}

// lowerShapeOf evaluates Shape/Size from the input's concrete shape.
func lowerShapeOf(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	x, err := graph.Input(n, in, 0)
	if err != nil {
		return nil, err
	}
	t := x.C
	if t == nil {
		t = &importer.Tensor{Name: n.Input[0], Type: importer.Float32, Shape: append([]int{}, x.Shape...)}
	}
	return evalConst(b, n, []*importer.Tensor{t})
}

// lowerFold evaluates an op whose inputs must all be build-time constants.
func lowerFold(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	cin := make([]*importer.Tensor, len(in))
	for i, v := range in {
		if v == nil {
			continue
		}
		t, err := graph.ConstInput(n, in, i, "operand")
		if err != nil {
			return nil, err
		}
		cin[i] = t
	}
	return evalConst(b, n, cin)
}

func evalConst(b *graph.Builder, n *onnxpb.NodeProto, cin []*importer.Tensor) ([]*graph.Value, error) {
	ts, err := importer.EvalNode(n, b.Opset, cin)
	if err != nil {
		return nil, err
	}
	out := make([]*graph.Value, len(ts))
	for i, t := range ts {
		out[i] = graph.ConstValue(t)
	}
	return out, nil
}
