package importer

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/importer/onnxpb"
)

func i64(shape []int, v ...int64) *Tensor   { return NewInt64("", shape, v) }
func f32(shape []int, v ...float32) *Tensor { return NewFloat32("", shape, v) }
func typed(t *Tensor, dt DataType) *Tensor  { t.Type = dt; return t }

var scalar = []int{}

// TestEvalNode checks EvalNode against hand-computed values.
func TestEvalNode(t *testing.T) {
	sp := &onnxpb.SparseTensorProto{
		Values:  mkInit(f32([]int{2}, 5, 7)),
		Indices: mkInit(i64([]int{2, 2}, 0, 1, 1, 2)),
		Dims:    []int64{2, 3},
	}
	x234 := f32([]int{2, 3, 4}, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23)
	cases := []struct {
		desc  string
		node  *onnxpb.NodeProto
		opset int64
		in    []*Tensor
		want  *Tensor
	}{
		{"Constant value", mkNode("Constant", nil, []string{"c"}, attrT("value", i64([]int{2}, 3, 4))), 13, nil, i64([]int{2}, 3, 4)},
		{"Constant value_float", mkNode("Constant", nil, []string{"c"}, &onnxpb.AttributeProto{Name: proto.String("value_float"), F: proto.Float32(2.5)}), 13, nil, f32(scalar, 2.5)},
		{"Constant value_floats", mkNode("Constant", nil, []string{"c"}, &onnxpb.AttributeProto{Name: proto.String("value_floats"), Floats: []float32{1, 2}}), 13, nil, f32([]int{2}, 1, 2)},
		{"Constant value_int", mkNode("Constant", nil, []string{"c"}, attrI("value_int", -3)), 13, nil, i64(scalar, -3)},
		{"Constant value_ints", mkNode("Constant", nil, []string{"c"}, attrInts("value_ints", 1, 2, 3)), 13, nil, i64([]int{3}, 1, 2, 3)},
		{"Constant sparse", mkNode("Constant", nil, []string{"c"}, &onnxpb.AttributeProto{Name: proto.String("sparse_value"), SparseTensor: sp}), 13, nil, f32([]int{2, 3}, 0, 5, 0, 0, 0, 7)},
		{"ConstantOfShape default", mkNode("ConstantOfShape", []string{"s"}, []string{"c"}), 13, []*Tensor{i64([]int{2}, 2, 1)}, f32([]int{2, 1}, 0, 0)},
		{"ConstantOfShape int", mkNode("ConstantOfShape", []string{"s"}, []string{"c"}, attrT("value", i64([]int{1}, 7))), 13, []*Tensor{i64([]int{1}, 3)}, i64([]int{3}, 7, 7, 7)},
		{"Shape", mkNode("Shape", []string{"x"}, []string{"s"}), 13, []*Tensor{{Shape: []int{5, 3, 2}}}, i64([]int{3}, 5, 3, 2)},
		{"Shape start end 15", mkNode("Shape", []string{"x"}, []string{"s"}, attrI("start", 1), attrI("end", -1)), 15, []*Tensor{{Shape: []int{5, 3, 2}}}, i64([]int{1}, 3)},
		{"Shape start ignored 13", mkNode("Shape", []string{"x"}, []string{"s"}, attrI("start", 1)), 13, []*Tensor{{Shape: []int{5, 3}}}, i64([]int{2}, 5, 3)},
		{"Size", mkNode("Size", []string{"x"}, []string{"s"}), 13, []*Tensor{{Shape: []int{5, 3}}}, i64(scalar, 15)},
		{"Gather scalar index", mkNode("Gather", []string{"d", "i"}, []string{"g"}), 13, []*Tensor{i64([]int{3}, 8, 9, 10), i64(scalar, 0)}, i64(scalar, 8)},
		{"Gather negative axis 1", mkNode("Gather", []string{"d", "i"}, []string{"g"}, attrI("axis", 1)), 13, []*Tensor{i64([]int{2, 3}, 1, 2, 3, 4, 5, 6), i64([]int{2}, -1, 0)}, i64([]int{2, 2}, 3, 1, 6, 4)},
		{"Unsqueeze attr 11", mkNode("Unsqueeze", []string{"x"}, []string{"u"}, attrInts("axes", 0)), 11, []*Tensor{i64(scalar, 4)}, i64([]int{1}, 4)},
		{"Unsqueeze input 13", mkNode("Unsqueeze", []string{"x", "a"}, []string{"u"}), 13, []*Tensor{i64([]int{2}, 4, 5), i64([]int{2}, 0, -1)}, i64([]int{1, 2, 1}, 4, 5)},
		{"Squeeze attr 11", mkNode("Squeeze", []string{"x"}, []string{"u"}, attrInts("axes", 0)), 11, []*Tensor{i64([]int{1, 2, 1}, 4, 5)}, i64([]int{2, 1}, 4, 5)},
		{"Squeeze all 13", mkNode("Squeeze", []string{"x"}, []string{"u"}), 13, []*Tensor{i64([]int{1, 2, 1}, 4, 5)}, i64([]int{2}, 4, 5)},
		{"Squeeze input 13", mkNode("Squeeze", []string{"x", "a"}, []string{"u"}), 13, []*Tensor{i64([]int{1, 2, 1}, 4, 5), i64([]int{1}, -1)}, i64([]int{1, 2}, 4, 5)},
		{"Concat", mkNode("Concat", []string{"a", "b"}, []string{"c"}, attrI("axis", 0)), 13, []*Tensor{i64([]int{1}, 2), i64([]int{1}, -1)}, i64([]int{2}, 2, -1)},
		{"Concat axis -1", mkNode("Concat", []string{"a", "b"}, []string{"c"}, attrI("axis", -1)), 13, []*Tensor{f32([]int{2, 1}, 1, 2), f32([]int{2, 2}, 3, 4, 5, 6)}, f32([]int{2, 3}, 1, 3, 4, 2, 5, 6)},
		{"Cast float to int", mkNode("Cast", []string{"x"}, []string{"c"}, attrI("to", int64(Int64))), 13, []*Tensor{f32([]int{3}, 1.7, -1.7, 3)}, i64([]int{3}, 1, -1, 3)},
		{"Cast int to uint8 wraps", mkNode("Cast", []string{"x"}, []string{"c"}, attrI("to", int64(Uint8))), 13, []*Tensor{i64([]int{2}, 256+5, -1)}, typed(i64([]int{2}, 5, 255), Uint8)},
		{"Cast to bool", mkNode("Cast", []string{"x"}, []string{"c"}, attrI("to", int64(Bool))), 13, []*Tensor{f32([]int{3}, 0, 0.5, -2)}, typed(i64([]int{3}, 0, 1, 1), Bool)},
		{"Cast to float16 rounds", mkNode("Cast", []string{"x"}, []string{"c"}, attrI("to", int64(Float16))), 13, []*Tensor{f32([]int{1}, 1+1.0/4096)}, typed(f32([]int{1}, 1), Float16)},
		{"Cast int to double", mkNode("Cast", []string{"x"}, []string{"c"}, attrI("to", int64(Float64))), 13, []*Tensor{i64([]int{1}, -3)}, &Tensor{Type: Float64, Shape: []int{1}, F64: []float64{-3}}},
		{"Slice attrs 9", mkNode("Slice", []string{"x"}, []string{"s"}, attrInts("starts", 1), attrInts("ends", 1000), attrInts("axes", 0)), 9, []*Tensor{i64([]int{4}, 1, 2, 3, 4)}, i64([]int{3}, 2, 3, 4)},
		{"Slice inputs 10", mkNode("Slice", []string{"x", "s", "e"}, []string{"s"}), 10, []*Tensor{i64([]int{4}, 1, 2, 3, 4), i64([]int{1}, -3), i64([]int{1}, -1)}, i64([]int{2}, 2, 3)},
		{"Slice step 2 axis 1", mkNode("Slice", []string{"x", "s", "e", "a", "st"}, []string{"s"}), 13, []*Tensor{x234, i64([]int{1}, 0), i64([]int{1}, math.MaxInt64), i64([]int{1}, -1), i64([]int{1}, 2)}, f32([]int{2, 3, 2}, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22)},
		{"Slice negative step", mkNode("Slice", []string{"x", "s", "e", "a", "st"}, []string{"s"}), 13, []*Tensor{i64([]int{5}, 0, 1, 2, 3, 4), i64([]int{1}, -1), i64([]int{1}, math.MinInt64), i64([]int{1}, 0), i64([]int{1}, -2)}, i64([]int{3}, 4, 2, 0)},
		{"Slice empty", mkNode("Slice", []string{"x", "s", "e"}, []string{"s"}), 13, []*Tensor{i64([]int{3}, 1, 2, 3), i64([]int{1}, 2), i64([]int{1}, 1)}, i64([]int{0})},
		{"Slice two axes", mkNode("Slice", []string{"x", "s", "e", "a"}, []string{"s"}), 13, []*Tensor{x234, i64([]int{2}, 1, 1), i64([]int{2}, 2, 3), i64([]int{2}, 0, 2)}, f32([]int{1, 3, 2}, 13, 14, 17, 18, 21, 22)},
		{"Reshape -1", mkNode("Reshape", []string{"x", "s"}, []string{"r"}), 13, []*Tensor{x234, i64([]int{2}, 2, -1)}, f32([]int{2, 12}, x234.F32...)},
		{"Reshape 0 copies", mkNode("Reshape", []string{"x", "s"}, []string{"r"}), 13, []*Tensor{x234, i64([]int{3}, 0, 0, -1)}, f32([]int{2, 3, 4}, x234.F32...)},
		{"Reshape allowzero", mkNode("Reshape", []string{"x", "s"}, []string{"r"}, attrI("allowzero", 1)), 14, []*Tensor{i64([]int{0, 2}), i64([]int{2}, 2, 0)}, i64([]int{2, 0})},
		{"Expand", mkNode("Expand", []string{"x", "s"}, []string{"r"}), 13, []*Tensor{i64([]int{2, 1}, 1, 2), i64([]int{2}, 2, 3)}, i64([]int{2, 3}, 1, 1, 1, 2, 2, 2)},
		{"Identity", mkNode("Identity", []string{"x"}, []string{"y"}), 13, []*Tensor{i64([]int{2}, 1, 2)}, i64([]int{2}, 1, 2)},
		{"Add broadcast", mkNode("Add", []string{"a", "b"}, []string{"c"}), 13, []*Tensor{i64([]int{2, 1}, 10, 20), i64([]int{3}, 1, 2, 3)}, i64([]int{2, 3}, 11, 12, 13, 21, 22, 23)},
		{"Sub float", mkNode("Sub", []string{"a", "b"}, []string{"c"}), 13, []*Tensor{f32([]int{2}, 1, 2), f32(scalar, 0.5)}, f32([]int{2}, 0.5, 1.5)},
		{"Mul", mkNode("Mul", []string{"a", "b"}, []string{"c"}), 13, []*Tensor{i64([]int{2}, 3, -4), i64([]int{1}, 5)}, i64([]int{2}, 15, -20)},
		{"Div int truncates", mkNode("Div", []string{"a", "b"}, []string{"c"}), 13, []*Tensor{i64([]int{2}, 7, -7), i64(scalar, 2)}, i64([]int{2}, 3, -3)},
		{"Div float", mkNode("Div", []string{"a", "b"}, []string{"c"}), 13, []*Tensor{f32([]int{1}, 1), f32([]int{1}, 4)}, f32([]int{1}, 0.25)},
		{"Range int", mkNode("Range", []string{"s", "l", "d"}, []string{"r"}), 13, []*Tensor{i64(scalar, 1), i64(scalar, 8), i64(scalar, 3)}, i64([]int{3}, 1, 4, 7)},
		{"Range negative", mkNode("Range", []string{"s", "l", "d"}, []string{"r"}), 13, []*Tensor{i64(scalar, 5), i64(scalar, 0), i64(scalar, -2)}, i64([]int{3}, 5, 3, 1)},
		{"Range float", mkNode("Range", []string{"s", "l", "d"}, []string{"r"}), 13, []*Tensor{f32(scalar, 0), f32(scalar, 1), f32(scalar, 0.25)}, f32([]int{4}, 0, 0.25, 0.5, 0.75)},
		{"Range empty", mkNode("Range", []string{"s", "l", "d"}, []string{"r"}), 13, []*Tensor{i64(scalar, 5), i64(scalar, 0), i64(scalar, 1)}, i64([]int{0})},
		{"Equal", mkNode("Equal", []string{"a", "b"}, []string{"e"}), 13, []*Tensor{i64([]int{3}, 1, 2, 3), i64(scalar, 2)}, typed(i64([]int{3}, 0, 1, 0), Bool)},
		{"Where", mkNode("Where", []string{"c", "x", "y"}, []string{"w"}), 13, []*Tensor{typed(i64([]int{3}, 1, 0, 1), Bool), i64([]int{3}, 1, 2, 3), i64(scalar, -1)}, i64([]int{3}, 1, -1, 3)},
	}
	for _, c := range cases {
		t.Run(c.desc, func(t *testing.T) {
			out, err := EvalNode(c.node, c.opset, c.in)
			if err != nil {
				t.Fatal(err)
			}
			if len(out) != 1 {
				t.Fatalf("%d outputs, want 1", len(out))
			}
			if out[0].Name != c.node.Output[0] {
				t.Errorf("name %q, want %q", out[0].Name, c.node.Output[0])
			}
			c.want.Name = out[0].Name
			if !sameBits(out[0], c.want) {
				t.Errorf("got %v %v %v %v, want %v %v %v %v", out[0].Type, out[0].Shape, out[0].F32, out[0].I64, c.want.Type, c.want.Shape, c.want.F32, c.want.I64)
			}
		})
	}
}

