package png

import (
	"math"
	"testing"
)

// TestEPOThreeTasks runs gradient steps along EPO's direction on three
// quadratic tasks ℓ_i = ‖θ − c_i‖² + 0.05 in R³ (c_i the unit vectors; the
// Pareto set is their convex hull) and checks that every run ends
// Pareto-stationary (g ≈ 0) on its preference ray, r_iℓ_i equal. The
// step decays (cosine): with m = 3 a constant step circles the ray at a
// distance proportional to the step (see EPO).
func TestEPOThreeTasks(t *testing.T) {
	for _, r := range [][]float64{{1, 1, 1}, {1, 2, 3}, {3, 1, 1.5}} {
		theta := []float64{-0.5, 0.8, 0.3}
		J := NewJacobian(3, 3)
		dst := make([]float32, 3)
		losses := make([]float64, 3)
		var info Info
		const steps = 20000
		for step := 0; step < steps; step++ {
			for i := 0; i < 3; i++ {
				var s float64
				for k := 0; k < 3; k++ {
					c := 0.0
					if k == i {
						c = 1
					}
					d := theta[k] - c
					s += d * d
					J.Data[i*3+k] = float32(2 * d)
				}
				losses[i] = s + 0.05
			}
			var err error
			if info, err = (EPO{Preference: r, Workers: 1}).Direction(dst, J, Gradient{Losses: losses}, nil); err != nil {
				t.Fatalf("r %v, step %d: %v", r, step, err)
			}
			lr := 0.02 * 0.5 * (1 + math.Cos(math.Pi*float64(step)/steps))
			for k := range theta {
				theta[k] -= lr * float64(dst[k])
			}
		}
		var lo, hi float64 = math.Inf(1), 0
		for i := range r {
			lo, hi = math.Min(lo, r[i]*losses[i]), math.Max(hi, r[i]*losses[i])
		}
		if hi-lo > 1e-3 || info.G > 1e-8 {
			t.Errorf("r %v: r⊙ℓ from %.6f to %.6f (spread %.2g, want ≤ 1e-3), g = %.2g (want ≤ 1e-8), θ = %v", r, lo, hi, hi-lo, info.G, theta)
		}
	}
}
