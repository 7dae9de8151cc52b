package onnxops

import (
	"math/rand"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// groupNormCases are GroupNormalization cases at opset 18 (scale and bias
// per group) or 21 (per channel).
func groupNormCases(opset int64) []oracleCase {
	r := rand.New(rand.NewSource(18 + opset))
	aff := func(g, c int) int {
		if opset >= 21 {
			return c
		}
		return g
	}
	return []oracleCase{
		{"2 groups of 2", []*onnxpb.AttributeProto{onnxtest.AInt("num_groups", 2)},
			[]*importer.Tensor{onnxtest.RandUniform32(r, "x", 2, 4, 3, 2), onnxtest.RandUniform32(r, "s", aff(2, 4)), onnxtest.RandUniform32(r, "b", aff(2, 4))}},
		{"1 group eps", []*onnxpb.AttributeProto{onnxtest.AInt("num_groups", 1), onnxtest.AFloat("epsilon", 0.05)},
			[]*importer.Tensor{onnxtest.RandUniform32(r, "x", 1, 3, 5), onnxtest.RandUniform32(r, "s", aff(1, 3)), onnxtest.RandUniform32(r, "b", aff(1, 3))}},
		{"groups = channels", []*onnxpb.AttributeProto{onnxtest.AInt("num_groups", 3)},
			[]*importer.Tensor{onnxtest.RandUniform32(r, "x", 2, 3, 2, 2), onnxtest.RandUniform32(r, "s", 3), onnxtest.RandUniform32(r, "b", 3)}},
	}
}

// TestGroupNormORT checks both versions against ONNX Runtime.
func TestGroupNormORT(t *testing.T) {
	for _, opset := range []int64{18, 21} {
		checkAgainstORT(t, "GroupNormalization", opset, groupNormCases(opset), 1e-5)
	}
}

// TestGroupNormGrad checks the gradients in X, scale and bias by central
// finite differences.
func TestGroupNormGrad(t *testing.T) {
	for _, opset := range []int64{18, 21} {
		for _, c := range groupNormCases(opset) {
			ins := []onnxtest.In{onnxtest.Feed("x", c.ins[0].Shape, c.ins[0].Float64s()...),
				onnxtest.InitF("s", c.ins[1].Shape, c.ins[1].Float64s()...), onnxtest.InitF("b", c.ins[2].Shape, c.ins[2].Float64s()...)}
			m := onnxtest.OneNode("GroupNormalization", opset, c.attrs, ins, "y")
			for _, wrt := range []string{"x", "s", "b"} {
				gradCheck(t, m, onnxtest.Feeds(ins), wrt, 1e-5)
			}
		}
	}
}

// TestGroupNormErrors checks the per-version scale shapes and num_groups.
func TestGroupNormErrors(t *testing.T) {
	cases := []struct {
		name   string
		opset  int64
		groups int64
		affine int
		want   string
	}{
		{"per channel at 18", 18, 2, 4, "num_groups = 2 elements at opset 18"},
		{"per group at 21", 21, 2, 2, "C = 4 elements at opset 21"},
		{"indivisible", 21, 3, 4, "num_groups 3 must be positive and divide the 4 channels"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ins := []onnxtest.In{onnxtest.RandFeed("x", 1, 1, 4, 2), onnxtest.InitF("s", []int{c.affine}, make([]float64, c.affine)...), onnxtest.InitF("b", []int{c.affine}, make([]float64, c.affine)...)}
			_, err := tryGraph(onnxtest.OneNode("GroupNormalization", c.opset, []*onnxpb.AttributeProto{onnxtest.AInt("num_groups", c.groups)}, ins, "y"), onnxtest.Feeds(ins), nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}
