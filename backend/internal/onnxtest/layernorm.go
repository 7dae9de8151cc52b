package onnxtest

import (
	"math/rand"

	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// LayerNormConstants returns Constant nodes of the constants the
// LayerNorm patterns read: ε (1e-5), the exponents 2 and 4.
func LayerNormConstants() []*onnxpb.NodeProto {
	var out []*onnxpb.NodeProto
	for _, c := range []*importer.Tensor{
		importer.NewFloat32("ln_eps", nil, []float32{1e-5}),
		importer.NewFloat32("ln_two", nil, []float32{2}),
		importer.NewFloat32("ln_four", nil, []float32{4}),
	} {
		name := "value"
		out = append(out, Node("Constant", "c_"+c.Name, nil, []string{c.Name},
			&onnxpb.AttributeProto{Name: &name, Type: onnxpb.AttributeProto_TENSOR.Enum(), T: TensorProto(c)}))
	}
	return out
}

// LayerNormNodes returns the nodes computing h = LayerNorm(h0) with scale
// lnw and shift lnb as PyTorch's exporters write it before opset 17
// (ReduceMean, Sub, Pow, ReduceMean, Add ε, Sqrt, Div, Mul, Add), over the
// last axis, in one of several variants: "torch" (as exported),
// "swapped" (every commutative op's operands the other way round),
// "two-axes" (over the last two axes), "pow4" (a fourth power: not
// LayerNorm), "d-read-twice" (the deviation also read elsewhere, into h2).
func LayerNormNodes(variant string) []*onnxpb.NodeProto {
	axes := []int64{-1}
	if variant == "two-axes" {
		axes = []int64{-2, -1}
	}
	two := "ln_two"
	if variant == "pow4" {
		two = "ln_four"
	}
	n := []*onnxpb.NodeProto{
		Node("ReduceMean", "ln_m1", []string{"h0"}, []string{"ln_mu"}, AInts("axes", axes...)),
		Node("Sub", "ln_sub", []string{"h0", "ln_mu"}, []string{"ln_d"}),
		Node("Pow", "ln_pow", []string{"ln_d", two}, []string{"ln_d2"}),
		Node("ReduceMean", "ln_m2", []string{"ln_d2"}, []string{"ln_v"}, AInts("axes", axes...)),
		Node("Add", "ln_ae", []string{"ln_v", "ln_eps"}, []string{"ln_ve"}),
		Node("Sqrt", "ln_sq", []string{"ln_ve"}, []string{"ln_sd"}),
		Node("Div", "ln_div", []string{"ln_d", "ln_sd"}, []string{"ln_n"}),
		Node("Mul", "ln_mul", []string{"ln_n", "lnw"}, []string{"ln_nw"}),
		Node("Add", "ln_add", []string{"ln_nw", "lnb"}, []string{"h"}),
	}
	switch variant {
	case "swapped":
		for _, i := range []int{4, 7, 8} {
			n[i].Input[0], n[i].Input[1] = n[i].Input[1], n[i].Input[0]
		}
	case "d-read-twice":
		n = append(n, Node("Add", "ln_extra", []string{"h", "ln_d"}, []string{"h2"}))
	}
	return n
}

// LayerNormOnly is the LayerNorm pattern of variant alone: x [3, 5, 6]
// (its copy h0) normalised into h (h2 for "d-read-twice"), lnw and lnb
// initializers of the normalised shape.
func LayerNormOnly(variant string) *importer.Model {
	r := rand.New(rand.NewSource(4))
	s := []int{6}
	if variant == "two-axes" {
		s = []int{5, 6}
	}
	nodes := append(LayerNormConstants(), Node("Identity", "id", []string{"x"}, []string{"h0"}))
	nodes = append(nodes, LayerNormNodes(variant)...)
	out := "h"
	if variant == "d-read-twice" {
		out = "h2"
	}
	w := RandF32(r, "lnw", s...)
	for i := range w.F32 {
		w.F32[i] += 1
	}
	return GraphModel(nodes, []*importer.Tensor{w, RandF32(r, "lnb", s...)}, map[string][]int64{"x": {3, 5, 6}}, out)
}

// LayerNormTwoHead is the two-head model of backend's tests with the
// LayerNorm pattern of variant after its first layer:
// x[N,4] → Gemm → LayerNorm → Tanh → {Gemm → LogSoftmax = logp, MatMul +
// bb = reg}.
func LayerNormTwoHead(variant string) *importer.Model {
	r := rand.New(rand.NewSource(5))
	nodes := append(LayerNormConstants(), Node("Gemm", "fc1", []string{"x", "W1", "b1"}, []string{"h0"}, AInt("transB", 1)))
	nodes = append(nodes, LayerNormNodes(variant)...)
	h := "h"
	if variant == "d-read-twice" {
		h = "h2"
	}
	nodes = append(nodes,
		Node("Tanh", "act", []string{h}, []string{"t"}),
		Node("Gemm", "fca", []string{"t", "Wa"}, []string{"za"}),
		Node("LogSoftmax", "lsm", []string{"za"}, []string{"logp"}, AInt("axis", 1)),
		Node("MatMul", "mm", []string{"t", "Wb"}, []string{"zb"}),
		Node("Add", "addb", []string{"zb", "bb"}, []string{"reg"}))
	w := RandF32(r, "lnw", 6)
	for i := range w.F32 {
		w.F32[i] += 1
	}
	inits := []*importer.Tensor{RandF32(r, "W1", 6, 4), RandF32(r, "b1", 6), w, RandF32(r, "lnb", 6),
		RandF32(r, "Wa", 6, 3), RandF32(r, "Wb", 6, 2), RandF32(r, "bb", 2)}
	return GraphModel(nodes, inits, map[string][]int64{"x": {-1, 4}}, "logp", "reg")
}
