package onnxops

import (
	"math/rand"
	"testing"

	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// TestHardActivations checks HardSigmoid and HardSwish by hand at the
// kinks, against ONNX Runtime on random values, and their gradients by
// finite differences away from the kinks.
func TestHardActivations(t *testing.T) {
	x := onnxtest.Feed("x", []int{7}, -4, -3, -1, 0, 1.5, 3, 4)
	onnxtest.AssertClose(t, "HardSigmoid default", runOne(t, "HardSigmoid", 13, nil, []onnxtest.In{x}), []int{7},
		[]float64{0, 0, 0.3, 0.5, 0.8, 1, 1}, 1e-7)
	onnxtest.AssertClose(t, "HardSigmoid 1/6", runOne(t, "HardSigmoid", 13, []*onnxpb.AttributeProto{onnxtest.AFloat("alpha", 1.0/6)}, []onnxtest.In{x}), []int{7},
		[]float64{0, 0, 1.0 / 3, 0.5, 0.75, 1, 1}, 1e-7)
	onnxtest.AssertClose(t, "HardSwish", runOne(t, "HardSwish", 14, nil, []onnxtest.In{x}), []int{7},
		[]float64{0, 0, -1.0 / 3, 0, 1.125, 3, 4}, 1e-12)

	r := rand.New(rand.NewSource(5))
	big := func() *importer.Tensor {
		t := onnxtest.RandUniform32(r, "x", 4, 25)
		for i := range t.F32 {
			t.F32[i] *= 5
		}
		return t
	}
	checkAgainstORT(t, "HardSigmoid", 14, []oracleCase{
		{"default", nil, []*importer.Tensor{big()}},
		{"torch", []*onnxpb.AttributeProto{onnxtest.AFloat("alpha", 1.0/6), onnxtest.AFloat("beta", 0.5)}, []*importer.Tensor{big()}},
	}, 1e-6)
	checkAgainstORT(t, "HardSwish", 14, []oracleCase{{"hardswish", nil, []*importer.Tensor{big()}}}, 1e-6)

	g := onnxtest.Feed("x", []int{6}, -4, -2.2, -0.7, 0.2, 2.2, 3.6)
	for _, c := range []struct {
		op    string
		opset int64
		attrs []*onnxpb.AttributeProto
	}{
		{"HardSigmoid", 13, nil}, {"HardSigmoid", 13, []*onnxpb.AttributeProto{onnxtest.AFloat("alpha", 1.0/6)}}, {"HardSwish", 14, nil},
	} {
		gradCheck(t, onnxtest.OneNode(c.op, c.opset, c.attrs, []onnxtest.In{g}, "y"), onnxtest.Feeds([]onnxtest.In{g}), "x", 1e-6)
	}
}
