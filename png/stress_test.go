package png

import (
	"math"
	"math/rand/v2"
	"testing"
)

// stressGradients returns m gradients built to be hard for the QP solvers:
// a few random directions, copied, scaled (positively and negatively),
// perturbed by relative noise eps and mixed with zero rows.
func stressGradients(rng *rand.Rand, m int, eps float64) [][]float64 {
	n := 1 + rng.IntN(m+3)
	base := randRows(rng, 1+rng.IntN(4), n, 1)
	shift := rng.NormFloat64() * 3 // common component: 0 may leave the hull
	G := make([][]float64, m)
	for i := range G {
		G[i] = make([]float64, n)
		switch rng.IntN(6) {
		case 0: // zero row
		case 1: // fresh random row
			for k := range G[i] {
				G[i][k] = rng.NormFloat64()
			}
		default: // scaled copy of a base row, maybe perturbed
			src := base[rng.IntN(len(base))]
			s := rng.NormFloat64()
			for k := range G[i] {
				G[i][k] = s*src[k] + eps*rng.NormFloat64()
			}
		}
		G[i][0] += shift
	}
	return G
}

func TestQPStress(t *testing.T) {
	count := 400
	if testing.Short() {
		count = 100
	}
	rng := rand.New(rand.NewPCG(15, 15))
	var worstMN, worstDual float64
	var unbounded int
	for it := 0; it < count; it++ {
		m := []int{2, 3, 5, 10, 32}[it%5]
		eps := []float64{0, 1e-8, 1e-4}[it%3]
		K := gramOf(stressGradients(rng, m, eps))
		omega, g := MinNorm(K, m)
		if hasNaN(omega) || math.IsNaN(g) {
			t.Fatalf("it %d m=%d: ω = %v, g = %v", it, m, omega, g)
		}
		r := kktSimplex(K, m, omega)
		worstMN = math.Max(worstMN, r)
		if r > kktTol {
			t.Errorf("it %d m=%d eps=%g: MinNorm KKT residual %.3g", it, m, eps, r)
		}
		for _, rhs := range dualRHS(rng, K, m, true) {
			lambda, err := SolveDual(K, m, rhs.b)
			if err != nil {
				// Only an arbitrary b may make the problem unbounded.
				if rhs.name != "general" {
					t.Errorf("it %d m=%d eps=%g %s: %v", it, m, eps, rhs.name, err)
				}
				unbounded++
				checkRay(t, K, m, rhs.b)
				continue
			}
			r := kktDual(K, m, rhs.b, lambda)
			if rhs.name == "general" {
				// An arbitrary b can sit next to an unbounded problem, with
				// λ of order 1/(smallest eigenvalue of K); rounding in
				// w = Kλ + b then grows with ‖λ‖, so measure relative to it.
				sk, sb := dualScale(K, m, rhs.b)
				r /= math.Max(1, maxAbs(lambda)*sk/sb)
			} else {
				worstDual = math.Max(worstDual, r)
			}
			if r > kktTol {
				t.Errorf("it %d m=%d eps=%g %s: SolveDual KKT residual %.3g", it, m, eps, rhs.name, r)
			}
		}
	}
	t.Logf("worst KKT residuals: MinNorm %.3g, SolveDual (PNG-form, range and positive b) %.3g; %d unbounded general problems", worstMN, worstDual, unbounded)
}

// rayTestTol bounds ‖K̃d‖∞/‖d‖∞ of a reported ray in scaled units.
const rayTestTol = 1e-8

// checkRay re-solves the scaled problem and checks that the reported ray
// d proves unboundedness: d ≥ 0, Kd ≈ 0 and bᵀd < 0.
func checkRay(t *testing.T, K []float64, m int, b []float64) {
	t.Helper()
	sk, sb := dualScale(K, m, b)
	Ks := make([]float64, m*m)
	for i := range K {
		Ks[i] = K[i] / sk
	}
	bs := make([]float64, m)
	for i := range b {
		bs[i] = b[i] / sb
	}
	_, d := solveQP(qpProblem{K: Ks, b: bs, m: m})
	if d == nil {
		t.Errorf("m=%d: SolveDual says unbounded, solveQP gives no ray", m)
		return
	}
	var bd, kd float64
	for i := 0; i < m; i++ {
		bd += bs[i] * d[i]
		var s float64
		for j := 0; j < m; j++ {
			s += Ks[i*m+j] * d[j]
		}
		kd = math.Max(kd, math.Abs(s))
	}
	if kd > rayTestTol*maxAbs(d) || !(bd < 0) || hasNaN(d) {
		t.Errorf("m=%d: ray d = %v has ‖Kd‖∞ = %g, bᵀd = %g; want ≈ 0 and < 0", m, d, kd, bd)
	}
	for _, v := range d {
		if v < 0 {
			t.Errorf("m=%d: ray d = %v has a negative entry", m, d)
			break
		}
	}
}
