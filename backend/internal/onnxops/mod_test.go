package onnxops

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// TestModGrad checks Mod's gradient with respect to both operands (the
// divisor broadcast) by central differences, for fmod 1 and 0, with
// operands of both signs away from the jumps.
func TestModGrad(t *testing.T) {
	for _, fmod := range []int64{0, 1} {
		t.Run(fmt.Sprintf("fmod %d", fmod), func(t *testing.T) {
			a := onnxtest.RandFeed("a", 3, 3, 4)
			for i := range a.T.F64 {
				a.T.F64[i] *= 7
			}
			b := onnxtest.Feed("b", []int{4}, 1.3, -0.7, 2.9, -3.1)
			ins := []onnxtest.In{a, b}
			m := onnxtest.OneNode("Mod", 13, []*onnxpb.AttributeProto{onnxtest.AInt("fmod", fmod)}, ins, "y")
			gradCheck(t, m, onnxtest.Feeds(ins), "a", 1e-6)
			gradCheck(t, m, onnxtest.Feeds(ins), "b", 1e-6)
		})
	}
}

// TestModIndicesORT checks Mod of MaxPool's run-time int64 indices by an
// int64 constant (the column of each maximum) against ONNX Runtime.
func TestModIndicesORT(t *testing.T) {
	r := rand.New(rand.NewSource(10))
	nodes := []*onnxpb.NodeProto{
		onnxtest.Node("MaxPool", "pool", []string{"x"}, []string{"p", "idx"}, onnxtest.AInts("kernel_shape", 2, 2), onnxtest.AInts("strides", 2, 2)),
		onnxtest.Node("Mod", "col", []string{"idx", "w"}, []string{"col"}),
	}
	w := &importer.Tensor{Name: "w", Type: importer.Int64, Shape: []int{}, I64: []int64{6}}
	m := onnxtest.GraphModel(nodes, []*importer.Tensor{w}, map[string][]int64{"x": {1, 2, 4, 6}}, "col")
	checkGraphORT(t, m, 13, map[string]*importer.Tensor{"x": onnxtest.RandUniform32(r, "x", 1, 2, 4, 6)}, 0)
}
