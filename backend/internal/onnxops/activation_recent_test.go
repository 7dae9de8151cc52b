package onnxops

import (
	"math/rand"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

func geluCases() []oracleCase {
	r := rand.New(rand.NewSource(20))
	x := func() *importer.Tensor {
		t := onnxtest.RandUniform32(r, "x", 3, 7)
		for i := range t.F32 {
			t.F32[i] *= 4 // cover the tails
		}
		return t
	}
	return []oracleCase{
		{"erf", nil, []*importer.Tensor{x()}},
		{"erf explicit", []*onnxpb.AttributeProto{onnxtest.AString("approximate", "none")}, []*importer.Tensor{x()}},
		{"tanh", []*onnxpb.AttributeProto{onnxtest.AString("approximate", "tanh")}, []*importer.Tensor{x()}},
	}
}

// TestGeluORT checks Gelu (opset 20) against ONNX Runtime.
func TestGeluORT(t *testing.T) { checkAgainstORT(t, "Gelu", 20, geluCases(), 1e-6) }

// TestGeluGrad checks both forms' derivatives by central differences.
func TestGeluGrad(t *testing.T) {
	for _, c := range geluCases() {
		t.Run(c.name, func(t *testing.T) {
			ins := []onnxtest.In{onnxtest.Feed("x", c.ins[0].Shape, c.ins[0].Float64s()...)}
			gradCheck(t, onnxtest.OneNode("Gelu", 20, c.attrs, ins, "y"), onnxtest.Feeds(ins), "x", 1e-6)
		})
	}
}

// TestGeluVersions checks that Gelu is lowered from opset 20 only and
// that a bad approximate is named.
func TestGeluVersions(t *testing.T) {
	ins := []onnxtest.In{onnxtest.RandFeed("x", 1, 2, 3)}
	_, err := tryGraph(onnxtest.OneNode("Gelu", 19, nil, ins, "y"), onnxtest.Feeds(ins), nil)
	if err == nil || !strings.Contains(err.Error(), "Gelu (node \"n0\", opset 19)") {
		t.Errorf("Gelu at opset 19: got %v, want an unsupported-op error naming Gelu", err)
	}
	_, err = tryGraph(onnxtest.OneNode("Gelu", 20, []*onnxpb.AttributeProto{onnxtest.AString("approximate", "erf")}, ins, "y"), onnxtest.Feeds(ins), nil)
	if err == nil || !strings.Contains(err.Error(), `approximate "erf"`) {
		t.Errorf("approximate erf: got %v", err)
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
