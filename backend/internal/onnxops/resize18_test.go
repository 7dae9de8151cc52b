package onnxops

import (
	"math/rand"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// TestResize18AxesORT checks Resize-18's axes attribute (scales for the
// listed axes only, in any order, negative axes) against ONNX Runtime.
func TestResize18AxesORT(t *testing.T) {
	r := rand.New(rand.NewSource(18))
	sc := func(v ...float32) *importer.Tensor { return importer.NewFloat32("s", []int{len(v)}, v) }
	cases := []oracleCase{
		{"nearest axes 2,3", []*onnxpb.AttributeProto{onnxtest.AInts("axes", 2, 3)}, []*importer.Tensor{onnxtest.RandUniform32(r, "x", 1, 2, 3, 4), nil, sc(2, 1.5)}},
		{"linear axes 3,2", []*onnxpb.AttributeProto{onnxtest.AInts("axes", 3, 2), onnxtest.AString("mode", "linear")}, []*importer.Tensor{onnxtest.RandUniform32(r, "x", 2, 1, 3, 4), nil, sc(1.5, 2)}},
		{"linear axis -1", []*onnxpb.AttributeProto{onnxtest.AInts("axes", -1), onnxtest.AString("mode", "linear"), onnxtest.AString("coordinate_transformation_mode", "align_corners")},
			[]*importer.Tensor{onnxtest.RandUniform32(r, "x", 1, 2, 3, 4), nil, sc(2)}},
	}
	checkAgainstORT(t, "Resize", 18, cases, 1e-5)
}

// TestResize18Sizes checks sizes given per axis against the same sizes
// given for every axis (Resize-13's form, checked against ONNX Runtime in
// the node-test corpus), and the refused keep_aspect_ratio_policy.
func TestResize18Sizes(t *testing.T) {
	x := onnxtest.RandFeed("x", 3, 1, 2, 3, 4)
	lin := onnxtest.AString("mode", "linear")
	full := runOne(t, "Resize", 13, []*onnxpb.AttributeProto{lin}, []onnxtest.In{x, onnxtest.Absent, onnxtest.Absent, onnxtest.InitI("sz", []int{4}, 1, 2, 5, 7)})
	part := runOne(t, "Resize", 18, []*onnxpb.AttributeProto{lin, onnxtest.AInts("axes", 3, 2)}, []onnxtest.In{x, onnxtest.Absent, onnxtest.Absent, onnxtest.InitI("sz", []int{2}, 7, 5)})
	onnxtest.AssertClose(t, "sizes for axes 3,2", part, full.Shape, full.Float64s(), 0)
	gins := []onnxtest.In{x, onnxtest.Absent, onnxtest.InitF("s", []int{1}, 1.5)}
	gradCheck(t, onnxtest.OneNode("Resize", 18, []*onnxpb.AttributeProto{lin, onnxtest.AInts("axes", -1)}, gins, "y"), onnxtest.Feeds(gins), "x", 1e-6)

	ins := []onnxtest.In{x, onnxtest.Absent, onnxtest.Absent, onnxtest.InitI("sz", []int{2}, 7, 5)}
	_, err := tryGraph(onnxtest.OneNode("Resize", 18, []*onnxpb.AttributeProto{onnxtest.AInts("axes", 3, 2), onnxtest.AString("keep_aspect_ratio_policy", "not_larger")}, ins, "y"), onnxtest.Feeds(ins), nil)
	if err == nil || !strings.Contains(err.Error(), `keep_aspect_ratio_policy "not_larger" is not supported`) {
		t.Errorf("not_larger: got %v", err)
	}
	_, err = tryGraph(onnxtest.OneNode("Resize", 18, []*onnxpb.AttributeProto{onnxtest.AInts("axes", 2, 2)}, ins, "y"), onnxtest.Feeds(ins), nil)
	if err == nil || !strings.Contains(err.Error(), "axis 2 repeated") {
		t.Errorf("repeated axis: got %v", err)
	}
}

// TestResize19SymmetricORT checks half_pixel_symmetric (opset 19) against
// ONNX Runtime with scales whose output sizes are rounded down, where it
// differs from half_pixel.
func TestResize19SymmetricORT(t *testing.T) {
	r := rand.New(rand.NewSource(19))
	sc := func(v ...float32) *importer.Tensor { return importer.NewFloat32("s", []int{len(v)}, v) }
	sym := onnxtest.AString("coordinate_transformation_mode", "half_pixel_symmetric")
	cases := []oracleCase{
		{"linear up 1.7", []*onnxpb.AttributeProto{sym, onnxtest.AString("mode", "linear")}, []*importer.Tensor{onnxtest.RandUniform32(r, "x", 1, 2, 5, 3), nil, sc(1, 1, 1.7, 2.5)}},
		{"linear down 0.6", []*onnxpb.AttributeProto{sym, onnxtest.AString("mode", "linear")}, []*importer.Tensor{onnxtest.RandUniform32(r, "x", 1, 1, 6, 7), nil, sc(1, 1, 0.6, 0.45)}},
		{"nearest 1.3", []*onnxpb.AttributeProto{sym}, []*importer.Tensor{onnxtest.RandUniform32(r, "x", 2, 1, 4, 5), nil, sc(1, 1, 1.3, 1.9)}},
	}
	checkAgainstORT(t, "Resize", 19, cases, 1e-5)
	ins := []onnxtest.In{onnxtest.RandFeed("x", 4, 1, 1, 5, 3), onnxtest.Absent, onnxtest.InitF("s", []int{4}, 1, 1, 1.7, 2.5)}
	gradCheck(t, onnxtest.OneNode("Resize", 19, []*onnxpb.AttributeProto{sym, onnxtest.AString("mode", "linear")}, ins, "y"), onnxtest.Feeds(ins), "x", 1e-6)
}
