package onnxops

import (
	"math"
	"testing"
)

// TestSigmoidFwd32Dense checks Sigmoid's float32 forward kernel against
// float32(sigmoid64(x)), bit for bit, on every 127th float32 of [−20, 20]
// by bit pattern (over 2^24 inputs), in one call long enough to be split
// among goroutines.
func TestSigmoidFwd32Dense(t *testing.T) {
	const stride = 127
	twenty := uint64(math.Float32bits(20))
	var x []float32
	for _, sign := range []uint64{0, 1 << 31} {
		for b := uint64(0); b <= twenty; b += stride {
			x = append(x, math.Float32frombits(uint32(sign|b)))
		}
	}
	if len(x) < 1<<24 {
		t.Fatalf("%d inputs, want ≥ 2^24", len(x))
	}
	y := make([]float32, len(x))
	sigmoidFwd32(y, [][]float32{x})
	bad := 0
	for i, v := range x {
		if want := float32(sigmoid64(float64(v))); math.Float32bits(y[i]) != math.Float32bits(want) {
			if bad < 5 {
				t.Errorf("sigmoidFwd32: σ(%v) = %v, float32(sigmoid64) %v", v, y[i], want)
			}
			bad++
		}
	}
	if bad != 0 {
		t.Fatalf("%d of %d inputs differ", bad, len(x))
	}
}
