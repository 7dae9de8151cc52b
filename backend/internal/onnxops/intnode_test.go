package onnxops

import (
	"testing"

	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// TestReduceProd checks ReduceProd forward (hand-computed, zeros
// included), build-time folding of integer shapes, and its gradient by
// finite differences, with zero factors (one and two per group).
func TestReduceProd(t *testing.T) {
	x := onnxtest.Feed("x", []int{2, 3}, 1, 2, 3, 0, 5, 6)
	cases := []struct {
		name  string
		opset int64
		attrs []*onnxpb.AttributeProto
		ins   []onnxtest.In
		shape []int
		want  []float64
	}{
		{"all", 13, nil, []onnxtest.In{x}, []int{1, 1}, []float64{0}},
		{"axis1", 13, []*onnxpb.AttributeProto{onnxtest.AInts("axes", 1)}, []onnxtest.In{x}, []int{2, 1}, []float64{6, 0}},
		{"axis0 nokeep", 13, []*onnxpb.AttributeProto{onnxtest.AInts("axes", 0), onnxtest.AInt("keepdims", 0)}, []onnxtest.In{x}, []int{3}, []float64{0, 10, 18}},
		{"axes input (18)", 18, nil, []onnxtest.In{x, onnxtest.InitI("a", []int{1}, -1)}, []int{2, 1}, []float64{6, 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			onnxtest.AssertClose(t, c.name, runOne(t, "ReduceProd", c.opset, c.attrs, c.ins), c.shape, c.want, 1e-12)
		})
	}
	t.Run("folded int64", func(t *testing.T) {
		m := onnxtest.OneNode("ReduceProd", 13, []*onnxpb.AttributeProto{onnxtest.AInt("keepdims", 0)}, []onnxtest.In{onnxtest.InitI("s", []int{3}, 2, 8, 16)}, "y")
		bt := testGraph(t, m, nil, nil)
		y := bt.Vals["y"]
		if !y.IsConst() || y.C.IsFloat() || len(y.C.Shape) != 0 || y.C.Int64s()[0] != 256 {
			t.Fatalf("ReduceProd of constant int64 [2 8 16] = %+v, want the int64 constant 256", y)
		}
	})
	for _, g := range []struct {
		name string
		x    onnxtest.In
	}{
		{"random", onnxtest.RandFeed("x", 3, 2, 3, 4)},
		{"one zero", onnxtest.Feed("x", []int{2, 3}, 1.5, -2, 0, 0.5, 3, -1)},
		{"two zeros", onnxtest.Feed("x", []int{2, 3}, 0, -2, 0, 0.5, 3, -1)},
	} {
		t.Run("grad "+g.name, func(t *testing.T) {
			m := onnxtest.OneNode("ReduceProd", 13, []*onnxpb.AttributeProto{onnxtest.AInts("axes", 1)}, []onnxtest.In{g.x}, "y")
			gradCheck(t, m, onnxtest.Feeds([]onnxtest.In{g.x}), "x", 1e-6)
		})
	}
}

// TestIntIndices checks exact int64 arithmetic and data movement on
// MaxPool's run-time indices, as PyTorch exports return_indices and
// MaxUnpool: the per-plane indices (flat − a 1×1 MaxPool's flat index of
// each plane's first element) and back, through values beyond 2^53 where
// even float64 would round.
func TestIntIndices(t *testing.T) {
	// x [1,2,2,4]: plane 0 = 0..7, plane 1 = 7..0 (maxima at known places).
	x := importer.NewFloat32("x", []int{1, 2, 2, 4}, []float32{0, 1, 2, 3, 4, 5, 6, 7, 7, 6, 5, 4, 3, 2, 1, 0})
	nodes := []*onnxpb.NodeProto{
		onnxtest.Node("MaxPool", "mp", []string{"x"}, []string{"p", "i"}, onnxtest.AInts("kernel_shape", 2, 2), onnxtest.AInts("strides", 2, 2)),
		onnxtest.Node("MaxPool", "mp1", []string{"x"}, []string{"p1", "i1"}, onnxtest.AInts("kernel_shape", 1, 1), onnxtest.AInts("strides", 1, 1)),
		onnxtest.Node("Slice", "sl", []string{"i1", "s0", "s1", "ax"}, []string{"first"}),
		onnxtest.Node("Sub", "sub", []string{"i", "first"}, []string{"plane"}),
		onnxtest.Node("Add", "big", []string{"plane", "huge"}, []string{"b"}),
		onnxtest.Node("Sub", "back", []string{"b", "huge"}, []string{"plane2"}),
		onnxtest.Node("Reshape", "rs", []string{"plane2", "flat"}, []string{"r"}),
		onnxtest.Node("Concat", "cat", []string{"r", "r"}, []string{"y"}, onnxtest.AInt("axis", 0)),
		onnxtest.Node("Add", "off", []string{"plane", "offs"}, []string{"flatidx"}),
		onnxtest.Node("MaxUnpool", "up", []string{"p", "flatidx"}, []string{"u"}, onnxtest.AInts("kernel_shape", 2, 2), onnxtest.AInts("strides", 2, 2)),
	}
	inits := []*importer.Tensor{
		importer.NewInt64("s0", []int{2}, []int64{0, 0}), importer.NewInt64("s1", []int{2}, []int64{1, 1}),
		importer.NewInt64("ax", []int{2}, []int64{2, 3}), importer.NewInt64("huge", nil, []int64{1<<60 + 1}),
		importer.NewInt64("flat", []int{1}, []int64{-1}), importer.NewInt64("offs", []int{1, 2, 1, 1}, []int64{0, 8}),
	}
	m := onnxtest.GraphModel(nodes, inits, map[string][]int64{"x": {1, 2, 2, 4}}, "y", "u")
	out := forward(t, m, map[string]*importer.Tensor{"x": x})
	// Plane 0 maxima at (1,1)=5 and (1,3)=7; plane 1 at (0,0)=0 and (0,2)=2.
	onnxtest.AssertClose(t, "per-plane indices", out["y"], []int{8}, []float64{5, 7, 0, 2, 5, 7, 0, 2}, 0)
	onnxtest.AssertClose(t, "MaxUnpool", out["u"], []int{1, 2, 2, 4},
		[]float64{0, 0, 0, 0, 0, 5, 0, 7, 7, 0, 5, 0, 0, 0, 0, 0}, 0)
	if _, err := tryGraph(onnxtest.GraphModel([]*onnxpb.NodeProto{
		onnxtest.Node("MaxPool", "mp", []string{"x"}, []string{"p", "i"}, onnxtest.AInts("kernel_shape", 2, 2), onnxtest.AInts("strides", 2, 2)),
		onnxtest.Node("Add", "mix", []string{"i", "p"}, []string{"y"}),
	}, nil, map[string][]int64{"x": {1, 2, 2, 4}}, "y"), map[string]*importer.Tensor{"x": x}, nil); err == nil {
		t.Error("adding float data to int64 indices: no error")
	}
}
