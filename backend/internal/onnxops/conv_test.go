package onnxops

import (
	"testing"

	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

func TestConvLowering(t *testing.T) {
	x := onnxtest.Feed("x", []int{1, 1, 3, 3}, 1, 2, 3, 4, 5, 6, 7, 8, 9)
	w := onnxtest.InitF("w", []int{1, 1, 2, 2}, 1, 1, 1, 1)
	b := onnxtest.InitF("b", []int{1}, 0.5)
	// Sums of 2×2 windows plus the bias.
	got := runOne(t, "Conv", 11, []*onnxpb.AttributeProto{onnxtest.AInts("kernel_shape", 2, 2)}, []onnxtest.In{x, w, b})
	onnxtest.AssertClose(t, "Conv", got, []int{1, 1, 2, 2}, []float64{12.5, 16.5, 24.5, 28.5}, 1e-12)
	// Asymmetric pads [top, left, bottom, right] = [1, 0, 0, 0], no bias.
	got = runOne(t, "Conv", 11, []*onnxpb.AttributeProto{onnxtest.AInts("pads", 1, 0, 0, 0)}, []onnxtest.In{x, w, onnxtest.Absent})
	onnxtest.AssertClose(t, "Conv pads", got, []int{1, 1, 3, 2}, []float64{3, 5, 12, 16, 24, 28}, 1e-12)
}

func TestConvLoweringGradient(t *testing.T) {
	ins := []onnxtest.In{onnxtest.RandFeed("x", 1, 2, 4, 5, 5), onnxtest.InitF("w", []int{4, 2, 3, 3}), onnxtest.InitF("b", []int{4}, 0.1, -0.2, 0.3, 0.4)}
	r := onnxtest.RandFeed("w", 2, 4, 2, 3, 3)
	ins[1] = onnxtest.InitF("w", []int{4, 2, 3, 3}, r.T.F64...)
	attrs := []*onnxpb.AttributeProto{onnxtest.AInt("group", 2), onnxtest.AInts("strides", 2, 1), onnxtest.AInts("pads", 1, 0, 2, 1), onnxtest.AInts("dilations", 1, 2)}
	m := onnxtest.OneNode("Conv", 11, attrs, ins, "y")
	for _, wrt := range []string{"x", "w", "b"} {
		gradCheck(t, m, onnxtest.Feeds(ins), wrt, 1e-6)
	}
}
