package backend

import (
	"testing"

	"github.com/paretonav/paretonav/importer/onnxpb"
)

func TestResizeLowering(t *testing.T) {
	x := feed("x", []int{1, 1, 2, 2}, 1, 2, 3, 4)
	nearest := []float64{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}
	got := runOne(t, "Upsample", 9, nil, []tin{x, initF("s", []int{4}, 1, 1, 2, 2)})
	assertClose(t, "Upsample-9 nearest", got, []int{1, 1, 4, 4}, nearest, 0)
	got = runOne(t, "Resize", 10, nil, []tin{x, initF("s", []int{4}, 1, 1, 2, 2)})
	assertClose(t, "Resize-10 nearest", got, []int{1, 1, 4, 4}, nearest, 0)
	attrs := []*onnxpb.AttributeProto{aString("mode", "linear"), aString("coordinate_transformation_mode", "align_corners")}
	got = runOne(t, "Resize", 13, attrs, []tin{x, absent, absent, initI("sz", []int{4}, 1, 1, 3, 3)})
	assertClose(t, "Resize-13 linear align_corners", got, []int{1, 1, 3, 3}, []float64{1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4}, 1e-12)
	// half_pixel x2: rows [1 1.25 1.75 2] for input row [1 2].
	attrs = []*onnxpb.AttributeProto{aString("mode", "linear")}
	got = runOne(t, "Resize", 11, attrs, []tin{feed("x", []int{1, 1, 1, 2}, 1, 2), initF("roi", []int{0}), initF("s", []int{4}, 1, 1, 1, 2)})
	assertClose(t, "Resize-11 linear half_pixel", got, []int{1, 1, 1, 4}, []float64{1, 1.25, 1.75, 2}, 1e-12)
}

func TestResizeLoweringGradient(t *testing.T) {
	x := randFeed("x", 7, 1, 2, 3, 4)
	for _, mode := range []string{"nearest", "linear"} {
		ins := []tin{x, absent, initF("s", []int{4}, 1, 1, 2, 1.5)}
		m := oneNode("Resize", 13, []*onnxpb.AttributeProto{aString("mode", mode)}, ins, "y")
		gradCheck(t, m, feedsOf(ins), "x", 1e-6)
	}
}
