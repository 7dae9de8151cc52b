package png

import (
	"math"
	"testing"
)

// kktTol is the worst scaled KKT residual the exact QP solvers may leave.
const kktTol = 1e-9

// bruteRelTol is the relative agreement required between the active-set
// optimum and the brute-force enumeration of all active sets.
const bruteRelTol = 1e-9

func TestMinNormKKT(t *testing.T) {
	worst := 0.0
	for _, c := range qpCases(1, []int{1, 2, 3, 5, 10, 32}) {
		omega, g := MinNorm(c.K, c.m)
		if hasNaN(omega) || math.IsNaN(g) || g < 0 {
			t.Fatalf("%s m=%d: omega=%v g=%v", c.name, c.m, omega, g)
		}
		r := kktSimplex(c.K, c.m, omega)
		worst = math.Max(worst, r)
		if r > kktTol {
			t.Errorf("%s m=%d: KKT residual %.3g > %.0g (omega=%.4g)", c.name, c.m, r, kktTol, omega)
		}
		if q := quad(c.K, omega); math.Abs(q-g) > 1e-12*scaleOf(c.K, c.m) {
			t.Errorf("%s m=%d: g = %v but ωᵀKω = %v", c.name, c.m, g, q)
		}
	}
	t.Logf("worst MinNorm KKT residual: %.3g", worst)
}

func TestMinNormBruteForce(t *testing.T) {
	for _, c := range qpCases(2, []int{1, 2, 3, 4, 5, 6}) {
		_, g := MinNorm(c.K, c.m)
		want := bruteMinNorm(c.K, c.m)
		s := scaleOf(c.K, c.m)
		if math.Abs(g-want) > bruteRelTol*s {
			t.Errorf("%s m=%d: g = %.15g, brute force %.15g", c.name, c.m, g, want)
		}
	}
}

func TestMinNormDegenerate(t *testing.T) {
	const tol = 1e-12
	tests := []struct {
		name  string
		G     [][]float64
		g     float64   // expected g
		omega []float64 // expected ω, nil when not unique
	}{
		{"m=1", [][]float64{{3, 4}}, 25, []float64{1}},
		{"m=1 zero", [][]float64{{0, 0}}, 0, []float64{1}},
		{"opposite", [][]float64{{1, 2}, {-1, -2}}, 0, []float64{0.5, 0.5}},
		{"opposite scaled", [][]float64{{2, 0}, {-1, 0}}, 0, []float64{1. / 3, 2. / 3}},
		{"duplicate", [][]float64{{1, 2}, {1, 2}}, 5, []float64{0.5, 0.5}},
		{"parallel", [][]float64{{1, 0}, {3, 0}}, 1, []float64{1, 0}},
		{"orthogonal", [][]float64{{1, 0}, {0, 1}}, 0.5, []float64{0.5, 0.5}},
		{"zero row", [][]float64{{1, 0}, {0, 0}, {0, 1}}, 0, []float64{0, 1, 0}},
		{"all zero", [][]float64{{0, 0}, {0, 0}, {0, 0}}, 0, []float64{1. / 3, 1. / 3, 1. / 3}},
		{"triplicate", [][]float64{{0, 1}, {0, 1}, {0, 1}}, 1, []float64{1. / 3, 1. / 3, 1. / 3}},
		{"obtuse", [][]float64{{1, 0}, {-1, 1}}, 0.2, []float64{0.6, 0.4}},
	}
	for _, tt := range tests {
		K := gramOf(tt.G)
		m := len(tt.G)
		omega, g := MinNorm(K, m)
		if math.Abs(g-tt.g) > tol {
			t.Errorf("%s: g = %v, want %v", tt.name, g, tt.g)
		}
		for i := range tt.omega {
			if math.Abs(omega[i]-tt.omega[i]) > tol {
				t.Errorf("%s: ω = %v, want %v", tt.name, omega, tt.omega)
				break
			}
		}
	}
}

func TestMinNormNonFinite(t *testing.T) {
	omega, g := MinNorm([]float64{math.NaN(), 0, 0, 1}, 2)
	if !math.IsNaN(g) || omega[0] != 0.5 || omega[1] != 0.5 {
		t.Errorf("MinNorm(NaN K) = %v, %v; want uniform ω and g = NaN", omega, g)
	}
}

func TestMinNormPanicsOnShape(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("MinNorm(len 3, m=2) did not panic")
		}
	}()
	MinNorm(make([]float64, 3), 2)
}
