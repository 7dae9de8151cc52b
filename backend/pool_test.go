package backend

import (
	"testing"

	"github.com/paretonav/paretonav/importer/onnxpb"
)

func TestPoolLowering(t *testing.T) {
	x := feed("x", []int{1, 1, 2, 4}, 1, 7, 3, 2, 5, 0, 4, 8)
	k := []*onnxpb.AttributeProto{aInts("kernel_shape", 2, 2), aInts("strides", 2, 2)}
	m := oneNode("MaxPool", 12, k, []tin{x}, "y", "idx")
	out := forward(t, m, feedsOf([]tin{x}))
	assertClose(t, "MaxPool", out["y"], []int{1, 1, 1, 2}, []float64{7, 8}, 0)
	assertClose(t, "MaxPool indices", out["idx"], []int{1, 1, 1, 2}, []float64{1, 7}, 0)

	got := runOne(t, "AveragePool", 11, k, []tin{x})
	assertClose(t, "AveragePool", got, []int{1, 1, 1, 2}, []float64{13.0 / 4, 17.0 / 4}, 1e-12)
	pad := append(k[:1:1], aInts("pads", 0, 1, 0, 1), aInt("count_include_pad", 1))
	got = runOne(t, "AveragePool", 11, pad, []tin{x})
	assertClose(t, "AveragePool count_include_pad", got, []int{1, 1, 1, 5}, []float64{6.0 / 4, 13.0 / 4, 14.0 / 4, 17.0 / 4, 10.0 / 4}, 1e-12)

	got = runOne(t, "GlobalAveragePool", 11, nil, []tin{x})
	assertClose(t, "GlobalAveragePool", got, []int{1, 1, 1, 1}, []float64{30.0 / 8}, 1e-12)
	got = runOne(t, "GlobalMaxPool", 11, nil, []tin{x})
	assertClose(t, "GlobalMaxPool", got, []int{1, 1, 1, 1}, []float64{8}, 0)

	v := feed("v", []int{1, 1, 1, 2}, 3, 4)
	got = runOne(t, "MaxUnpool", 11, k, []tin{v, initI("i", []int{1, 1, 1, 2}, 1, 6)})
	assertClose(t, "MaxUnpool", got, []int{1, 1, 2, 4}, []float64{0, 3, 0, 0, 0, 0, 4, 0}, 0)
}

func TestPoolLoweringGradient(t *testing.T) {
	x := randFeed("x", 3, 2, 2, 5, 6)
	for _, c := range []struct {
		op    string
		attrs []*onnxpb.AttributeProto
	}{
		{"MaxPool", []*onnxpb.AttributeProto{aInts("kernel_shape", 3, 2), aInts("strides", 2, 2), aInts("pads", 1, 0, 1, 1), aInt("ceil_mode", 1)}},
		{"AveragePool", []*onnxpb.AttributeProto{aInts("kernel_shape", 3, 3), aInts("strides", 2, 2), aInts("pads", 1, 1, 1, 1), aInt("ceil_mode", 1)}},
		{"GlobalAveragePool", nil},
		{"GlobalMaxPool", nil},
	} {
		t.Run(c.op, func(t *testing.T) {
			m := oneNode(c.op, 12, c.attrs, []tin{x}, "y")
			gradCheck(t, m, feedsOf([]tin{x}), "x", 1e-6)
		})
	}
	v := randFeed("v", 4, 1, 1, 2, 2)
	ins := []tin{v, initI("i", []int{1, 1, 2, 2}, 0, 3, 9, 14)}
	m := oneNode("MaxUnpool", 11, []*onnxpb.AttributeProto{aInts("kernel_shape", 2, 2), aInts("strides", 2, 2)}, ins, "y")
	gradCheck(t, m, feedsOf(ins), "v", 1e-6)
}
