package finetune

import (
	"math"
	"math/rand/v2"
	"testing"
)

// adamStep is Adam's step per unit rate at step t from moments m0, w0
// when handed g (ε = 0).
func adamStep(b1, b2 float64, t int, m0, w0, g float64) float64 {
	c1, c2 := 1-math.Pow(b1, float64(t)), 1-math.Pow(b2, float64(t))
	m, w := b1*m0+(1-b1)*g, b2*w0+(1-b2)*g*g
	return (m / c1) / math.Sqrt(w/c2)
}

// TestAdamBound checks adamBound against a search over the gradient: no
// gradient moves the coordinate further, and the bound is reached (within
// 0.1%) by some gradient; with no memory it is 1 at the first step.
func TestAdamBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	const b1, b2 = 0.9, 0.999
	if r := adamBound(b1, b2, 1-b1, 1-b2, 0, 0); math.Abs(r-1) > 1e-12 {
		t.Errorf("first step, no memory: bound %v, want 1", r)
	}
	for trial := 0; trial < 200; trial++ {
		tt := 2 + rng.IntN(200)
		c1, c2 := 1-math.Pow(b1, float64(tt)), 1-math.Pow(b2, float64(tt))
		m0 := rng.NormFloat64() * math.Pow(10, 4*rng.Float64()-2)
		w0 := m0 * m0 * (1 + 10*rng.Float64()) * (1 - math.Pow(b2, float64(tt-1)))
		R := adamBound(b1, b2, c1, c2, m0, w0)
		var best float64
		for k := -4000; k <= 4000; k++ {
			g := math.Sinh(float64(k)/200) * math.Abs(m0)
			best = math.Max(best, math.Abs(adamStep(b1, b2, tt, m0, w0, g)))
		}
		if best > R*(1+1e-9) || best < R*(1-1e-3) {
			t.Fatalf("t=%d m0=%g w0=%g: largest step over the gradients %v, bound %v", tt, m0, w0, best, R)
		}
	}
}

// TestAdamStepBound checks B_t over gradient histories: Adam run on
// random histories never steps past it, and the history g_k ∝ (β1/β2)^{t−k}
// (Cauchy–Schwarz's equality case) reaches it; every per-coordinate bound
// adamBound of a history is within it.
func TestAdamStepBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	const b1, b2 = 0.9, 0.999
	if B := AdamStepBound(b1, b2, 1); math.Abs(B-1) > 1e-12 {
		t.Errorf("B_1 = %v, want 1", B)
	}
	for _, tt := range []int{2, 5, 30, 300, 3000} {
		B := AdamStepBound(b1, b2, tt)
		c1, c2 := 1-math.Pow(b1, float64(tt)), 1-math.Pow(b2, float64(tt))
		worst := 0.0
		for trial := 0; trial < 300; trial++ {
			var m, w float64
			scale := math.Pow(10, 3*rng.Float64())
			for k := 1; k <= tt; k++ {
				g := rng.NormFloat64() * scale
				if trial%3 == 0 {
					g = math.Pow(b1/b2, float64(tt-k)) * (1 + 0.1*rng.NormFloat64())
				}
				if k == tt {
					ck1, ck2 := 1-math.Pow(b1, float64(k)), 1-math.Pow(b2, float64(k))
					if R := adamBound(b1, b2, ck1, ck2, m, w); R > B*(1+1e-12) {
						t.Fatalf("t=%d: per-coordinate bound %v above B_t = %v", tt, R, B)
					}
				}
				m, w = b1*m+(1-b1)*g, b2*w+(1-b2)*g*g
			}
			step := math.Abs(m/c1) / math.Sqrt(w/c2)
			worst = math.Max(worst, step)
			if step > B*(1+1e-12) {
				t.Fatalf("t=%d: Adam stepped %v, B_t = %v", tt, step, B)
			}
		}
		// The equality case.
		var m, w float64
		for k := 1; k <= tt; k++ {
			g := math.Pow(b1/b2, float64(tt-k))
			m, w = b1*m+(1-b1)*g, b2*w+(1-b2)*g*g
		}
		if eq := math.Abs(m/c1) / math.Sqrt(w/c2); math.Abs(eq-B) > 1e-9*B {
			t.Errorf("t=%d: the extremal history steps %v, B_t = %v", tt, eq, B)
		}
		t.Logf("t=%d: B_t = %.4f, largest random step %.4f", tt, B, worst)
	}
}
