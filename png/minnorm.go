package png

import (
	"fmt"
	"math"
)

// MinNorm returns the minimum-norm point of the convex hull of the task
// gradients, given their Gram matrix K (m×m, row-major, symmetric positive
// semi-definite): omega minimises ωᵀKω over the simplex {ω ≥ 0, Σω = 1}
// and g = omegaᵀ K omega ≥ 0. Jᵀω is the MGD direction and g = ‖Jᵀω‖² the
// quantity g(θ) of PNG; g = 0 means θ is Pareto stationary.
//
// The problem is solved exactly by a primal active-set method on the
// simplex (see solveQP), on K scaled to max K_ii = 1; m ≤ 32 is the design
// range but any m works. Duplicate, parallel, opposite and zero gradients
// and rank-deficient K are handled: when the minimiser is not unique MinNorm
// returns the minimum-norm minimiser on the widest optimal face it finds
// (equal gradients share their weight equally). A zero K gives the uniform
// ω and g = 0. When K contains NaN or ±Inf, MinNorm returns the uniform ω
// and g = NaN (the Method implementations check J before calling it).
//
// MinNorm panics if m < 1 or len(K) != m·m.
func MinNorm(K []float64, m int) (omega []float64, g float64) {
	if m < 1 || len(K) != m*m {
		panic(fmt.Sprintf("png: MinNorm: len(K) = %d, m = %d, want m ≥ 1 and len(K) = m·m", len(K), m))
	}
	scale := 0.0
	finite := true
	for i, v := range K {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			finite = false
		}
		if i%(m+1) == 0 && v > scale {
			scale = v
		}
	}
	uniform := func() []float64 {
		w := make([]float64, m)
		for i := range w {
			w[i] = 1 / float64(m)
		}
		return w
	}
	if !finite {
		return uniform(), math.NaN()
	}
	if scale == 0 {
		return uniform(), 0
	}
	Ks := make([]float64, m*m)
	for i, v := range K {
		Ks[i] = v / scale
	}
	omega, _ = solveQP(qpProblem{K: Ks, m: m, simplex: true})
	return omega, quad(K, omega)
}

// quad returns max(0, xᵀKx) for an m×m K with m = len(x).
func quad(K, x []float64) float64 {
	m := len(x)
	var s float64
	for i, xi := range x {
		if xi == 0 {
			continue
		}
		var r float64
		for j, xj := range x {
			r += K[i*m+j] * xj
		}
		s += xi * r
	}
	return math.Max(s, 0)
}
