package onnxops

import (
	"math"
	"math/rand"
	"testing"

	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

func TestActivationForward(t *testing.T) {
	x := []float64{-2, -0.5, 0, 0.5, 3}
	sig := func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }
	cases := []struct {
		op    string
		attrs []float64 // alpha for LeakyRelu
		want  []float64
	}{
		{"Relu", nil, []float64{0, 0, 0, 0.5, 3}},
		{"LeakyRelu", []float64{0.1}, []float64{-0.2, -0.05, 0, 0.5, 3}},
		{"Sigmoid", nil, []float64{sig(-2), sig(-0.5), 0.5, sig(0.5), sig(3)}},
		{"Tanh", nil, []float64{math.Tanh(-2), math.Tanh(-0.5), 0, math.Tanh(0.5), math.Tanh(3)}},
	}
	for _, c := range cases {
		t.Run(c.op, func(t *testing.T) {
			ins := []onnxtest.In{onnxtest.Feed("x", []int{5}, x...)}
			m := onnxtest.OneNode(c.op, 13, nil, ins, "y")
			if c.attrs != nil {
				m.Proto.Graph.Node[0].Attribute = append(m.Proto.Graph.Node[0].Attribute, onnxtest.AFloat("alpha", float32(c.attrs[0])))
			}
			got := forward(t, m, onnxtest.Feeds(ins))["y"]
			onnxtest.AssertClose(t, c.op, got, []int{5}, c.want, 1e-7)
		})
	}
}

func TestActivationGradient(t *testing.T) {
	for _, op := range []string{"Relu", "LeakyRelu", "Sigmoid", "Tanh"} {
		t.Run(op, func(t *testing.T) {
			// values away from the kinks of Relu and LeakyRelu
			ins := []onnxtest.In{onnxtest.Feed("x", []int{2, 3}, -1.5, -0.3, 0.2, 0.7, 1.1, -2.2)}
			m := onnxtest.OneNode(op, 13, nil, ins, "y")
			gradCheck(t, m, onnxtest.Feeds(ins), "x", 1e-6)
		})
	}
}

// Forward values (hand-computed from the ONNX definitions) and finite
// difference gradients of the other element-wise activations (Elu to
// Shrink) and math functions (mathunary.go). The ONNX node-test corpus
// checks most of them again (backend's TestNodeConformance).

func TestExtraUnaryForward(t *testing.T) {
	x := []float64{-2, -0.5, 0, 0.5, 2.5}
	apply := func(f func(float64) float64) []float64 {
		out := make([]float64, len(x))
		for i, v := range x {
			out[i] = f(v)
		}
		return out
	}
	const selA, selG = 1.67326319217681884765625, 1.05070102214813232421875
	cases := []struct {
		op    string
		opset int64
		attrs []*onnxpb.AttributeProto
		want  []float64
	}{
		{"Elu", 6, []*onnxpb.AttributeProto{onnxtest.AFloat("alpha", 2)}, []float64{2 * (math.Exp(-2) - 1), 2 * (math.Exp(-0.5) - 1), 0, 0.5, 2.5}},
		{"Selu", 6, nil, []float64{selG * selA * (math.Exp(-2) - 1), selG * selA * (math.Exp(-0.5) - 1), 0, selG * 0.5, selG * 2.5}},
		{"Softplus", 1, nil, apply(func(v float64) float64 { return math.Log(1 + math.Exp(v)) })},
		{"Softsign", 1, nil, []float64{-2.0 / 3, -0.5 / 1.5, 0, 0.5 / 1.5, 2.5 / 3.5}},
		{"ThresholdedRelu", 10, []*onnxpb.AttributeProto{onnxtest.AFloat("alpha", 0.5)}, []float64{0, 0, 0, 0, 2.5}},
		{"Shrink", 9, []*onnxpb.AttributeProto{onnxtest.AFloat("lambd", 1), onnxtest.AFloat("bias", 0.25)}, []float64{-1.75, 0, 0, 0, 2.25}},
		{"Reciprocal", 6, nil, []float64{-0.5, -2, math.Inf(1), 2, 0.4}},
		{"Floor", 6, nil, []float64{-2, -1, 0, 0, 2}},
		{"Ceil", 6, nil, []float64{-2, -0, 0, 1, 3}},
		{"Round", 11, nil, []float64{-2, -0, 0, 0, 2}}, // ties to even
		{"Sign", 9, nil, []float64{-1, -1, 0, 1, 1}},
		{"Sinh", 9, nil, apply(math.Sinh)},
		{"Erf", 9, nil, apply(math.Erf)},
	}
	for _, c := range cases {
		t.Run(c.op, func(t *testing.T) {
			got := runOne(t, c.op, c.opset, c.attrs, []onnxtest.In{onnxtest.Feed("x", []int{5}, x...)})
			if c.op == "Reciprocal" {
				// 1/0 is +Inf: check it, then compare the finite entries.
				g := got.Float64s()
				if !math.IsInf(g[2], 1) {
					t.Fatalf("Reciprocal(0) = %v, want +Inf", g[2])
				}
				g[2], c.want[2] = 0, 0
				got.F64, got.F32 = g, nil
			}
			onnxtest.AssertClose(t, c.op, got, []int{5}, c.want, 1e-12)
		})
	}
}

