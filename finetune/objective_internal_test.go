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

// TestTradeOnly checks Settings.MultiTrade on the energy of a dominated
// pair and of a pair along the front: the push that would raise both
// losses of the worse model (and lower both of the better) is removed, a
// pure trade is kept, and what is left always sums to zero over the tasks.
func TestTradeOnly(t *testing.T) {
	for _, tc := range []struct {
		name   string
		in     [][]float64 // ∂E/∂L_k per model
		want   [][]float64
		scaled [][]float64 // after the per-model unit scaling that follows
	}{
		// Model 1 beats model 0 on both tasks: the energy pushes them
		// apart along (1, 2). Only the sideways part (∓0.5, ±0.5) stays.
		{"dominated pair", [][]float64{{-1, -2}, {1, 2}}, [][]float64{{0.5, -0.5}, {-0.5, 0.5}},
			[][]float64{{math.Sqrt2 / 2, -math.Sqrt2 / 2}, {-math.Sqrt2 / 2, math.Sqrt2 / 2}}},
		// Already a trade: unchanged.
		{"trade", [][]float64{{1, -1}, {-3, 3}}, [][]float64{{1, -1}, {-3, 3}},
			[][]float64{{math.Sqrt2 / 2, -math.Sqrt2 / 2}, {-math.Sqrt2 / 2, math.Sqrt2 / 2}}},
		// Straight along 1 (no trade at all): nothing left, no NaN.
		{"no trade", [][]float64{{2, 2, 2}}, [][]float64{{0, 0, 0}}, [][]float64{{0, 0, 0}}},
		{"three tasks", [][]float64{{3, 0, 0}}, [][]float64{{2, -1, -1}},
			[][]float64{{2 / math.Sqrt(6), -1 / math.Sqrt(6), -1 / math.Sqrt(6)}}},
	} {
		got := tc.in
		tradeOnly(got)
		for k := range got {
			var sum float64
			for i, x := range got[k] {
				sum += x
				if math.Abs(x-tc.want[k][i]) > 1e-15 {
					t.Errorf("%s: model %d = %v, want %v", tc.name, k, got[k], tc.want[k])
					break
				}
			}
			if math.Abs(sum) > 1e-15 {
				t.Errorf("%s: model %d sums to %g, want 0", tc.name, k, sum)
			}
		}
		scaleMulti(got, MultiPerModel)
		for k := range got {
			for i, x := range got[k] {
				if math.Abs(x-tc.scaled[k][i]) > 1e-15 {
					t.Errorf("%s: scaled model %d = %v, want %v", tc.name, k, got[k], tc.scaled[k])
					break
				}
			}
		}
	}
}
