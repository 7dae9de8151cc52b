package onnxops

import (
	"math"
	"math/rand"
	"testing"
)

// TestSoftmax32MatchesFloat64 checks the float32 (Log)Softmax kernels
// against the float64 ones rounded once (the forward32Func rule), over
// shapes small enough to run on one goroutine and large enough to split.
func TestSoftmax32MatchesFloat64(t *testing.T) {
	cases := []struct {
		name            string
		outer, d, inner int
		logSm           bool
	}{
		{"log last axis", 5, 10, 1, true},
		{"softmax inner", 3, 4, 7, false},
		{"log split", 8, 13, 1024, true},
		{"softmax split", 256, 10, 32, false},
	}
	r := rand.New(rand.NewSource(6))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := c.outer * c.d * c.inner
			x32, g32 := make([]float32, n), make([]float32, n)
			x64, g64 := make([]float64, n), make([]float64, n)
			for i := range x32 {
				x32[i], g32[i] = float32(3*r.NormFloat64()), float32(r.NormFloat64())
				x64[i], g64[i] = float64(x32[i]), float64(g32[i])
			}
			y32, y64 := make([]float32, n), make([]float64, n)
			softmaxForward(y32, x32, c.outer, c.d, c.inner, c.logSm)
			softmaxForward(y64, x64, c.outer, c.d, c.inner, c.logSm)
			// The backward passes read the float32 output, as the graph does.
			yr := make([]float64, n)
			for i, v := range y32 {
				yr[i] = float64(v)
			}
			d32, d64 := make([]float32, n), make([]float64, n)
			softmaxBackward(d32, y32, g32, c.outer, c.d, c.inner, c.logSm)
			softmaxBackward(d64, yr, g64, c.outer, c.d, c.inner, c.logSm)
			for i := range y32 {
				if math.Float32bits(y32[i]) != math.Float32bits(float32(y64[i])) {
					t.Fatalf("output %d: %v, float64 path %v", i, y32[i], float32(y64[i]))
				}
				if math.Float32bits(d32[i]) != math.Float32bits(float32(d64[i])) {
					t.Fatalf("gradient %d: %v, float64 path %v", i, d32[i], float32(d64[i]))
				}
			}
		})
	}
}
