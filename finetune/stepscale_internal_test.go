package finetune

import (
	"math"
	"testing"
)

// TestStepScale checks ρ = ‖prop‖_{P⁻¹}/‖P∘v‖_{P⁻¹} on the proposals the
// optimizers really make after many steps of a direction sequence: a
// plain step is its direction (ρ = 1); momentum lengthens a steady
// direction to 1/(1−μ) and Adam normalises it (ρ → 1); under alternating
// (noise-like) directions both averages shrink and ρ falls well below 1;
// ρ never passes its steady value (the cap).
func TestStepScale(t *testing.T) {
	steady := func(int) []float32 { return []float32{0.3, -2, 0.05, 1} }
	flip := func(k int) []float32 {
		s := float32(1 - 2*(k%2))
		return []float32{0.3 * s, -2 * s, 0.05, 1 * s}
	}
	for _, tc := range []struct {
		name   string
		s      Settings
		dirs   func(int) []float32
		lo, hi float64
	}{
		{"plain/steady", Settings{Optimizer: "sgd"}, steady, 1, 1},
		{"plain/flip", Settings{Optimizer: "sgd"}, flip, 1, 1},
		{"momentum 0.9/steady", Settings{Optimizer: "sgd", Momentum: 0.9}, steady, 9.99, 10.01},
		{"momentum 0.9/flip", Settings{Optimizer: "sgd", Momentum: 0.9}, flip, 0, 0.7},
		{"adam/steady", Settings{Optimizer: "adam", Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}, steady, 0.999, 1.001},
		{"adam/flip", Settings{Optimizer: "adam", Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}, flip, 0, 0.2},
	} {
		var st OptState
		theta := make([]float32, 4)
		for k := 0; k < 200; k++ {
			tc.s.apply(theta, tc.dirs(k), nil, &st, 1e-3)
		}
		v := tc.dirs(200)
		prop, metric := make([]float32, 4), make([]float32, 4)
		var P []float32
		if tc.s.propose(prop, metric, make([]float32, len(v)), v, st, nil) {
			P = metric
		}
		rho := stepScale(prop, P, v, tc.s.steadyScale())
		if !(rho >= tc.lo && rho <= tc.hi) {
			t.Errorf("%s: ρ = %.6g, want in [%g, %g]", tc.name, rho, tc.lo, tc.hi)
		}
	}
	if rho := stepScale([]float32{1, 2}, nil, []float32{0, 0}, 10); rho != 10 {
		t.Errorf("zero direction: ρ = %v, want the cap 10", rho)
	}
	if rho := stepScale([]float32{30, 40}, nil, []float32{1, 0}, 10); rho != 10 {
		t.Errorf("direction shrunk below the memory: ρ = %v, want the cap 10", rho)
	}
	if rho := stepScale([]float32{3, 4}, []float32{1, 4}, []float32{1, 1}, 10); math.Abs(rho-math.Sqrt((9+4)/(1+4.0))) > 1e-12 {
		t.Errorf("metric: ρ = %v, want √((9/1+16/4)/(1+4)) = %v", rho, math.Sqrt(13/5.0))
	}
}
