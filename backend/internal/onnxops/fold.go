package onnxops

import (
	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Build-time evaluation: every node whose inputs are all constants is
// computed by importer.EvalNode when it can (graph.Build tries it first).
// The ops below exist only in that form: Shape and Size read the concrete
// shape of a run-time node, and so does EyeLike, whose value depends only
// on its input's shape; the others need constant inputs.

func init() {
	for _, op := range []string{"Shape", "Size"} {
		graph.Register(op, 1, lowerShapeOf)
	}
	for _, op := range []string{"Constant", "ConstantOfShape", "Range"} {
		graph.Register(op, 1, lowerFold)
	}
	graph.Register("EyeLike", 9, lowerEyeLike)
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

func lowerEyeLike(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	x, err := graph.Input(n, in, 0)
	if err != nil {
		return nil, err
	}
	k, err := graph.AttrInt(n, "k", 0)
	if err != nil {
		return nil, err
	}
	if len(x.Shape) != 2 {
		return nil, graph.NodeErr(n, "input %q of shape %v: expected 2-D (opset %d)", n.Input[0], x.Shape, b.Opset)
	}
	dt := int64(importer.Float32)
	if x.IsConst() {
		dt = int64(x.C.Type)
	}
	if dt, err = graph.AttrInt(n, "dtype", dt); err != nil {
		return nil, err
	}
	rows, cols := x.Shape[0], x.Shape[1]
	t := &importer.Tensor{Name: n.Output[0], Type: importer.DataType(dt), Shape: []int{rows, cols}}
	vals := make([]int64, rows*cols)
	for i := 0; i < rows; i++ {
		if j := i + int(k); j >= 0 && j < cols {
			vals[i*cols+j] = 1
		}
	}
	switch t.Type {
	case importer.Float32, importer.Float64, importer.Float16:
		t.Type, t.F64 = importer.Float64, make([]float64, len(vals))
		for i, v := range vals {
			t.F64[i] = float64(v)
		}
	default:
		t.I64 = vals
	}
	return []*graph.Value{graph.ConstValue(t)}, nil
}
