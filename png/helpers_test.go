package png

import (
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// qpCase is a QP test instance: the task gradients (rows of G, float64) and
// their Gram matrix K.
type qpCase struct {
	name string
	m    int
	K    []float64
}

// gramOf returns G Gᵀ for the rows of G.
func gramOf(G [][]float64) []float64 {
	m := len(G)
	K := make([]float64, m*m)
	for i := range G {
		for j := range G {
			var s float64
			for k := range G[i] {
				s += G[i][k] * G[j][k]
			}
			K[i*m+j] = s
		}
	}
	return K
}

// randRows returns m random Gaussian rows of length n, times scale.
func randRows(rng *rand.Rand, m, n int, scale float64) [][]float64 {
	G := make([][]float64, m)
	for i := range G {
		G[i] = make([]float64, n)
		for k := range G[i] {
			G[i][k] = scale * rng.NormFloat64()
		}
	}
	return G
}

// qpCases returns seeded random and degenerate Gram matrices for every m in
// ms: full rank, rank-deficient (n < m), with duplicate, parallel, opposite
// and zero gradients, a common direction (0 outside the hull), and extreme
// scales.
func qpCases(seed uint64, ms []int) []qpCase {
	rng := rand.New(rand.NewPCG(seed, 1))
	var cs []qpCase
	add := func(name string, G [][]float64) {
		cs = append(cs, qpCase{name: name, m: len(G), K: gramOf(G)})
	}
	for _, m := range ms {
		for rep := 0; rep < 3; rep++ {
			add("full", randRows(rng, m, m+3, 1))
			add("rank2", randRows(rng, m, 2, 1))
			add("rank1", randRows(rng, m, 1, 1))
			// All gradients share a strong common component: 0 lies
			// outside the hull and the min-norm point is interior.
			G := randRows(rng, m, m+2, 0.3)
			for i := range G {
				G[i][0] += 2
			}
			add("common", G)
			G = randRows(rng, m, m+1, 1)
			if m >= 2 {
				copy(G[m-1], G[0]) // duplicate
			}
			add("duplicate", G)
			G = randRows(rng, m, m+1, 1)
			if m >= 2 {
				for k := range G[m-1] {
					G[m-1][k] = 3 * G[0][k] // parallel
				}
			}
			add("parallel", G)
			G = randRows(rng, m, m+2, 1)
			for i := range G {
				G[i][0] += 3
			}
			if m >= 2 {
				for k := range G[m-1] {
					G[m-1][k] = -0.5 * G[0][k] // opposite
				}
			}
			add("opposite", G)
			G = randRows(rng, m, m+1, 1)
			for k := range G[0] {
				G[0][k] = 0 // zero gradient
			}
			add("zero", G)
			add("tiny", randRows(rng, m, m+1, 1e-12))
			add("huge", randRows(rng, m, 2, 1e12))
		}
		add("allzero", randRows(rng, m, 3, 0))
	}
	return cs
}

// scaleOf returns max K_ii (1 when that is 0).
func scaleOf(K []float64, m int) float64 {
	s := 0.0
	for i := 0; i < m; i++ {
		s = math.Max(s, K[i*m+i])
	}
	if s == 0 {
		return 1
	}
	return s
}

// kktSimplex returns the KKT residual of ω for min ωᵀKω on the simplex, in
// units of K/max K_ii: |Σω − 1| and the natural residual
// max_i |min(ω_i, w_i − c)| with w = Kω and c = ωᵀKω, which covers ω ≥ 0,
// w_i ≥ c and complementarity at once.
func kktSimplex(K []float64, m int, omega []float64) float64 {
	s := scaleOf(K, m)
	var sum, c float64
	w := make([]float64, m)
	for i := 0; i < m; i++ {
		sum += omega[i]
		for j := 0; j < m; j++ {
			w[i] += K[i*m+j] / s * omega[j]
		}
		c += omega[i] * w[i]
	}
	r := math.Abs(sum - 1)
	for i := 0; i < m; i++ {
		r = math.Max(r, math.Abs(math.Min(omega[i], w[i]-c)))
	}
	return r
}

// dualScale returns the units of SolveDual's problem: max K_ii and max |b_i|.
func dualScale(K []float64, m int, b []float64) (sk, sb float64) {
	sk = scaleOf(K, m)
	for _, v := range b {
		sb = math.Max(sb, math.Abs(v))
	}
	if sb == 0 {
		sb = 1
	}
	return sk, sb
}

// kktDual returns the natural KKT residual max_i |min(λ_i, w_i)|, w = Kλ + b,
// of min ½λᵀKλ + λᵀb over λ ≥ 0, in the scaled units K/sk, b/sb, λ·sk/sb.
// It is zero exactly when λ ≥ 0, w ≥ 0 and λ_i w_i = 0 for all i.
func kktDual(K []float64, m int, b, lambda []float64) float64 {
	sk, sb := dualScale(K, m, b)
	var r float64
	for i := 0; i < m; i++ {
		w := b[i] / sb
		for j := 0; j < m; j++ {
			w += K[i*m+j] / sk * lambda[j] * sk / sb
		}
		r = math.Max(r, math.Abs(math.Min(lambda[i]*sk/sb, w)))
	}
	return r
}

// dualObjective returns ½λᵀKλ + λᵀb.
func dualObjective(K []float64, m int, b, lambda []float64) float64 {
	var s float64
	for i := 0; i < m; i++ {
		s += b[i] * lambda[i]
		for j := 0; j < m; j++ {
			s += 0.5 * lambda[i] * K[i*m+j] * lambda[j]
		}
	}
	return s
}

// pinvSolve returns the minimum-norm least-squares solution of A x = r
// (A n×n) by gonum's SVD, and whether A x = r holds to tol (relative).
func pinvSolve(A []float64, n int, r []float64, tol float64) ([]float64, bool) {
	var svd mat.SVD
	if !svd.Factorize(mat.NewDense(n, n, append([]float64(nil), A...)), mat.SVDFull) {
		return nil, false
	}
	var U, V mat.Dense
	svd.UTo(&U)
	svd.VTo(&V)
	sv := svd.Values(nil)
	cut := 1e-11 * sv[0]
	x := make([]float64, n)
	for k, s := range sv {
		if s <= cut {
			continue
		}
		var c float64
		for i := 0; i < n; i++ {
			c += U.At(i, k) * r[i]
		}
		for i := 0; i < n; i++ {
			x[i] += c / s * V.At(i, k)
		}
	}
	var res, nr float64
	for i := 0; i < n; i++ {
		s := -r[i]
		for j := 0; j < n; j++ {
			s += A[i*n+j] * x[j]
		}
		res = math.Max(res, math.Abs(s))
		nr = math.Max(nr, math.Abs(r[i]))
	}
	return x, res <= tol*math.Max(1, nr)
}

// bruteDual solves min ½λᵀKλ + λᵀb over λ ≥ 0 by enumerating every free
// set S: solve K_SS λ_S = −b_S, keep the solutions with λ ≥ 0 and
// (Kλ + b)_i ≥ 0 off S, and return the best objective value. ok is false
// when no free set gives a KKT point (the problem is unbounded).
func bruteDual(K []float64, m int, b []float64) (best float64, ok bool) {
	sk, sb := dualScale(K, m, b)
	best = math.Inf(1)
	for mask := 0; mask < 1<<m; mask++ {
		var S []int
		for i := 0; i < m; i++ {
			if mask>>i&1 == 1 {
				S = append(S, i)
			}
		}
		lam := make([]float64, m)
		if len(S) > 0 {
			A := make([]float64, len(S)*len(S))
			r := make([]float64, len(S))
			for k, i := range S {
				r[k] = -b[i] / sb
				for l, j := range S {
					A[k*len(S)+l] = K[i*m+j] / sk
				}
			}
			x, exact := pinvSolve(A, len(S), r, 1e-9)
			if !exact {
				continue
			}
			for k, i := range S {
				lam[i] = x[k] * sb / sk
			}
		}
		if kktDual(K, m, b, lam) > 1e-8 {
			continue
		}
		ok = true
		best = math.Min(best, dualObjective(K, m, b, lam))
	}
	return best, ok
}

// bruteMinNorm returns min ωᵀKω over the simplex by enumerating every
// support S: solve the bordered system [K_SS 1; 1ᵀ 0][ω; ν] = [0; 1] and
// keep the feasible KKT points.
func bruteMinNorm(K []float64, m int) float64 {
	best := math.Inf(1)
	s := scaleOf(K, m)
	for mask := 1; mask < 1<<m; mask++ {
		var S []int
		for i := 0; i < m; i++ {
			if mask>>i&1 == 1 {
				S = append(S, i)
			}
		}
		n := len(S) + 1
		A := make([]float64, n*n)
		r := make([]float64, n)
		for k, i := range S {
			for l, j := range S {
				A[k*n+l] = K[i*m+j] / s
			}
			A[k*n+n-1], A[(n-1)*n+k] = 1, 1
		}
		r[n-1] = 1
		x, exact := pinvSolve(A, n, r, 1e-9)
		if !exact {
			continue
		}
		omega := make([]float64, m)
		for k, i := range S {
			omega[i] = x[k]
		}
		if kktSimplex(K, m, omega) > 1e-8 {
			continue
		}
		best = math.Min(best, quad(K, omega))
	}
	return best
}

// hasNaN reports whether any value is NaN or ±Inf.
func hasNaN(x []float64) bool {
	for _, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return true
		}
	}
	return false
}
