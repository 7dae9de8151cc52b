// Package onnxtest builds small ONNX models for the tests of backend and
// its packages: nodes, attributes, initializers and inputs, a model of one
// node or of a list of nodes, and compares results.
package onnxtest

import (
	"math"
	"math/rand"
	"testing"

	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// In is one input of a test node: a graph input fed at run time, or an
// initializer (Init true).
type In struct {
	Name string
	T    *importer.Tensor
	Init bool
}

// Feed returns a graph input of the given shape and values.
func Feed(name string, shape []int, data ...float64) In {
	return In{Name: name, T: &importer.Tensor{Name: name, Type: importer.Float64, Shape: shape, F64: data}}
}

// InitF returns a float64 initializer.
func InitF(name string, shape []int, data ...float64) In {
	t := Feed(name, shape, data...)
	t.Init = true
	return t
}

// InitI returns an int64 initializer (shapes, axes, ...).
func InitI(name string, shape []int, data ...int64) In {
	return In{Name: name, Init: true, T: &importer.Tensor{Name: name, Type: importer.Int64, Shape: shape, I64: data}}
}

// RandFeed returns a graph input with values uniform in [-1, 1) from a
// fixed seed.
func RandFeed(name string, seed int64, s ...int) In {
	r := rand.New(rand.NewSource(seed))
	d := make([]float64, shape.Numel(s))
	for i := range d {
		d[i] = 2*r.Float64() - 1
	}
	return Feed(name, s, d...)
}

// Absent marks an omitted optional input.
var Absent = In{}

// AInt is an int attribute.
func AInt(name string, v int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: &name, Type: onnxpb.AttributeProto_INT.Enum(), I: &v}
}

// AFloat is a float attribute.
func AFloat(name string, v float32) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: &name, Type: onnxpb.AttributeProto_FLOAT.Enum(), F: &v}
}

// AInts is an ints attribute.
func AInts(name string, v ...int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: &name, Type: onnxpb.AttributeProto_INTS.Enum(), Ints: v}
}

// AString is a string attribute.
func AString(name, v string) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: &name, Type: onnxpb.AttributeProto_STRING.Enum(), S: []byte(v)}
}

// TensorProto encodes t (float64, float32 or int64) as a TensorProto.
func TensorProto(t *importer.Tensor) *onnxpb.TensorProto {
	name := t.Name
	tp := &onnxpb.TensorProto{Name: &name, DataType: proto32(int32(t.Type))}
	for _, d := range t.Shape {
		tp.Dims = append(tp.Dims, int64(d))
	}
	switch {
	case t.F64 != nil:
		tp.DoubleData = t.F64
	case t.F32 != nil:
		tp.FloatData = t.F32
	default:
		tp.Int64Data = t.I64
	}
	return tp
}

func proto32(v int32) *int32 { return &v }

// OneNode builds a model holding a single node of opType at opset, with
// the given inputs (graph inputs or initializers) and outputs.
func OneNode(opType string, opset int64, attrs []*onnxpb.AttributeProto, ins []In, outs ...string) *importer.Model {
	name := "n0"
	node := &onnxpb.NodeProto{Name: &name, OpType: &opType, Attribute: attrs}
	g := &onnxpb.GraphProto{}
	for _, in := range ins {
		node.Input = append(node.Input, in.Name)
		if in.Name == "" {
			continue
		}
		if in.Init {
			g.Initializer = append(g.Initializer, TensorProto(in.T))
			continue
		}
		nm := in.Name
		et := int32(importer.Float64)
		g.Input = append(g.Input, &onnxpb.ValueInfoProto{Name: &nm, Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: &onnxpb.TypeProto_Tensor{ElemType: &et}}}})
	}
	node.Output = outs
	for _, o := range outs {
		nm := o
		g.Output = append(g.Output, &onnxpb.ValueInfoProto{Name: &nm})
	}
	g.Node = []*onnxpb.NodeProto{node}
	dom := ""
	return &importer.Model{Proto: &onnxpb.ModelProto{Graph: g, OpsetImport: []*onnxpb.OperatorSetIdProto{{Domain: &dom, Version: &opset}}}}
}

// Feeds returns the graph inputs among ins by name.
func Feeds(ins []In) map[string]*importer.Tensor {
	out := map[string]*importer.Tensor{}
	for _, in := range ins {
		if in.Name != "" && !in.Init {
			out[in.Name] = in.T
		}
	}
	return out
}

// AssertClose fails unless got (shape and values) matches want within
// |got-want| <= tol·(1+|want|).
func AssertClose(t *testing.T, what string, got *importer.Tensor, wantShape []int, want []float64, tol float64) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s: no output", what)
	}
	if len(got.Shape) != len(wantShape) {
		t.Fatalf("%s: shape %v, want %v", what, got.Shape, wantShape)
	}
	for i := range wantShape {
		if got.Shape[i] != wantShape[i] {
			t.Fatalf("%s: shape %v, want %v", what, got.Shape, wantShape)
		}
	}
	g := got.Float64s()
	if len(g) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(g), len(want))
	}
	for i := range want {
		if math.Abs(g[i]-want[i]) > tol*(1+math.Abs(want[i])) {
			t.Fatalf("%s: value %d = %.10g, want %.10g (all: %v)", what, i, g[i], want[i], g)
		}
	}
}

// Node returns a NodeProto.
func Node(op, name string, ins, outs []string, attrs ...*onnxpb.AttributeProto) *onnxpb.NodeProto {
	return &onnxpb.NodeProto{OpType: &op, Name: &name, Input: ins, Output: outs, Attribute: attrs}
}

// GraphModel assembles a model at opset 13 from nodes, float32
// initializers and float32 inputs with the given shapes (-1: dynamic).
func GraphModel(nodes []*onnxpb.NodeProto, inits []*importer.Tensor, inputs map[string][]int64, outputs ...string) *importer.Model {
	g := &onnxpb.GraphProto{Node: nodes}
	for _, t := range inits {
		g.Initializer = append(g.Initializer, TensorProto(t))
	}
	for name, dims := range inputs {
		nm := name
		et := int32(importer.Float32)
		sh := &onnxpb.TensorShapeProto{}
		for _, d := range dims {
			if d < 0 {
				p := "N"
				sh.Dim = append(sh.Dim, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: p}})
			} else {
				sh.Dim = append(sh.Dim, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: d}})
			}
		}
		g.Input = append(g.Input, &onnxpb.ValueInfoProto{Name: &nm, Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: &onnxpb.TypeProto_Tensor{ElemType: &et, Shape: sh}}}})
	}
	for _, o := range outputs {
		nm := o
		g.Output = append(g.Output, &onnxpb.ValueInfoProto{Name: &nm})
	}
	dom, v := "", int64(13)
	return &importer.Model{Proto: &onnxpb.ModelProto{Graph: g, OpsetImport: []*onnxpb.OperatorSetIdProto{{Domain: &dom, Version: &v}}}}
}

// RandF32 is a float32 tensor of normal values (σ = 0.5) from r.
func RandF32(r *rand.Rand, name string, s ...int) *importer.Tensor {
	d := make([]float32, shape.Numel(s))
	for i := range d {
		d[i] = float32(r.NormFloat64() * 0.5)
	}
	return importer.NewFloat32(name, s, d)
}
