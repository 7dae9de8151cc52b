package png

import (
	"fmt"
	"math"
)

// Constrain's update within a per-coordinate bound: the trust region of an
// optimizer that normalises its step (Adam moves coordinate c by at most
// bound[c] per unit rate, whatever gradient it is handed). The first-order
// metric P = 1/(√v̂+ε) is Adam's response to a small change of its
// gradient; a change large beside √v̂ saturates. Where the gradient has been
// small, P is huge, and the unbounded correction P∘Jᵀλ moved single
// weights by hundreds of Adam steps at once (LeNet2 with a heavily
// weighted drift: |u_c| = 513 where Adam itself moves at most about 1).
//
// With the bound R the problem is
//
//	minimise ½‖u − prop‖²_{P⁻¹}  subject to  Ju ≥ φ, −R ≤ u ≤ R,
//
// whose dual over λ ≥ 0 (m values) minimises the convex, piecewise
// quadratic h(λ) = max over the box of λᵀ(Ju − φ1) − ½‖u − prop‖²_{P⁻¹},
// attained at u(λ) = clip(prop + P∘Jᵀλ, −R, R), with gradient Ju(λ) − φ1
// and generalised Hessian J_F P_F J_Fᵀ over the coordinates F not at the
// bound. boxDual minimises it by projected Newton steps (each the small
// QP SolveDual solves) with a backtracking line search; on the right piece
// one full step is exact.

// boxMaxIter bounds boxDual's Newton steps; boxTol is its tolerance on the
// projected gradient relative to each task's largest rate within the box,
// Σ_c |J_ic|·R_c.
const (
	boxMaxIter = 60
	boxTol     = 1e-9
)

// boxEval is h, ∇h and the generalised Hessian at one λ.
type boxEval struct {
	h       float64
	grad    []float64 // Ju(λ) − φ
	H       []float64 // J_F P_F J_Fᵀ (m×m)
	clipped int       // coordinates at the bound
}

// boxPass evaluates h at lambda in one pass over J (columns split across
// workers, partials summed in worker order: deterministic). It also
// returns Σ_c |J_ic|·R_c in top when top is not nil.
func boxPass(J Jacobian, lambda []float64, P, prop, R []float32, phi float64, workers int, top []float64) boxEval {
	m, n := J.M, J.N
	w := numWorkers(workers, n)
	stride := 1 + m + m*m + 1 + m // h, grad, H, clipped, top
	parts := make([]float64, w*stride)
	splitCols(n, w, 1, func(wi, lo, hi int) {
		pt := parts[wi*stride : (wi+1)*stride]
		pg, pH, ptop := pt[1:1+m], pt[1+m:1+m+m*m], pt[2+m+m*m:]
		col := make([]float64, m)
		for c := lo; c < hi; c++ {
			var s float64
			for i := 0; i < m; i++ {
				col[i] = float64(J.Data[i*n+c])
				s += lambda[i] * col[i]
			}
			p, r := 1.0, math.Inf(1)
			if P != nil {
				p = float64(P[c])
			}
			if R != nil {
				r = float64(R[c])
			}
			x := float64(prop[c])
			u := x + p*s
			free := true
			if u > r {
				u, free = r, false
			} else if u < -r {
				u, free = -r, false
			}
			d := u - x
			pt[0] += s*u - d*d/(2*p)
			for i := 0; i < m; i++ {
				pg[i] += col[i] * u
				if top != nil {
					ptop[i] += math.Abs(col[i]) * r
				}
			}
			if free {
				for i := 0; i < m; i++ {
					a := p * col[i]
					for j := 0; j <= i; j++ {
						pH[i*m+j] += a * col[j]
					}
				}
			} else {
				pt[1+m+m*m]++
			}
		}
	})
	e := boxEval{grad: make([]float64, m), H: make([]float64, m*m)}
	for wi := 0; wi < w; wi++ {
		pt := parts[wi*stride : (wi+1)*stride]
		e.h += pt[0]
		for i := 0; i < m; i++ {
			e.grad[i] += pt[1+i]
			for j := 0; j <= i; j++ {
				e.H[i*m+j] += pt[1+m+i*m+j]
			}
			if top != nil {
				top[i] += pt[2+m+m*m+i]
			}
		}
		e.clipped += int(pt[1+m+m*m])
	}
	for i := 0; i < m; i++ {
		e.grad[i] -= phi
		e.h -= phi * lambda[i]
		for j := 0; j < i; j++ {
			e.H[j*m+i] = e.H[i*m+j]
		}
	}
	return e
}

