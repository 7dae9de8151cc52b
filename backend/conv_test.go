package backend

import (
	"testing"

	"github.com/paretonav/paretonav/importer/onnxpb"
)

func TestConvLowering(t *testing.T) {
	x := feed("x", []int{1, 1, 3, 3}, 1, 2, 3, 4, 5, 6, 7, 8, 9)
	w := initF("w", []int{1, 1, 2, 2}, 1, 1, 1, 1)
	b := initF("b", []int{1}, 0.5)
	// Sums of 2×2 windows plus the bias.
	got := runOne(t, "Conv", 11, []*onnxpb.AttributeProto{aInts("kernel_shape", 2, 2)}, []tin{x, w, b})
	assertClose(t, "Conv", got, []int{1, 1, 2, 2}, []float64{12.5, 16.5, 24.5, 28.5}, 1e-12)
	// Asymmetric pads [top, left, bottom, right] = [1, 0, 0, 0], no bias.
	got = runOne(t, "Conv", 11, []*onnxpb.AttributeProto{aInts("pads", 1, 0, 0, 0)}, []tin{x, w, absent})
	assertClose(t, "Conv pads", got, []int{1, 1, 3, 2}, []float64{3, 5, 12, 16, 24, 28}, 1e-12)
}

func TestConvLoweringGradient(t *testing.T) {
	ins := []tin{randFeed("x", 1, 2, 4, 5, 5), initF("w", []int{4, 2, 3, 3}), initF("b", []int{4}, 0.1, -0.2, 0.3, 0.4)}
	r := randFeed("w", 2, 4, 2, 3, 3)
	ins[1] = initF("w", []int{4, 2, 3, 3}, r.t.F64...)
	attrs := []*onnxpb.AttributeProto{aInt("group", 2), aInts("strides", 2, 1), aInts("pads", 1, 0, 2, 1), aInts("dilations", 1, 2)}
	m := oneNode("Conv", 11, attrs, ins, "y")
	for _, wrt := range []string{"x", "w", "b"} {
		gradCheck(t, m, feedsOf(ins), wrt, 1e-6)
	}
}