func TestExtraUnaryGradient(t *testing.T) {
	// Values away from kinks, inside every domain (Acosh needs x > 1).
	inside := []float64{-0.7, -0.3, 0.2, 0.45, 0.6, -0.55}
	above1 := []float64{1.5, 2, 1.2, 3, 1.7, 2.4}
	cases := []struct {
		op    string
		opset int64
		attrs []*onnxpb.AttributeProto
		x     []float64
	}{
		{"Elu", 6, []*onnxpb.AttributeProto{onnxtest.AFloat("alpha", 1.5)}, inside},
		{"Selu", 6, nil, inside},
		{"Softplus", 1, nil, inside},
		{"Softsign", 1, nil, inside},
		{"ThresholdedRelu", 10, []*onnxpb.AttributeProto{onnxtest.AFloat("alpha", 0.25)}, inside},
		{"Shrink", 9, []*onnxpb.AttributeProto{onnxtest.AFloat("lambd", 0.4), onnxtest.AFloat("bias", 0.1)}, inside},
		{"Reciprocal", 6, nil, inside},
		{"Floor", 6, nil, inside},
		{"Ceil", 6, nil, inside},
		{"Round", 11, nil, inside},
		{"Sign", 9, nil, inside},
		{"Sin", 7, nil, inside},
		{"Cos", 7, nil, inside},
		{"Tan", 7, nil, inside},
		{"Asin", 7, nil, inside},
		{"Acos", 7, nil, inside},
		{"Atan", 7, nil, inside},
		{"Sinh", 9, nil, inside},
		{"Cosh", 9, nil, inside},
		{"Asinh", 9, nil, inside},
		{"Acosh", 9, nil, above1},
		{"Atanh", 9, nil, inside},
		{"Erf", 9, nil, inside},
	}
	for _, c := range cases {
		t.Run(c.op, func(t *testing.T) {
			ins := []onnxtest.In{onnxtest.Feed("x", []int{2, 3}, c.x...)}
			m := onnxtest.OneNode(c.op, c.opset, c.attrs, ins, "y")
			gradCheck(t, m, onnxtest.Feeds(ins), "x", 1e-6)
		})
	}
}

func TestPRelu(t *testing.T) {
	cases := []struct {
		name   string
		opset  int64
		xs, ss []int
		slope  []float64
		want   []float64
	}{
		// x = [[-1, 2, -3], [4, -5, 6]]
		{"same shape", 9, []int{2, 3}, []int{2, 3}, []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6}, []float64{-0.1, 2, -0.9, 4, -2.5, 6}},
		{"broadcast last axis", 9, []int{2, 3}, []int{3}, []float64{0.1, 0.2, 0.3}, []float64{-0.1, 2, -0.9, 4, -1, 6}},
		{"scalar slope", 9, []int{2, 3}, []int{1}, []float64{0.5}, []float64{-0.5, 2, -1.5, 4, -2.5, 6}},
	}
	x := []float64{-1, 2, -3, 4, -5, 6}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ins := []onnxtest.In{onnxtest.Feed("x", c.xs, x...), onnxtest.InitF("slope", c.ss, c.slope...)}
			got := runOne(t, "PRelu", c.opset, nil, ins)
			onnxtest.AssertClose(t, "PRelu", got, c.xs, c.want, 1e-12)
			m := onnxtest.OneNode("PRelu", c.opset, nil, ins, "y")
			gradCheck(t, m, onnxtest.Feeds(ins), "x", 1e-6)
			gradCheck(t, m, onnxtest.Feeds(ins), "slope", 1e-6)
		})
	}
}

