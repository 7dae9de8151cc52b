package onnxops

import (
	"math"
	"testing"

	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

func TestReduceExtra(t *testing.T) {
	// x = [[1, -2, 3], [0.5, 4, -1]]
	x := []float64{1, -2, 3, 0.5, 4, -1}
	lse := func(v ...float64) float64 {
		s := 0.0
		for _, e := range v {
			s += math.Exp(e)
		}
		return math.Log(s)
	}
	cases := []struct {
		op        string
		attrs     []*onnxpb.AttributeProto
		wantShape []int
		want      []float64
	}{
		{"ReduceMax", []*onnxpb.AttributeProto{onnxtest.AInts("axes", 1)}, []int{2, 1}, []float64{3, 4}},
		{"ReduceMin", []*onnxpb.AttributeProto{onnxtest.AInts("axes", 0), onnxtest.AInt("keepdims", 0)}, []int{3}, []float64{0.5, -2, -1}},
		{"ReduceL1", nil, []int{1, 1}, []float64{11.5}},
		{"ReduceSumSquare", []*onnxpb.AttributeProto{onnxtest.AInts("axes", -1), onnxtest.AInt("keepdims", 0)}, []int{2}, []float64{14, 17.25}},
		{"ReduceLogSumExp", []*onnxpb.AttributeProto{onnxtest.AInts("axes", 1)}, []int{2, 1}, []float64{lse(1, -2, 3), lse(0.5, 4, -1)}},
		{"ReduceLogSum", []*onnxpb.AttributeProto{onnxtest.AInts("axes", 0)}, []int{1, 3}, []float64{math.Log(1.5), math.Log(2), math.Log(2)}},
	}
	for _, c := range cases {
		t.Run(c.op, func(t *testing.T) {
			ins := []onnxtest.In{onnxtest.Feed("x", []int{2, 3}, x...)}
			onnxtest.AssertClose(t, c.op, runOne(t, c.op, 13, c.attrs, ins), c.wantShape, c.want, 1e-12)
			if c.op == "ReduceLogSum" {
				ins = []onnxtest.In{onnxtest.Feed("x", []int{2, 3}, 1, 2, 3, 0.5, 4, 1)} // positive sums
			}
			gradCheck(t, onnxtest.OneNode(c.op, 13, c.attrs, ins, "y"), onnxtest.Feeds(ins), "x", 1e-6)
		})
	}
}

func TestReduceMaxTiesShareGradient(t *testing.T) {
	ins := []onnxtest.In{onnxtest.Feed("x", []int{4}, 2, 5, 5, 1)}
	m := onnxtest.OneNode("ReduceMax", 13, []*onnxpb.AttributeProto{onnxtest.AInt("keepdims", 0)}, ins, "y")
	onnxtest.AssertClose(t, "ReduceMax", forward(t, m, onnxtest.Feeds(ins))["y"], []int{}, []float64{5}, 0)
	// Away from the tie the FD check applies.
	ins = []onnxtest.In{onnxtest.Feed("x", []int{4}, 2, 5, 4, 1)}
	gradCheck(t, onnxtest.OneNode("ReduceMax", 13, []*onnxpb.AttributeProto{onnxtest.AInt("keepdims", 0)}, ins, "y"), onnxtest.Feeds(ins), "x", 1e-6)
}

func TestArgMaxArgMin(t *testing.T) {
	// x = [[1, 3, 3], [4, 0, 4]]
	x := []float64{1, 3, 3, 4, 0, 4}
	cases := []struct {
		op        string
		opset     int64
		attrs     []*onnxpb.AttributeProto
		wantShape []int
		want      []float64
	}{
		{"ArgMax", 11, []*onnxpb.AttributeProto{onnxtest.AInt("axis", 1)}, []int{2, 1}, []float64{1, 0}},
		{"ArgMax", 12, []*onnxpb.AttributeProto{onnxtest.AInt("axis", 1), onnxtest.AInt("select_last_index", 1)}, []int{2, 1}, []float64{2, 2}},
		{"ArgMin", 11, []*onnxpb.AttributeProto{onnxtest.AInt("axis", 0), onnxtest.AInt("keepdims", 0)}, []int{3}, []float64{0, 1, 0}},
		{"ArgMin", 11, []*onnxpb.AttributeProto{onnxtest.AInt("axis", -1), onnxtest.AInt("keepdims", 0)}, []int{2}, []float64{0, 1}},
	}
	for _, c := range cases {
		ins := []onnxtest.In{onnxtest.Feed("x", []int{2, 3}, x...)}
		onnxtest.AssertClose(t, c.op, runOne(t, c.op, c.opset, c.attrs, ins), c.wantShape, c.want, 0)
	}
}
