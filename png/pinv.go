package png

import "gonum.org/v1/gonum/mat"

// symSolver solves small symmetric (possibly singular, possibly indefinite)
// systems A x = r through an eigendecomposition A = Σ μ_k q_k q_kᵀ:
// x = Σ_{|μ_k| > tol} q_k (q_kᵀ r)/μ_k is the minimum-norm least-squares
// solution, and the part of r along eigenvectors with |μ_k| ≤ tol is the
// component of r in the (numerical) null space of A.
type symSolver struct {
	n    int
	vals []float64
	vecs *mat.Dense
	tol  float64
}

// nullRelTol is the eigenvalue cut-off of symSolver relative to the largest
// |eigenvalue|: below it an eigenvalue is rounding noise of a singular
// matrix. The solvers work on problems normalised to max K_ii = 1, so this
// is also nearly absolute.
const nullRelTol = 1e-12

// factor decomposes the n×n symmetric matrix a (row-major; only the lower
// triangle is read). It reports false when the decomposition failed, which
// only happens for non-finite input.
func (s *symSolver) factor(a []float64, n int) bool {
	s.n = n
	if n == 0 {
		return true
	}
	sym := mat.NewSymDense(n, nil)
	for i := 0; i < n; i++ {
		for j := 0; j <= i; j++ {
			sym.SetSym(i, j, a[i*n+j])
		}
	}
	var es mat.EigenSym
	if !es.Factorize(sym, true) {
		return false
	}
	s.vals = es.Values(grow(s.vals, n))
	if s.vecs == nil {
		s.vecs = &mat.Dense{}
	} else {
		s.vecs.Reset()
	}
	es.VectorsTo(s.vecs)
	big := 0.0
	for _, v := range s.vals {
		if v < 0 {
			v = -v
		}
		if v > big {
			big = v
		}
	}
	s.tol = nullRelTol * big
	return true
}

// solve writes the minimum-norm least-squares solution of A x = r into x
// and the projection of r onto the null space of A into null (either may
// be nil).
func (s *symSolver) solve(x, null, r []float64) {
	for i := range x {
		x[i] = 0
	}
	for i := range null {
		null[i] = 0
	}
	for k := 0; k < s.n; k++ {
		var c float64
		for i := 0; i < s.n; i++ {
			c += s.vecs.At(i, k) * r[i]
		}
		mu := s.vals[k]
		if mu > s.tol || mu < -s.tol {
			if x != nil {
				c /= mu
				for i := 0; i < s.n; i++ {
					x[i] += c * s.vecs.At(i, k)
				}
			}
		} else if null != nil {
			for i := 0; i < s.n; i++ {
				null[i] += c * s.vecs.At(i, k)
			}
		}
	}
}
