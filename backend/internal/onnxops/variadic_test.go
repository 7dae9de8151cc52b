package onnxops

import (
	"testing"

	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

func TestVariadic(t *testing.T) {
	// a: [2, 3], b: [3] (broadcast), c: [2, 1] (broadcast)
	a := []float64{1, -2, 3, 0.5, 4, -1}
	bv := []float64{2, 0.25, -3}
	cv := []float64{-0.5, 1.5}
	cases := []struct {
		op   string
		want []float64
	}{
		{"Sum", []float64{2.5, -2.25, -0.5, 4, 5.75, -2.5}},
		{"Mean", []float64{2.5 / 3, -2.25 / 3, -0.5 / 3, 4.0 / 3, 5.75 / 3, -2.5 / 3}},
		{"Max", []float64{2, 0.25, 3, 2, 4, 1.5}},
		{"Min", []float64{-0.5, -2, -3, 0.5, 0.25, -3}},
	}
	for _, c := range cases {
		t.Run(c.op, func(t *testing.T) {
			ins := []onnxtest.In{onnxtest.Feed("a", []int{2, 3}, a...), onnxtest.Feed("b", []int{3}, bv...), onnxtest.Feed("c", []int{2, 1}, cv...)}
			onnxtest.AssertClose(t, c.op, runOne(t, c.op, 8, nil, ins), []int{2, 3}, c.want, 1e-12)
			m := onnxtest.OneNode(c.op, 8, nil, ins, "y")
			for _, wrt := range []string{"a", "b", "c"} {
				gradCheck(t, m, onnxtest.Feeds(ins), wrt, 1e-6)
			}
		})
	}
}

func TestHardmax(t *testing.T) {
	// x = [[[1, 3], [3, 2]], [[0, -1], [-2, 5]]], shape [2, 2, 2]
	x := []float64{1, 3, 3, 2, 0, -1, -2, 5}
	cases := []struct {
		name  string
		opset int64
		attrs []*onnxpb.AttributeProto
		want  []float64
	}{
		{"opset 13 last axis", 13, nil, []float64{0, 1, 1, 0, 1, 0, 0, 1}},
		{"opset 13 axis 1", 13, []*onnxpb.AttributeProto{onnxtest.AInt("axis", 1)}, []float64{0, 1, 1, 0, 1, 0, 0, 1}},
		{"opset 11 coerced at axis 1 (first of ties)", 11, nil, []float64{0, 1, 0, 0, 0, 0, 0, 1}},
		{"opset 11 axis 0", 11, []*onnxpb.AttributeProto{onnxtest.AInt("axis", 0)}, []float64{0, 0, 0, 0, 0, 0, 0, 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ins := []onnxtest.In{onnxtest.Feed("x", []int{2, 2, 2}, x...)}
			onnxtest.AssertClose(t, "Hardmax", runOne(t, "Hardmax", c.opset, c.attrs, ins), []int{2, 2, 2}, c.want, 0)
			// zero gradient, checked away from ties
			ins = []onnxtest.In{onnxtest.Feed("x", []int{2, 2, 2}, 1, 3, 2.5, 2, 0, -1, -2, 5)}
			gradCheck(t, onnxtest.OneNode("Hardmax", c.opset, c.attrs, ins, "y"), onnxtest.Feeds(ins), "x", 1e-6)
		})
	}
}
