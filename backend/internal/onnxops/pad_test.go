package onnxops

import (
	"testing"

	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

func TestPadLowering(t *testing.T) {
	x := onnxtest.Feed("x", []int{1, 3}, 1, 2, 3)
	got := runOne(t, "Pad", 2, []*onnxpb.AttributeProto{onnxtest.AInts("pads", 0, 2, 0, 1), onnxtest.AFloat("value", 9)}, []onnxtest.In{x})
	onnxtest.AssertClose(t, "Pad-2 constant", got, []int{1, 6}, []float64{9, 9, 1, 2, 3, 9}, 0)
	got = runOne(t, "Pad", 13, []*onnxpb.AttributeProto{onnxtest.AString("mode", "reflect")}, []onnxtest.In{x, onnxtest.InitI("p", []int{4}, 0, 2, 0, 2)})
	onnxtest.AssertClose(t, "Pad-13 reflect", got, []int{1, 7}, []float64{3, 2, 1, 2, 3, 2, 1}, 0)
	got = runOne(t, "Pad", 13, []*onnxpb.AttributeProto{onnxtest.AString("mode", "edge")}, []onnxtest.In{x, onnxtest.InitI("p", []int{4}, 1, 1, 0, 0)})
	onnxtest.AssertClose(t, "Pad-13 edge", got, []int{2, 4}, []float64{1, 1, 2, 3, 1, 1, 2, 3}, 0)
	got = runOne(t, "Pad", 13, nil, []onnxtest.In{x, onnxtest.InitI("p", []int{4}, 0, 1, 0, 0), onnxtest.InitF("c", nil, 0.5)})
	onnxtest.AssertClose(t, "Pad-13 constant_value", got, []int{1, 4}, []float64{0.5, 1, 2, 3}, 0)
}

func TestPadLoweringGradient(t *testing.T) {
	x := onnxtest.RandFeed("x", 6, 1, 2, 3, 4)
	for _, mode := range []string{"constant", "reflect", "edge"} {
		ins := []onnxtest.In{x, onnxtest.InitI("p", []int{8}, 0, 0, 2, 1, 0, 0, 1, 3)}
		m := onnxtest.OneNode("Pad", 13, []*onnxpb.AttributeProto{onnxtest.AString("mode", mode)}, ins, "y")
		gradCheck(t, m, onnxtest.Feeds(ins), "x", 1e-6)
	}
}
