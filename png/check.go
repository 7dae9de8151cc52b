package png

import (
	"fmt"
	"math"
)

// checkShapes panics when dst, J and grad do not fit together.
func checkShapes(dst []float32, J Jacobian, grad Gradient) {
	checkJacobian(J)
	if len(dst) != J.N {
		panic(fmt.Sprintf("png: len(dst) = %d, want n = %d", len(dst), J.N))
	}
	if grad.Coef != nil && len(grad.Coef) != J.M {
		panic(fmt.Sprintf("png: len(Gradient.Coef) = %d, want m = %d", len(grad.Coef), J.M))
	}
	if grad.Extra != nil && len(grad.Extra) != J.N {
		panic(fmt.Sprintf("png: len(Gradient.Extra) = %d, want n = %d", len(grad.Extra), J.N))
	}
}

// isFinite reports whether v is neither NaN nor ±Inf.
func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// checkFinite returns an error wrapping ErrNonFinite when a task gradient
// (seen through K_ii = ‖∇ℓ_i‖², non-finite iff ∇ℓ_i has a NaN or ±Inf),
// J·Extra (non-finite when Extra is) or Coef holds a non-finite value.
func checkFinite(K, je, coef []float64, m int) error {
	for i := 0; i < m; i++ {
		if !isFinite(K[i*m+i]) {
			return fmt.Errorf("png: gradient of task %d has ‖∇ℓ‖² = %v: %w", i, K[i*m+i], ErrNonFinite)
		}
	}
	for i, v := range je {
		if !isFinite(v) {
			return fmt.Errorf("png: Gradient.Extra is not finite (J·Extra[%d] = %v): %w", i, v, ErrNonFinite)
		}
	}
	for i, v := range coef {
		if !isFinite(v) {
			return fmt.Errorf("png: Gradient.Coef[%d] = %v: %w", i, v, ErrNonFinite)
		}
	}
	return nil
}

// errNoTasks is returned for a Jacobian with m = 0.
var errNoTasks = fmt.Errorf("png: Jacobian has no tasks (m = 0), want m ≥ 1")

// finishNorm returns an error when the direction overflowed float32.
func finishNorm(vnorm float64) error {
	if !isFinite(vnorm) {
		return fmt.Errorf("png: direction overflows float32 (‖v‖ = %v): %w", vnorm, ErrNonFinite)
	}
	return nil
}
