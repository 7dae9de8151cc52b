package onnxops

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/backend/internal/rewrite"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// concatConvModel is Concat(a, b) along channels, read by a pointwise
// Conv (output y) and, when both, by the caller too (output cat).
func concatConvModel(both bool) (*importer.Model, map[string]*importer.Tensor) {
	a, b := onnxtest.RandFeed("a", 1, 2, 2, 3, 3), onnxtest.RandFeed("b", 2, 2, 3, 3, 3)
	r := rand.New(rand.NewSource(3))
	normals := func(n int) []float64 {
		d := make([]float64, n)
		for i := range d {
			d[i] = r.NormFloat64()
		}
		return d
	}
	w, bias := onnxtest.InitF("w", []int{4, 5, 1, 1}, normals(20)...), onnxtest.InitF("bias", []int{4}, normals(4)...)
	m := onnxtest.OneNode("Concat", 13, []*onnxpb.AttributeProto{onnxtest.AInt("axis", 1)}, []onnxtest.In{a, b}, "cat")
	g := m.Proto.Graph
	name, op := "conv", "Conv"
	g.Node = append(g.Node, &onnxpb.NodeProto{Name: &name, OpType: &op, Input: []string{"cat", "w", "bias"}, Output: []string{"y"}})
	g.Initializer = append(g.Initializer, onnxtest.TensorProto(w.T), onnxtest.TensorProto(bias.T))
	y := "y"
	outs := []*onnxpb.ValueInfoProto{{Name: &y}}
	if both {
		outs = append(outs, g.Output[0])
	}
	g.Output = outs
	return m, onnxtest.Feeds([]onnxtest.In{a, b})
}

// TestFuseConcatConvGraph checks the fusion on a two-node graph, with the
// Concat read only by the Conv and also by the caller (then it is still
// formed): the outputs agree with the unfused graph's to float64
// round-off, and the gradients with respect to a part and the weights
// pass the finite-difference check through the fused op.
func TestFuseConcatConvGraph(t *testing.T) {
	for _, both := range []bool{false, true} {
		t.Run(fmt.Sprintf("cat_read_too=%v", both), func(t *testing.T) {
			m, feeds := concatConvModel(both)
			want := forwardWith(t, m, feeds, unfused(rewrite.ConvConcat))
			got := forward(t, m, feeds)
			for name, w := range want {
				g := got[name]
				if g == nil {
					t.Fatalf("output %q missing with the fusion", name)
				}
				onnxtest.AssertClose(t, name, g, w.Shape, w.Float64s(), 1e-12)
			}
			if both && got["cat"] == nil {
				t.Fatal("the Concat read by the caller is not an output")
			}
			if y := testGraph(t, m, feeds, nil).Vals["y"]; !strings.HasPrefix(y.N.Op().String(), "ConvConcat{") {
				t.Fatalf("y is computed by %v, not the fused op", y.N.Op())
			}
			gradCheck(t, m, feeds, "a", 1e-6)
			gradCheck(t, m, feeds, "w", 1e-6)
		})
	}
}
