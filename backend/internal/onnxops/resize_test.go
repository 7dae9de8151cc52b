package onnxops

import (
	"testing"

	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

func TestResizeLowering(t *testing.T) {
	x := onnxtest.Feed("x", []int{1, 1, 2, 2}, 1, 2, 3, 4)
	nearest := []float64{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}
	got := runOne(t, "Upsample", 9, nil, []onnxtest.In{x, onnxtest.InitF("s", []int{4}, 1, 1, 2, 2)})
	onnxtest.AssertClose(t, "Upsample-9 nearest", got, []int{1, 1, 4, 4}, nearest, 0)
	got = runOne(t, "Resize", 10, nil, []onnxtest.In{x, onnxtest.InitF("s", []int{4}, 1, 1, 2, 2)})
	onnxtest.AssertClose(t, "Resize-10 nearest", got, []int{1, 1, 4, 4}, nearest, 0)
	attrs := []*onnxpb.AttributeProto{onnxtest.AString("mode", "linear"), onnxtest.AString("coordinate_transformation_mode", "align_corners")}
	got = runOne(t, "Resize", 13, attrs, []onnxtest.In{x, onnxtest.Absent, onnxtest.Absent, onnxtest.InitI("sz", []int{4}, 1, 1, 3, 3)})
	onnxtest.AssertClose(t, "Resize-13 linear align_corners", got, []int{1, 1, 3, 3}, []float64{1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4}, 1e-12)
	// half_pixel x2: rows [1 1.25 1.75 2] for input row [1 2].
	attrs = []*onnxpb.AttributeProto{onnxtest.AString("mode", "linear")}
	got = runOne(t, "Resize", 11, attrs, []onnxtest.In{onnxtest.Feed("x", []int{1, 1, 1, 2}, 1, 2), onnxtest.InitF("roi", []int{0}), onnxtest.InitF("s", []int{4}, 1, 1, 1, 2)})
	onnxtest.AssertClose(t, "Resize-11 linear half_pixel", got, []int{1, 1, 1, 4}, []float64{1, 1.25, 1.75, 2}, 1e-12)
}

func TestResizeLoweringGradient(t *testing.T) {
	x := onnxtest.RandFeed("x", 7, 1, 2, 3, 4)
	for _, mode := range []string{"nearest", "linear"} {
		ins := []onnxtest.In{x, onnxtest.Absent, onnxtest.InitF("s", []int{4}, 1, 1, 2, 1.5)}
		m := onnxtest.OneNode("Resize", 13, []*onnxpb.AttributeProto{onnxtest.AString("mode", mode)}, ins, "y")
		gradCheck(t, m, onnxtest.Feeds(ins), "x", 1e-6)
	}
}
