package png

import (
	"fmt"
	"math"
)

// SolveDual returns λ minimising ½λᵀKλ + λᵀb over λ ≥ 0, the dual QP of the
// PNG step (b = Jz − φ1), for a symmetric positive semi-definite K (m×m,
// row-major).
//
// It runs an exact primal active-set method (see solveQP) on the problem
// scaled to max K_ii = 1 and max |b_i| = 1, so the answer does not depend
// on the units of the losses. K may be singular (duplicate, parallel or
// opposite gradients): the minimiser is then in general not unique but Kλ
// is, and SolveDual returns the minimum-norm minimiser on the widest
// optimal free set it finds (bounds with zero multiplier included) when
// that is feasible, otherwise the minimiser its path reached; either
// satisfies the KKT conditions to rounding (the tests check ≤ 1e-9 in
// scaled units).
//
// When the problem is unbounded below (a direction d ≥ 0 with Kd = 0 and
// bᵀd < 0, e.g. opposite gradients with φ > 0) SolveDual returns nil and an
// error wrapping ErrUnbounded; when K or b holds NaN or ±Inf, nil and an
// error wrapping ErrNonFinite. It panics if m < 1, len(K) != m·m or
// len(b) != m.
func SolveDual(K []float64, m int, b []float64) ([]float64, error) {
	if m < 1 || len(K) != m*m || len(b) != m {
		panic(fmt.Sprintf("png: SolveDual: len(K) = %d, len(b) = %d, m = %d, want m ≥ 1, len(K) = m·m, len(b) = m", len(K), len(b), m))
	}
	for i, v := range K {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("png: SolveDual: K[%d][%d] = %v: %w", i/m, i%m, v, ErrNonFinite)
		}
	}
	sb := 0.0
	for i, v := range b {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("png: SolveDual: b[%d] = %v: %w", i, v, ErrNonFinite)
		}
		sb = math.Max(sb, math.Abs(v))
	}
	sk := 0.0
	for i := 0; i < m; i++ {
		sk = math.Max(sk, K[i*m+i])
	}
	lambda := make([]float64, m)
	if sb == 0 {
		return lambda, nil
	}
	if sk == 0 {
		// K = 0 (PSD with zero diagonal): the objective is linear.
		for i, v := range b {
			if v < 0 {
				return nil, fmt.Errorf("png: SolveDual: K = 0 and b[%d] = %v < 0: %w", i, v, ErrUnbounded)
			}
		}
		return lambda, nil
	}
	Ks := make([]float64, m*m)
	for i, v := range K {
		Ks[i] = v / sk
	}
	bs := make([]float64, m)
	for i, v := range b {
		bs[i] = v / sb
	}
	x, ray := solveQP(qpProblem{K: Ks, b: bs, m: m})
	if ray != nil {
		return nil, fmt.Errorf("png: SolveDual: objective decreases without bound along λ ∝ %.3g: %w", ray, ErrUnbounded)
	}
	for i, v := range x {
		lambda[i] = v * sb / sk
	}
	return lambda, nil
}
