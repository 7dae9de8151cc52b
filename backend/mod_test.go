package backend

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// TestModGrad checks Mod's gradient with respect to both operands (the
// divisor broadcast) by central differences, for fmod 1 and 0, with
// operands of both signs away from the jumps.
func TestModGrad(t *testing.T) {
	for _, fmod := range []int64{0, 1} {
		t.Run(fmt.Sprintf("fmod %d", fmod), func(t *testing.T) {
			a := randFeed("a", 3, 3, 4)
			for i := range a.t.F64 {
				a.t.F64[i] *= 7
			}
			b := feed("b", []int{4}, 1.3, -0.7, 2.9, -3.1)
			ins := []tin{a, b}
			m := oneNode("Mod", 13, []*onnxpb.AttributeProto{aInt("fmod", fmod)}, ins, "y")
			gradCheck(t, m, feedsOf(ins), "a", 1e-6)
			gradCheck(t, m, feedsOf(ins), "b", 1e-6)
		})
	}
}

// TestModIndicesORT checks Mod of MaxPool's run-time int64 indices by an
// int64 constant (the column of each maximum) against ONNX Runtime.
func TestModIndicesORT(t *testing.T) {
	r := rand.New(rand.NewSource(10))
	nodes := []*onnxpb.NodeProto{
		mkNode("MaxPool", "pool", []string{"x"}, []string{"p", "idx"}, aInts("kernel_shape", 2, 2), aInts("strides", 2, 2)),
		mkNode("Mod", "col", []string{"idx", "w"}, []string{"col"}),
	}
	w := &importer.Tensor{Name: "w", Type: importer.Int64, Shape: []int{}, I64: []int64{6}}
	m := graphModel(nodes, []*importer.Tensor{w}, map[string][]int64{"x": {1, 2, 4, 6}}, "col")
	checkGraphORT(t, m, 13, map[string]*importer.Tensor{"x": randF32Tensor(r, "x", 1, 2, 4, 6)}, 0)
}
