package png

// subspace builds and solves the equality-constrained problems of the
// active-set method on a free set F: the KKT matrix K_FF (bordered by a row
// and column of ones under the simplex constraint) and its right-hand
// sides.
type subspace struct {
	solver symSolver
	a, r   []float64
	sol    []float64
	null   []float64
}

// setup builds the free-set KKT matrix for F and factors it; it reports
// false when the factorisation failed.
func (s *subspace) setup(p qpProblem, F []int) (size int, ok bool) {
	f := len(F)
	size = f
	if p.simplex {
		size++
	}
	s.a = grow(s.a, size*size)
	for k, i := range F {
		for l, j := range F {
			s.a[k*size+l] = p.K[i*p.m+j]
		}
	}
	if p.simplex {
		for k := 0; k < f; k++ {
			s.a[k*size+f] = 1
			s.a[f*size+k] = 1
		}
		s.a[f*size+f] = 0
	}
	s.r = grow(s.r, size)
	s.sol = grow(s.sol, size)
	s.null = grow(s.null, size)
	return size, s.solver.factor(s.a, size)
}

// step returns the minimum-norm step p on F (p has len(F) entries, in F's
// order) that minimises the objective from x, whose gradient is w, keeping
// Σx fixed under the simplex constraint. When the right-hand side has a
// significant null-space component, isRay is set and dir is that component:
// a direction of zero curvature along which the objective decreases.
func (s *subspace) step(p qpProblem, F []int, w []float64) (step, dir []float64, isRay bool) {
	if len(F) == 0 {
		return nil, nil, false
	}
	size, ok := s.setup(p, F)
	if !ok {
		return nil, nil, false
	}
	for k, i := range F {
		s.r[k] = -w[i]
	}
	if p.simplex {
		s.r[len(F)] = 0
	}
	s.solver.solve(s.sol, s.null, s.r[:size])
	f := len(F)
	if maxAbs(s.null[:f]) > rayTol*maxOne(maxAbs(s.r[:size])) {
		return nil, append([]float64(nil), s.null[:f]...), true
	}
	return append([]float64(nil), s.sol[:f]...), nil, false
}

// minNormPoint returns the minimum-norm solution y (zero off G) of the
// stationarity conditions on G — K_GG y_G = −b_G, or with the simplex
// constraint K_GG y_G + ν1 = −b_G, Σy_G = 1 — or nil when that system has
// no solution or its solution is not feasible. Tiny negative entries from
// rounding are set to zero.
func (s *subspace) minNormPoint(p qpProblem, G []int) []float64 {
	if len(G) == 0 {
		return nil
	}
	size, ok := s.setup(p, G)
	if !ok {
		return nil
	}
	for k, i := range G {
		s.r[k] = -p.bi(i)
	}
	if p.simplex {
		s.r[len(G)] = 1
	}
	s.solver.solve(s.sol, s.null, s.r[:size])
	if maxAbs(s.null[:size]) > rayTol*maxOne(maxAbs(s.r[:size])) {
		return nil
	}
	y := make([]float64, p.m)
	scale := maxAbs(s.sol[:len(G)])
	for k, i := range G {
		v := s.sol[k]
		if v < 0 {
			if v < -stepTol*maxOne(scale) {
				return nil
			}
			v = 0
		}
		y[i] = v
	}
	if p.simplex {
		normalise(y)
	}
	return y
}

// grow returns s resliced or reallocated to length n.
func grow(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}

// maxOne returns max(1, v).
func maxOne(v float64) float64 {
	if v < 1 {
		return 1
	}
	return v
}
