package finetune

import (
	"math"
	"testing"
)

func TestScaleMulti(t *testing.T) {
	// Three points' energy gradients: lengths 5, 1 and 0.
	in := func() [][]float64 { return [][]float64{{3, -4}, {0.6, 0.8}, {0, 0}} }
	tests := []struct {
		scale string
		want  [][]float64
	}{
		// shared: all divided by the largest length (5), so the ratio
		// of the pushes (5:1) is kept.
		{MultiShared, [][]float64{{0.6, -0.8}, {0.12, 0.16}, {0, 0}}},
		// model (the default): each to unit length, the ratio lost.
		{"", [][]float64{{0.6, -0.8}, {0.6, 0.8}, {0, 0}}},
		{MultiPerModel, [][]float64{{0.6, -0.8}, {0.6, 0.8}, {0, 0}}},
		{MultiRaw, [][]float64{{3, -4}, {0.6, 0.8}, {0, 0}}},
	}
	for _, tt := range tests {
		got := in()
		scaleMulti(got, tt.scale)
		for k := range got {
			for i := range got[k] {
				if math.Abs(got[k][i]-tt.want[k][i]) > 1e-15 {
					t.Errorf("scale %q: point %d = %v, want %v", tt.scale, k, got[k], tt.want[k])
					break
				}
			}
		}
	}
	// All zero (models on top of each other far apart in no direction):
	// nothing to scale, no NaN.
	z := [][]float64{{0, 0}, {0, 0}}
	scaleMulti(z, MultiShared)
	if z[0][0] != 0 || z[1][1] != 0 {
		t.Errorf("zero gradients scaled to %v", z)
	}
}
