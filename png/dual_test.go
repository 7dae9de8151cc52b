package png

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// dualB is a named right-hand side for SolveDual tests.
type dualB struct {
	name string
	b    []float64
}

// dualRHS returns right-hand sides for K: the PNG form Kc − φ1 with φ = αg
// (bounded whenever g > 0), b in the range of K (always bounded), b > 0
// (λ = 0) and, when general is set, an arbitrary b (maybe unbounded).
func dualRHS(rng *rand.Rand, K []float64, m int, general bool) []dualB {
	_, g := MinNorm(K, m)
	s := scaleOf(K, m)
	c := make([]float64, m)
	for i := range c {
		c[i] = rng.NormFloat64()
	}
	Kc := make([]float64, m)
	for i := 0; i < m; i++ {
		for j := 0; j < m; j++ {
			Kc[i] += K[i*m+j] * c[j]
		}
	}
	var bs []dualB
	if g > 1e-8*s {
		for _, alpha := range []float64{0.5, 2, 50} {
			b := make([]float64, m)
			for i := range b {
				b[i] = Kc[i] - alpha*g
			}
			bs = append(bs, dualB{"png", b})
		}
	}
	bs = append(bs, dualB{"range", Kc})
	pos := make([]float64, m)
	for i := range pos {
		pos[i] = s * (0.1 + rng.Float64())
	}
	bs = append(bs, dualB{"positive", pos})
	if general {
		gen := make([]float64, m)
		for i := range gen {
			gen[i] = s * rng.NormFloat64()
		}
		bs = append(bs, dualB{"general", gen})
	}
	return bs
}

func TestSolveDualKKT(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	worst := 0.0
	n := 0
	for _, c := range qpCases(3, []int{1, 2, 3, 5, 10, 32}) {
		for _, rhs := range dualRHS(rng, c.K, c.m, false) {
			lambda, err := SolveDual(c.K, c.m, rhs.b)
			if err != nil {
				t.Errorf("%s/%s m=%d: %v", c.name, rhs.name, c.m, err)
				continue
			}
			if hasNaN(lambda) {
				t.Fatalf("%s/%s m=%d: λ = %v", c.name, rhs.name, c.m, lambda)
			}
			r := kktDual(c.K, c.m, rhs.b, lambda)
			worst = math.Max(worst, r)
			n++
			if r > kktTol {
				t.Errorf("%s/%s m=%d: KKT residual %.3g > %.0g", c.name, rhs.name, c.m, r, kktTol)
			}
		}
	}
	t.Logf("worst SolveDual KKT residual over %d problems: %.3g", n, worst)
}

func TestSolveDualBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	var nBounded, nUnbounded int
	for _, c := range qpCases(4, []int{1, 2, 3, 4, 5, 6}) {
		for _, rhs := range dualRHS(rng, c.K, c.m, true) {
			want, bounded := bruteDual(c.K, c.m, rhs.b)
			lambda, err := SolveDual(c.K, c.m, rhs.b)
			switch {
			case !bounded && errors.Is(err, ErrUnbounded):
				nUnbounded++
				continue
			case !bounded:
				t.Errorf("%s/%s m=%d: brute force finds no KKT point, SolveDual gives λ = %v, err %v", c.name, rhs.name, c.m, lambda, err)
				continue
			case err != nil:
				t.Errorf("%s/%s m=%d: %v (brute-force optimum %v)", c.name, rhs.name, c.m, err, want)
				continue
			}
			nBounded++
			got := dualObjective(c.K, c.m, rhs.b, lambda)
			sk, sb := dualScale(c.K, c.m, rhs.b)
			if math.Abs(got-want) > bruteRelTol*sb*sb/sk*math.Max(1, math.Abs(want)*sk/(sb*sb)) {
				t.Errorf("%s/%s m=%d: objective %.15g, brute force %.15g", c.name, rhs.name, c.m, got, want)
			}
		}
	}
	t.Logf("agreed with brute force on %d bounded and %d unbounded problems", nBounded, nUnbounded)
	if nBounded == 0 || nUnbounded == 0 {
		t.Errorf("test instances cover %d bounded and %d unbounded problems, want both", nBounded, nUnbounded)
	}
}

func TestSolveDualDegenerate(t *testing.T) {
	const tol = 1e-12
	tests := []struct {
		name      string
		G         [][]float64
		b         []float64
		lambda    []float64 // expected λ, nil when unbounded
		unbounded bool
	}{
		{"m=1", [][]float64{{2}}, []float64{-4}, []float64{1}, false},
		{"m=1 positive b", [][]float64{{2}}, []float64{4}, []float64{0}, false},
		{"m=1 zero gradient", [][]float64{{0}}, []float64{-1}, nil, true},
		{"m=1 zero gradient, b ≥ 0", [][]float64{{0}}, []float64{1}, []float64{0}, false},
		{"zero b", [][]float64{{1, 0}, {0, 1}}, []float64{0, 0}, []float64{0, 0}, false},
		{"opposite, φ > 0", [][]float64{{1, 0}, {-1, 0}}, []float64{-1, -1}, nil, true},
		{"opposite, b in range", [][]float64{{1, 0}, {-1, 0}}, []float64{-1, 1}, []float64{1, 0}, false},
		// Duplicates: K = [[1,1],[1,1]], b = −(1,1): any λ1 + λ2 = 1 is
		// optimal; the minimum-norm one splits equally.
		{"duplicate", [][]float64{{1, 0}, {1, 0}}, []float64{-1, -1}, []float64{0.5, 0.5}, false},
		// Parallel: row 2 = 2·row 1, b = −(1, 2): λ1 + 2λ2 = 1, minimum norm
		// (0.2, 0.4).
		{"parallel", [][]float64{{1, 0}, {2, 0}}, []float64{-1, -2}, []float64{0.2, 0.4}, false},
		{"orthogonal", [][]float64{{1, 0}, {0, 2}}, []float64{-1, 4}, []float64{1, 0}, false},
	}
	for _, tt := range tests {
		K := gramOf(tt.G)
		m := len(tt.G)
		lambda, err := SolveDual(K, m, tt.b)
		if tt.unbounded {
			if !errors.Is(err, ErrUnbounded) || lambda != nil {
				t.Errorf("%s: λ = %v, err = %v; want nil, ErrUnbounded", tt.name, lambda, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		for i := range tt.lambda {
			if math.Abs(lambda[i]-tt.lambda[i]) > tol {
				t.Errorf("%s: λ = %v, want %v", tt.name, lambda, tt.lambda)
				break
			}
		}
	}
}

func TestSolveDualNonFinite(t *testing.T) {
	tests := []struct {
		name string
		K, b []float64
	}{
		{"NaN K", []float64{math.NaN()}, []float64{1}},
		{"Inf b", []float64{1}, []float64{math.Inf(-1)}},
	}
	for _, tt := range tests {
		if _, err := SolveDual(tt.K, 1, tt.b); !errors.Is(err, ErrNonFinite) {
			t.Errorf("%s: err = %v, want ErrNonFinite", tt.name, err)
		}
	}
}