// TestMishORT checks Mish (opset 18) against ONNX Runtime and by central
// differences.
func TestMishORT(t *testing.T) {
	r := rand.New(rand.NewSource(18))
	x := onnxtest.RandUniform32(r, "x", 4, 6)
	for i := range x.F32 {
		x.F32[i] *= 8 // both tails
	}
	checkAgainstORT(t, "Mish", 18, []oracleCase{{"mish", nil, []*importer.Tensor{x}}}, 1e-6)
	ins := []onnxtest.In{onnxtest.Feed("x", x.Shape, x.Float64s()...)}
	gradCheck(t, onnxtest.OneNode("Mish", 18, nil, ins, "y"), onnxtest.Feeds(ins), "x", 1e-6)
}

// TestHardActivations checks HardSigmoid and HardSwish by hand at the
// kinks, against ONNX Runtime on random values, and their gradients by
// finite differences away from the kinks.
func TestHardActivations(t *testing.T) {
	x := onnxtest.Feed("x", []int{7}, -4, -3, -1, 0, 1.5, 3, 4)
	onnxtest.AssertClose(t, "HardSigmoid default", runOne(t, "HardSigmoid", 13, nil, []onnxtest.In{x}), []int{7},
		[]float64{0, 0, 0.3, 0.5, 0.8, 1, 1}, 1e-7)
	onnxtest.AssertClose(t, "HardSigmoid 1/6", runOne(t, "HardSigmoid", 13, []*onnxpb.AttributeProto{onnxtest.AFloat("alpha", 1.0/6)}, []onnxtest.In{x}), []int{7},
		[]float64{0, 0, 1.0 / 3, 0.5, 0.75, 1, 1}, 1e-7)
	onnxtest.AssertClose(t, "HardSwish", runOne(t, "HardSwish", 14, nil, []onnxtest.In{x}), []int{7},
		[]float64{0, 0, -1.0 / 3, 0, 1.125, 3, 4}, 1e-12)

	r := rand.New(rand.NewSource(5))
	big := func() *importer.Tensor {
		t := onnxtest.RandUniform32(r, "x", 4, 25)
		for i := range t.F32 {
			t.F32[i] *= 5
		}
		return t
	}
	checkAgainstORT(t, "HardSigmoid", 14, []oracleCase{
		{"default", nil, []*importer.Tensor{big()}},
		{"torch", []*onnxpb.AttributeProto{onnxtest.AFloat("alpha", 1.0/6), onnxtest.AFloat("beta", 0.5)}, []*importer.Tensor{big()}},
	}, 1e-6)
	checkAgainstORT(t, "HardSwish", 14, []oracleCase{{"hardswish", nil, []*importer.Tensor{big()}}}, 1e-6)

	g := onnxtest.Feed("x", []int{6}, -4, -2.2, -0.7, 0.2, 2.2, 3.6)
	for _, c := range []struct {
		op    string
		opset int64
		attrs []*onnxpb.AttributeProto
	}{
		{"HardSigmoid", 13, nil}, {"HardSigmoid", 13, []*onnxpb.AttributeProto{onnxtest.AFloat("alpha", 1.0/6)}}, {"HardSwish", 14, nil},
	} {
		gradCheck(t, onnxtest.OneNode(c.op, c.opset, c.attrs, []onnxtest.In{g}, "y"), onnxtest.Feeds([]onnxtest.In{g}), "x", 1e-6)
	}
}
