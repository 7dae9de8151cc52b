package onnxops

import (
	"math"
	"testing"

	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

func bnInputs() []onnxtest.In {
	return []onnxtest.In{
		onnxtest.Feed("x", []int{2, 2, 1, 2}, 1, 2, 3, 4, 5, 6, 7, 8),
		onnxtest.InitF("s", []int{2}, 2, 1), onnxtest.InitF("b", []int{2}, 0, 1),
		onnxtest.InitF("m", []int{2}, 1, 0), onnxtest.InitF("v", []int{2}, 3, 0.5),
	}
}

func TestBatchNormLowering(t *testing.T) {
	ins := bnInputs()
	got := runOne(t, "BatchNormalization", 15, []*onnxpb.AttributeProto{onnxtest.AFloat("epsilon", 1e-3)}, ins)
	x := ins[0].T.F64
	want := make([]float64, 8)
	for i, v := range x {
		c := (i / 2) % 2
		s, b, m, va := []float64{2, 1}[c], []float64{0, 1}[c], []float64{1, 0}[c], []float64{3, 0.5}[c]
		want[i] = s*(v-m)/math.Sqrt(va+float64(float32(1e-3))) + b
	}
	onnxtest.AssertClose(t, "BatchNormalization eval", got, []int{2, 2, 1, 2}, want, 1e-9)

	// training_mode = 1: batch statistics; channel 0 holds 1 2 5 6.
	got = runOne(t, "BatchNormalization", 15, []*onnxpb.AttributeProto{onnxtest.AInt("training_mode", 1)}, ins)
	sd := math.Sqrt(4.25 + float64(float32(1e-5)))
	want0 := []float64{2 * (1 - 3.5) / sd, 2 * (2 - 3.5) / sd}
	onnxtest.AssertClose(t, "BatchNormalization train", got, []int{2, 2, 1, 2}, append(want0, got.Float64s()[2:]...), 1e-9)
}

func TestBatchNormLoweringGradient(t *testing.T) {
	for _, train := range []int64{0, 1} {
		ins := bnInputs()
		ins[0] = onnxtest.RandFeed("x", 5, 3, 2, 2, 2)
		m := onnxtest.OneNode("BatchNormalization", 15, []*onnxpb.AttributeProto{onnxtest.AInt("training_mode", train)}, ins, "y")
		for _, wrt := range []string{"x", "s", "b"} {
			gradCheck(t, m, onnxtest.Feeds(ins), wrt, 1e-6)
		}
	}
}
