package onnxops

import (
	"testing"

	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

func TestPoolLowering(t *testing.T) {
	x := onnxtest.Feed("x", []int{1, 1, 2, 4}, 1, 7, 3, 2, 5, 0, 4, 8)
	k := []*onnxpb.AttributeProto{onnxtest.AInts("kernel_shape", 2, 2), onnxtest.AInts("strides", 2, 2)}
	m := onnxtest.OneNode("MaxPool", 12, k, []onnxtest.In{x}, "y", "idx")
	out := forward(t, m, onnxtest.Feeds([]onnxtest.In{x}))
	onnxtest.AssertClose(t, "MaxPool", out["y"], []int{1, 1, 1, 2}, []float64{7, 8}, 0)
	onnxtest.AssertClose(t, "MaxPool indices", out["idx"], []int{1, 1, 1, 2}, []float64{1, 7}, 0)

	got := runOne(t, "AveragePool", 11, k, []onnxtest.In{x})
	onnxtest.AssertClose(t, "AveragePool", got, []int{1, 1, 1, 2}, []float64{13.0 / 4, 17.0 / 4}, 1e-12)
	pad := append(k[:1:1], onnxtest.AInts("pads", 0, 1, 0, 1), onnxtest.AInt("count_include_pad", 1))
	got = runOne(t, "AveragePool", 11, pad, []onnxtest.In{x})
	onnxtest.AssertClose(t, "AveragePool count_include_pad", got, []int{1, 1, 1, 5}, []float64{6.0 / 4, 13.0 / 4, 14.0 / 4, 17.0 / 4, 10.0 / 4}, 1e-12)

	got = runOne(t, "GlobalAveragePool", 11, nil, []onnxtest.In{x})
	onnxtest.AssertClose(t, "GlobalAveragePool", got, []int{1, 1, 1, 1}, []float64{30.0 / 8}, 1e-12)
	got = runOne(t, "GlobalMaxPool", 11, nil, []onnxtest.In{x})
	onnxtest.AssertClose(t, "GlobalMaxPool", got, []int{1, 1, 1, 1}, []float64{8}, 0)

	v := onnxtest.Feed("v", []int{1, 1, 1, 2}, 3, 4)
	got = runOne(t, "MaxUnpool", 11, k, []onnxtest.In{v, onnxtest.InitI("i", []int{1, 1, 1, 2}, 1, 6)})
	onnxtest.AssertClose(t, "MaxUnpool", got, []int{1, 1, 2, 4}, []float64{0, 3, 0, 0, 0, 0, 4, 0}, 0)
}

func TestPoolLoweringGradient(t *testing.T) {
	x := onnxtest.RandFeed("x", 3, 2, 2, 5, 6)
	for _, c := range []struct {
		op    string
		attrs []*onnxpb.AttributeProto
	}{
		{"MaxPool", []*onnxpb.AttributeProto{onnxtest.AInts("kernel_shape", 3, 2), onnxtest.AInts("strides", 2, 2), onnxtest.AInts("pads", 1, 0, 1, 1), onnxtest.AInt("ceil_mode", 1)}},
		{"AveragePool", []*onnxpb.AttributeProto{onnxtest.AInts("kernel_shape", 3, 3), onnxtest.AInts("strides", 2, 2), onnxtest.AInts("pads", 1, 1, 1, 1), onnxtest.AInt("ceil_mode", 1)}},
		{"GlobalAveragePool", nil},
		{"GlobalMaxPool", nil},
	} {
		t.Run(c.op, func(t *testing.T) {
			m := onnxtest.OneNode(c.op, 12, c.attrs, []onnxtest.In{x}, "y")
			gradCheck(t, m, onnxtest.Feeds([]onnxtest.In{x}), "x", 1e-6)
		})
	}
	v := onnxtest.RandFeed("v", 4, 1, 1, 2, 2)
	ins := []onnxtest.In{v, onnxtest.InitI("i", []int{1, 1, 2, 2}, 0, 3, 9, 14)}
	m := onnxtest.OneNode("MaxUnpool", 11, []*onnxpb.AttributeProto{onnxtest.AInts("kernel_shape", 2, 2), onnxtest.AInts("strides", 2, 2)}, ins, "y")
	gradCheck(t, m, onnxtest.Feeds(ins), "v", 1e-6)
}
