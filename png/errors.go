package png

import "errors"

// ErrNonFinite is returned (wrapped, with the task or point that caused it)
// when a task gradient or the criterion's gradient contains NaN or ±Inf.
// A caller may skip the batch or roll back the step.
var ErrNonFinite = errors.New("png: non-finite value")

// ErrUnbounded is returned by SolveDual when min over λ ≥ 0 of
// ½λᵀKλ + λᵀb has no minimiser: there is a direction d ≥ 0 with Kd = 0 and
// bᵀd < 0. For the PNG dual (b = Jz − φ1, φ > 0) this happens exactly when
// the zero vector lies in the convex hull of the task gradients (g = 0).
var ErrUnbounded = errors.New("png: dual QP unbounded below")