// TestEvalNodeErrors checks invalid inputs and unsupported ops.
func TestEvalNodeErrors(t *testing.T) {
	cases := []struct {
		desc        string
		node        *onnxpb.NodeProto
		in          []*Tensor
		want        string
		unsupported bool
	}{
		{"unknown op", mkNode("Conv", []string{"x"}, []string{"y"}), nil, "constant evaluation of Conv", true},
		{"other domain", &onnxpb.NodeProto{OpType: proto.String("Add"), Domain: proto.String("com.microsoft"), Output: []string{"y"}}, nil, `domain "com.microsoft"`, true},
		{"string constant", mkNode("Constant", nil, []string{"c"}, &onnxpb.AttributeProto{Name: proto.String("value_string"), S: []byte("a")}), nil, "value_string", true},
		{"cast to string", mkNode("Cast", []string{"x"}, []string{"c"}, attrI("to", int64(onnxpb.TensorProto_STRING))), []*Tensor{i64([]int{1}, 1)}, "cast to STRING", true},
		{"missing input", mkNode("Add", []string{"a", "b"}, []string{"c"}), []*Tensor{i64([]int{1}, 1)}, "input 1 is missing", false},
		{"type mismatch", mkNode("Add", []string{"a", "b"}, []string{"c"}), []*Tensor{i64([]int{1}, 1), f32([]int{1}, 1)}, "element types INT64 and FLOAT", false},
		{"no broadcast", mkNode("Mul", []string{"a", "b"}, []string{"c"}), []*Tensor{i64([]int{2}, 1, 2), i64([]int{3}, 1, 2, 3)}, "cannot be broadcast", false},
		{"div by zero", mkNode("Div", []string{"a", "b"}, []string{"c"}), []*Tensor{i64([]int{1}, 1), i64([]int{1}, 0)}, "division by zero", false},
		{"gather out of range", mkNode("Gather", []string{"d", "i"}, []string{"g"}), []*Tensor{i64([]int{2}, 1, 2), i64(scalar, 2)}, "index 2 out of range", false},
		{"squeeze non-1", mkNode("Squeeze", []string{"x", "a"}, []string{"s"}), []*Tensor{i64([]int{2}, 1, 2), i64([]int{1}, 0)}, "cannot squeeze axis 0 of size 2", false},
		{"reshape mismatch", mkNode("Reshape", []string{"x", "s"}, []string{"r"}), []*Tensor{i64([]int{3}, 1, 2, 3), i64([]int{1}, 2)}, "reshape [3] (3 elements) to [2]", false},
		{"huge ConstantOfShape", mkNode("ConstantOfShape", []string{"s"}, []string{"c"}), []*Tensor{i64([]int{2}, 1<<30, 1<<30)}, "exceeds", false},
		{"huge Range", mkNode("Range", []string{"s", "l", "d"}, []string{"r"}), []*Tensor{i64(scalar, 0), i64(scalar, math.MaxInt64), i64(scalar, 1)}, "exceeds", false},
		{"slice step 0", mkNode("Slice", []string{"x", "s", "e", "a", "st"}, []string{"s"}), []*Tensor{i64([]int{2}, 1, 2), i64([]int{1}, 0), i64([]int{1}, 1), i64([]int{1}, 0), i64([]int{1}, 0)}, "step 0", false},
		{"short data", mkNode("Identity", []string{"x"}, []string{"y"}), []*Tensor{{Type: Int64, Shape: []int{3}, I64: []int64{1}}}, "has 1 values, shape [3] needs 3", false},
		{"shape-only data", mkNode("Add", []string{"a", "b"}, []string{"c"}), []*Tensor{{Type: Float32, Shape: []int{2}}, f32([]int{1}, 1)}, "needs float32 values", false},
	}
	for _, c := range cases {
		t.Run(c.desc, func(t *testing.T) {
			_, err := EvalNode(c.node, 13, c.in)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
			if errors.Is(err, ErrUnsupported) != c.unsupported {
				t.Errorf("errors.Is(err, ErrUnsupported) = %v, want %v", !c.unsupported, c.unsupported)
			}
			if !strings.Contains(err.Error(), c.node.GetOpType()) {
				t.Errorf("err %v does not name the op", err)
			}
		})
	}
}

func TestShapeOf(t *testing.T) {
	s := []int{8, 3, 32, 32}
	for _, c := range []struct {
		start, end int
		want       []int64
	}{
		{0, math.MaxInt, []int64{8, 3, 32, 32}},
		{1, 4, []int64{3, 32, 32}},
		{-2, math.MaxInt, []int64{32, 32}},
		{0, -1, []int64{8, 3, 32}},
		{-10, 10, []int64{8, 3, 32, 32}},
		{3, 1, []int64{}},
	} {
		got := ShapeOf(s, c.start, c.end)
		if got.Type != Int64 || len(got.Shape) != 1 || fmt.Sprint(got.I64) != fmt.Sprint(c.want) {
			t.Errorf("ShapeOf(%v, %d, %d) = %v %v, want %v", s, c.start, c.end, got.Shape, got.I64, c.want)
		}
	}
}
