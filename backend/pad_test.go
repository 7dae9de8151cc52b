package backend

import (
	"testing"

	"github.com/paretonav/paretonav/importer/onnxpb"
)

func TestPadLowering(t *testing.T) {
	x := feed("x", []int{1, 3}, 1, 2, 3)
	got := runOne(t, "Pad", 2, []*onnxpb.AttributeProto{aInts("pads", 0, 2, 0, 1), aFloat("value", 9)}, []tin{x})
	assertClose(t, "Pad-2 constant", got, []int{1, 6}, []float64{9, 9, 1, 2, 3, 9}, 0)
	got = runOne(t, "Pad", 13, []*onnxpb.AttributeProto{aString("mode", "reflect")}, []tin{x, initI("p", []int{4}, 0, 2, 0, 2)})
	assertClose(t, "Pad-13 reflect", got, []int{1, 7}, []float64{3, 2, 1, 2, 3, 2, 1}, 0)
	got = runOne(t, "Pad", 13, []*onnxpb.AttributeProto{aString("mode", "edge")}, []tin{x, initI("p", []int{4}, 1, 1, 0, 0)})
	assertClose(t, "Pad-13 edge", got, []int{2, 4}, []float64{1, 1, 2, 3, 1, 1, 2, 3}, 0)
	got = runOne(t, "Pad", 13, nil, []tin{x, initI("p", []int{4}, 0, 1, 0, 0), initF("c", nil, 0.5)})
	assertClose(t, "Pad-13 constant_value", got, []int{1, 4}, []float64{0.5, 1, 2, 3}, 0)
}

func TestPadLoweringGradient(t *testing.T) {
	x := randFeed("x", 6, 1, 2, 3, 4)
	for _, mode := range []string{"constant", "reflect", "edge"} {
		ins := []tin{x, initI("p", []int{8}, 0, 0, 2, 1, 0, 0, 1, 3)}
		m := oneNode("Pad", 13, []*onnxpb.AttributeProto{aString("mode", mode)}, ins, "y")
		gradCheck(t, m, feedsOf(ins), "x", 1e-6)
	}
}
