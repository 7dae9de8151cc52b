package onnxtest

import (
	"math"
	"math/rand"

	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// GeluConstants returns Constant nodes of the constants the GELU patterns
// read (as PyTorch exports them: float initializers would be trainable).
func GeluConstants() []*onnxpb.NodeProto {
	var out []*onnxpb.NodeProto
	for _, c := range []*importer.Tensor{
		importer.NewFloat32("sqrt2", nil, []float32{float32(math.Sqrt2)}),
		importer.NewFloat32("isqrt2", []int{1}, []float32{float32(1 / math.Sqrt2)}),
		importer.NewFloat32("sqrt2ish", nil, []float32{1.41}),
		importer.NewFloat32("one", nil, []float32{1}),
		importer.NewFloat32("half", nil, []float32{0.5}),
		importer.NewFloat32("zero1", nil, []float32{0}),
	} {
		name := "value"
		out = append(out, Node("Constant", "c_"+c.Name, nil, []string{c.Name},
			&onnxpb.AttributeProto{Name: &name, Type: onnxpb.AttributeProto_TENSOR.Enum(), T: TensorProto(c)}))
	}
	return out
}

// GeluNodes returns the nodes computing h = GELU(h0) as PyTorch's
// exporters write it, in one of several groupings.
func GeluNodes(variant string) []*onnxpb.NodeProto {
	switch variant {
	case "torch": // x/√2 → erf → +1 → x·() → ·0.5
		return []*onnxpb.NodeProto{
			Node("Div", "div", []string{"h0", "sqrt2"}, []string{"d"}),
			Node("Erf", "erf", []string{"d"}, []string{"e"}),
			Node("Add", "add", []string{"e", "one"}, []string{"a"}),
			Node("Mul", "mul1", []string{"h0", "a"}, []string{"m1"}),
			Node("Mul", "mul2", []string{"m1", "half"}, []string{"h"}),
		}
	case "half-first": // 0.5·x·(1 + erf(x·(1/√2)))
		return []*onnxpb.NodeProto{
			Node("Mul", "div", []string{"isqrt2", "h0"}, []string{"d"}),
			Node("Erf", "erf", []string{"d"}, []string{"e"}),
			Node("Add", "add", []string{"one", "e"}, []string{"a"}),
			Node("Mul", "mul1", []string{"half", "h0"}, []string{"m1"}),
			Node("Mul", "mul2", []string{"a", "m1"}, []string{"h"}),
		}
	case "x-last": // x·((1 + erf(x/√2))·0.5)
		return []*onnxpb.NodeProto{
			Node("Div", "div", []string{"h0", "sqrt2"}, []string{"d"}),
			Node("Erf", "erf", []string{"d"}, []string{"e"}),
			Node("Add", "add", []string{"e", "one"}, []string{"a"}),
			Node("Mul", "mul1", []string{"a", "half"}, []string{"m1"}),
			Node("Mul", "mul2", []string{"h0", "m1"}, []string{"h"}),
		}
	case "wrong-constant": // x/1.41: not GELU to float32 precision
		n := GeluNodes("torch")
		n[0].Input[1] = "sqrt2ish"
		return n
	case "erf-read-twice": // the Erf's output also feeds the regression head
		return append(GeluNodes("torch"), Node("Add", "extra", []string{"e", "zero1"}, []string{"e2"}))
	}
	panic(variant)
}

// GeluTwoHead is the two-head model of backend's tests with GELU in place
// of its Relu:
// x[N,4] → Gemm → GELU → {Gemm → LogSoftmax = logp, MatMul + bb = reg}.
func GeluTwoHead(variant string) *importer.Model {
	r := rand.New(rand.NewSource(3))
	nodes := []*onnxpb.NodeProto{Node("Gemm", "fc1", []string{"x", "W1", "b1"}, []string{"h0"}, AInt("transB", 1))}
	nodes = append(nodes, GeluNodes(variant)...)
	reg := "zb"
	nodes = append(nodes,
		Node("Gemm", "fca", []string{"h", "Wa"}, []string{"za"}),
		Node("LogSoftmax", "lsm", []string{"za"}, []string{"logp"}, AInt("axis", 1)),
		Node("MatMul", "mm", []string{"h", "Wb"}, []string{"zb"}))
	if variant == "erf-read-twice" {
		nodes = append(nodes, Node("MatMul", "mm2", []string{"e2", "Wb"}, []string{"zb2"}),
			Node("Add", "sum", []string{"zb", "zb2"}, []string{"zb3"}))
		reg = "zb3"
	}
	nodes = append(nodes, Node("Add", "addb", []string{reg, "bb"}, []string{"reg"}))
	w1 := RandF32(r, "W1", 6, 4)
	for i := range w1.F32 {
		w1.F32[i] *= 6 // pre-activations over [−8, 8]: every interval of Φ's approximations
	}
	inits := []*importer.Tensor{w1, RandF32(r, "b1", 6), RandF32(r, "Wa", 6, 3), RandF32(r, "Wb", 6, 2), RandF32(r, "bb", 2)}
	nodes = append(GeluConstants(), nodes...)
	return GraphModel(nodes, inits, map[string][]int64{"x": {-1, 4}}, "logp", "reg")
}

// GeluOnly is the GELU pattern of variant alone, reading input x and
// writing h.
func GeluOnly(variant string) *importer.Model {
	nodes := []*onnxpb.NodeProto{Node("Identity", "id", []string{"x"}, []string{"h0"})}
	nodes = append(nodes, GeluNodes(variant)...)
	nodes = append(GeluConstants(), nodes...)
	var inits []*importer.Tensor
	return GraphModel(nodes, inits, map[string][]int64{"x": {3, 4}}, "h")
}
