package png

import "math"

// Tolerances of the active-set solver. The solver runs on problems
// normalised so that max K_ii = 1 and max |b_i| ≤ 1.
const (
	// rayTol: a step right-hand side whose component in the null space of
	// the free-set system exceeds rayTol·max(1, ‖r‖∞) is a direction of zero
	// curvature and strictly decreasing objective (a ray), not rounding.
	rayTol = 1e-10
	// multTol: a bound multiplier above −multTol·(1 + ‖x‖₁) counts as
	// non-negative (the bound stays active).
	multTol = 1e-12
	// stepTol: a subspace step with max |p_i| ≤ stepTol·(1 + max x_i) means
	// x already minimises the objective on its free set.
	stepTol = 1e-14
	// maxRefine bounds the full steps taken on one free set (the first
	// reaches the subspace minimiser; the rest only polish rounding).
	maxRefine = 2
)

// qpProblem is min ½xᵀKx + bᵀx over x ≥ 0 and, when simplex is set, also
// Σx = 1. K (m×m, row-major) must be symmetric positive semi-definite.
type qpProblem struct {
	K       []float64
	b       []float64 // nil means 0
	m       int
	simplex bool
}

// solveQP runs a primal active-set method on p: start from a feasible
// point (0, or the best vertex of the simplex), minimise on the current
// free set F by a minimum-norm step from the eigendecomposition of the
// free-set KKT matrix, move to the first blocking bound and free it when
// the step is infeasible, and otherwise free the bound with the most
// negative multiplier. Each step strictly decreases the objective, so no
// free set repeats and the method ends after finitely many steps; the
// iteration cap is only a guard against rounding.
//
// On a singular free-set system the step is the minimum-norm one. When the
// right-hand side has a component in the null space (a ray of zero
// curvature along which the objective decreases linearly) the solver walks
// along the ray to the first bound; when no bound blocks it, the problem
// is unbounded below and solveQP returns the ray (d ≥ 0, Kd = 0, bᵀd < 0)
// instead of x. With the simplex constraint this cannot happen.
//
// At the optimum, solveQP returns the minimum-norm minimiser on the free
// set (widened by the bounds whose multiplier is zero) when that point is
// feasible and satisfies the KKT conditions; otherwise the point the path
// reached.
func solveQP(p qpProblem) (x, ray []float64) {
	m := p.m
	x = make([]float64, m)
	free := make([]bool, m)
	if p.simplex {
		best, k := math.Inf(1), 0
		for i := 0; i < m; i++ {
			if v := 0.5*p.K[i*m+i] + p.bi(i); v < best {
				best, k = v, i
			}
		}
		x[k], free[k] = 1, true
	}
	w := make([]float64, m)
	var s subspace
	refine := 0
	for it := 0; it < 50*m+100; it++ {
		p.gradient(w, x)
		F := freeList(free)
		step, dir, isRay := s.step(p, F, w)
		if !isRay && (refine >= maxRefine || maxAbs(step) <= stepTol*(1+maxAbs(x))) {
			c := p.level(w, F)
			bi, best := -1, -multTol*(1+sumAbs(x))
			for i := 0; i < m; i++ {
				if !free[i] && w[i]-c < best {
					bi, best = i, w[i]-c
				}
			}
			if bi < 0 {
				break
			}
			free[bi] = true
			refine = 0
			continue
		}
		d := step
		if isRay {
			d = dir
		}
		alpha, block := 1.0, -1
		if isRay {
			alpha = math.Inf(1)
		}
		for k, i := range F {
			if d[k] < 0 {
				if t := x[i] / -d[k]; t < alpha {
					alpha, block = t, i
				}
			}
		}
		if block < 0 && isRay {
			ray = make([]float64, m)
			for k, i := range F {
				ray[i] = math.Max(d[k], 0)
			}
			return nil, ray
		}
		for k, i := range F {
			x[i] += alpha * d[k]
		}
		if block >= 0 {
			x[block] = 0
			for _, i := range F {
				if x[i] <= 0 {
					x[i], free[i] = 0, false
				}
			}
			refine = 0
		} else {
			refine++
		}
	}
	if p.simplex {
		normalise(x)
	}
	if y := p.canonical(x, free, &s); y != nil {
		x = y
	}
	return x, nil
}

// bi returns b_i (0 when b is nil).
func (p qpProblem) bi(i int) float64 {
	if p.b == nil {
		return 0
	}
	return p.b[i]
}

// gradient writes Kx + b into w.
func (p qpProblem) gradient(w, x []float64) {
	m := p.m
	for i := 0; i < m; i++ {
		s := p.bi(i)
		row := p.K[i*m : (i+1)*m]
		for j, xj := range x {
			s += row[j] * xj
		}
		w[i] = s
	}
}

// level returns the common value of the gradient on the free set that the
// bound multipliers are measured from: 0 without the simplex constraint,
// the mean of w over F (the equality multiplier) with it.
func (p qpProblem) level(w []float64, F []int) float64 {
	if !p.simplex || len(F) == 0 {
		return 0
	}
	var c float64
	for _, i := range F {
		c += w[i]
	}
	return c / float64(len(F))
}

// kkt returns the worst violation of the KKT conditions at a feasible x
// for the free set F: stationarity on F and the sign of the multipliers of
// the other bounds.
func (p qpProblem) kkt(x []float64, F []int, inF []bool) float64 {
	w := make([]float64, p.m)
	p.gradient(w, x)
	c := p.level(w, F)
	var r float64
	for i := 0; i < p.m; i++ {
		if inF[i] {
			r = math.Max(r, math.Abs(w[i]-c))
		} else {
			r = math.Max(r, c-w[i])
		}
	}
	return r
}

// canonical returns the minimum-norm minimiser on the widest free set
// that admits one (the final free set plus the bounds with zero
// multiplier, then the final free set alone), or nil when neither gives a
// feasible point at least as good (in KKT residual) as x.
func (p qpProblem) canonical(x []float64, free []bool, s *subspace) []float64 {
	m := p.m
	w := make([]float64, m)
	p.gradient(w, x)
	F := freeList(free)
	c := p.level(w, F)
	tol := multTol * (1 + sumAbs(x))
	wide := append([]bool(nil), free...)
	for i := 0; i < m; i++ {
		if !free[i] && w[i]-c <= tol {
			wide[i] = true
		}
	}
	ref := p.kkt(x, F, free)
	for _, set := range [][]bool{wide, free} {
		G := freeList(set)
		y := s.minNormPoint(p, G)
		if y == nil {
			continue
		}
		if p.kkt(y, G, set) <= math.Max(ref, tol) {
			return y
		}
	}
	return nil
}

// freeList returns the indices i with free[i].
func freeList(free []bool) []int {
	var F []int
	for i, f := range free {
		if f {
			F = append(F, i)
		}
	}
	return F
}

// normalise rescales x ≥ 0 to sum 1.
func normalise(x []float64) {
	var s float64
	for _, v := range x {
		s += v
	}
	if s > 0 {
		for i := range x {
			x[i] /= s
		}
	}
}

// maxAbs returns max |x_i| (0 for empty x).
func maxAbs(x []float64) float64 {
	var r float64
	for _, v := range x {
		r = math.Max(r, math.Abs(v))
	}
	return r
}

// sumAbs returns Σ|x_i|.
func sumAbs(x []float64) float64 {
	var r float64
	for _, v := range x {
		r += math.Abs(v)
	}
	return r
}
