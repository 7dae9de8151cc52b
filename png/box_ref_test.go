package png

import (
	"fmt"
	"math"
)

// The dual solver Constrain used before its passes over the weights were
// bounded: projected Newton steps with a backtracking line search, each
// trial a full pass over the weights. The tests hold the bounded solver to
// its answers.

// refBoxMaxIter bounds refBoxDual's Newton steps.
const refBoxMaxIter = 60

// refBoxEval is h, ∇h and the generalised Hessian at one λ.
type refBoxEval struct {
	h       float64
	grad    []float64 // Ju(λ) − φ
	H       []float64 // J_F P_F J_Fᵀ (m×m)
	clipped int       // coordinates at the bound
}

// refBoxPass evaluates h at lambda in one pass over J (columns split across
// workers, partials summed in worker order: deterministic). It also
// returns Σ_c |J_ic|·R_c in top when top is not nil.
func refBoxPass(J Jacobian, lambda []float64, P, prop, R []float32, phi float64, workers int, top []float64) refBoxEval {
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
	e := refBoxEval{grad: make([]float64, m), H: make([]float64, m*m)}
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

// refBoxDual returns the λ ≥ 0 minimising h, starting from lambda (the
// unbounded problem's solution), and the number of coordinates at the
// bound there. It reports ErrUnbounded when the rate φ cannot be met within
// the box (h falls without bound, or the steps end with a constraint still
// violated).
func refBoxDual(J Jacobian, lambda []float64, P, prop, R []float32, phi float64, workers int) ([]float64, int, error) {
	m := J.M
	top := make([]float64, m)
	e := refBoxPass(J, lambda, P, prop, R, phi, workers, top)
	tol := make([]float64, m)
	for i := range tol {
		tol[i] = boxTol * (top[i] + math.Abs(phi))
	}
	lambda = append([]float64(nil), lambda...)
	for it := 0; ; it++ {
		if boxStationary(lambda, e.grad, tol) {
			return lambda, e.clipped, nil
		}
		if it == refBoxMaxIter {
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
			ne := refBoxPass(J, next, P, prop, R, phi, workers, nil)
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

// withinBound reports whether prop + P∘(Jᵀλ) lies within ±bound.
func withinBound(J Jacobian, lambda []float64, P, prop, bound []float32, workers int) bool {
	m, n := J.M, J.N
	w := numWorkers(workers, n)
	out := make([]bool, w)
	splitCols(n, w, 1, func(wi, lo, hi int) {
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
			if math.Abs(float64(prop[c])+s) > float64(bound[c]) {
				out[wi] = true
				return
			}
		}
	})
	for _, o := range out {
		if o {
			return false
		}
	}
	return true
}