// boxDual returns the λ ≥ 0 minimising h, starting from lambda (the
// unbounded problem's solution), and the number of coordinates at the
// bound there. It reports ErrUnbounded when the rate φ cannot be met within
// the box (h falls without bound, or the steps end with a constraint still
// violated).
func boxDual(J Jacobian, lambda []float64, P, prop, R []float32, phi float64, workers int) ([]float64, int, error) {
	m := J.M
	top := make([]float64, m)
	e := boxPass(J, lambda, P, prop, R, phi, workers, top)
	tol := make([]float64, m)
	for i := range tol {
		tol[i] = boxTol * (top[i] + math.Abs(phi))
	}
	lambda = append([]float64(nil), lambda...)
	for it := 0; ; it++ {
		if boxStationary(lambda, e.grad, tol) {
			return lambda, e.clipped, nil
		}
		if it == boxMaxIter {
			break
		}
		// Newton: the local model ½(x−λ)ᵀH(x−λ) + ∇hᵀ(x−λ) over x ≥ 0,
		// H lifted by a trace-relative μ so that the small QP is bounded
		// where every coordinate of some task is at the bound.
		H := append([]float64(nil), e.H...)
		var tr float64
		for i := 0; i < m; i++ {
			tr += H[i*m+i]
		}
		mu := 1e-10*tr + 1e-300
		for i := 0; i < m; i++ {
			H[i*m+i] += mu
		}
		b := make([]float64, m)
		for i := 0; i < m; i++ {
			b[i] = e.grad[i]
			for j := 0; j < m; j++ {
				b[i] -= H[i*m+j] * lambda[j]
			}
		}
		x, err := SolveDual(H, m, b)
		if err != nil {
			return lambda, e.clipped, err
		}
		var slope float64
		d := make([]float64, m)
		for i := range d {
			d[i] = x[i] - lambda[i]
			slope += e.grad[i] * d[i]
		}
		if !(slope < 0) {
			break // no descent left: rounding
		}
		moved := false
		for t := 1.0; t > 1e-12; t /= 2 {
			next := make([]float64, m)
			for i := range next {
				next[i] = math.Max(lambda[i]+t*d[i], 0)
			}
			ne := boxPass(J, next, P, prop, R, phi, workers, nil)
			if math.IsNaN(ne.h) || math.IsInf(ne.h, 0) {
				return lambda, e.clipped, fmt.Errorf("png: Constrain within the bound: dual value %v: %w", ne.h, ErrNonFinite)
			}
			if ne.h <= e.h+1e-4*t*slope {
				lambda, e, moved = next, ne, true
				break
			}
		}
		if !moved {
			break
		}
		for _, l := range lambda {
			if l > 1e300 {
				return lambda, e.clipped, fmt.Errorf("png: Constrain: rate φ = %g out of reach within the bound: %w", phi, ErrUnbounded)
			}
		}
	}
	for i, g := range e.grad {
		if g < -tol[i]*1e3 {
			return lambda, e.clipped, fmt.Errorf("png: Constrain: rate φ = %g out of reach within the bound (task %d short by %g): %w", phi, i, -g, ErrUnbounded)
		}
	}
	return lambda, e.clipped, nil
}

// boxStationary reports whether λ ≥ 0 with gradient grad satisfies the
// optimality conditions of min h over λ ≥ 0 to tol: ∇h_i ≈ 0 where
// λ_i > 0, ∇h_i ≥ 0 (the constraint holds) where λ_i = 0.
func boxStationary(lambda, grad, tol []float64) bool {
	for i, l := range lambda {
		if grad[i] < -tol[i] || (l > 0 && grad[i] > tol[i]) {
			return false
		}
	}
	return true
}

// boxCombine writes dst = clip(prop + P∘(Jᵀλ), −R, R), each element
// accumulated in float64 and rounded once.
func boxCombine(dst []float32, J Jacobian, lambda []float64, P, prop, R []float32, workers int) {
	m, n := J.M, J.N
	w := numWorkers(workers, n)
	splitCols(n, w, 1, func(_, lo, hi int) {
		for c := lo; c < hi; c++ {
			var s float64
			for i := 0; i < m; i++ {
				if lambda[i] != 0 {
					s += lambda[i] * float64(J.Data[i*n+c])
				}
			}
			if P != nil {
				s *= float64(P[c])
			}
			u := float64(prop[c]) + s
			if R != nil {
				r := float64(R[c])
				u = math.Max(-r, math.Min(r, u))
			}
			dst[c] = float32(u)
		}
	})
}

// clippedRate returns min_i ∇ℓ_iᵀũ for ũ = clip(scale·P∘Jᵀω, −R, R), the
// min-norm update of the metric held within the box, and whether the box
// clipped it.
func clippedRate(J Jacobian, omega []float64, P, R []float32, scale float64, workers int) (float64, bool) {
	m, n := J.M, J.N
	w := numWorkers(workers, n)
	parts := make([]float64, w*(m+1))
	splitCols(n, w, 1, func(wi, lo, hi int) {
		q := parts[wi*(m+1) : (wi+1)*(m+1)]
		for c := lo; c < hi; c++ {
			var s float64
			for i := 0; i < m; i++ {
				s += omega[i] * float64(J.Data[i*n+c])
			}
			if P != nil {
				s *= float64(P[c])
			}
			u := scale * s
			if r := float64(R[c]); math.Abs(u) > r {
				u, q[m] = math.Copysign(r, u), 1
			}
			for i := 0; i < m; i++ {
				q[i] += float64(J.Data[i*n+c]) * u
			}
		}
	})
	q := make([]float64, m)
	clipped := false
	for wi := 0; wi < w; wi++ {
		for i := range q {
			q[i] += parts[wi*(m+1)+i]
		}
		clipped = clipped || parts[wi*(m+1)+m] != 0
	}
	r := math.Inf(1)
	for _, x := range q {
		r = math.Min(r, x)
	}
	return r, clipped
}
