package ops

import (
	"math"
	"testing"

	"gorgonia.org/tensor"
)

// TestBatchNormReluFused checks max(BatchNorm(x), 0) in one pass
// (bnEvalReluFwd, FuseReluInto's kernel) against BatchNorm then
// max(v, 0), bit for bit, in float32, on values giving −0 (+0 after Relu),
// NaN, ±Inf and both signs.
func TestBatchNormReluFused(t *testing.T) {
	x := []float32{1, -1, 0, float32(math.Copysign(0, -1)), float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0.25,
		2, -3, 0.5, -0.5, 7, -7, 1e-30, -1e-30}
	xs := tensor.Shape{2, 2, 4}
	in := []tensor.Tensor{
		newTensor(xs, x),
		newTensor(tensor.Shape{2}, []float32{1.5, -0.75}), // scale
		newTensor(tensor.Shape{2}, []float32{0, 0.25}),    // B
		newTensor(tensor.Shape{2}, []float32{0, -0.5}),    // mean
		newTensor(tensor.Shape{2}, []float32{1, 4}),       // var
	}
	got := data[float32](bnEvalReluFwd(in, 1e-5, make([]float32, len(x))))
	bn := data[float32](bnEvalFwd(in, 1e-5, make([]float32, len(x))))
	for i, v := range bn {
		want := max(v, 0)
		if math.Float32bits(got[i]) != math.Float32bits(want) && !(got[i] != got[i] && want != want) {
			t.Errorf("x[%d] = %v: fused %v [%#x], BatchNorm then Relu %v [%#x]", i, x[i], got[i], math.Float32bits(got[i]), want, math.Float32bits(want))
		}
	}
}
