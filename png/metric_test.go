package png

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// metricCase is a Constrain test instance: task gradients, a proposal and
// a diagonal metric (nil: identity).
type metricCase struct {
	name   string
	J      Jacobian
	prop   []float32
	metric []float32
}

// metricCases returns random instances for every m: the metric nil, mildly
// and wildly (six decades) varying; the proposal random, or against the
// tasks (−P Jᵀω: every loss rises to first order), or already compliant
// (a large P Jᵀω, which complies for small m).
func metricCases(seed uint64) []metricCase {
	rng := rand.New(rand.NewPCG(seed, 11))
	var cs []metricCase
	for _, m := range []int{1, 2, 3, 5, 10} {
		n := 3*m + 40
		for _, mk := range []string{"identity", "mild", "wild"} {
			for _, pk := range []string{"random", "against", "compliant"} {
				J := randJacobian(rng, m, n)
				for i := 0; i < m; i++ {
					J.Row(i)[0] += 2
				}
				var P []float32
				if mk != "identity" {
					P = make([]float32, n)
					dec := 1.0
					if mk == "wild" {
						dec = 6
					}
					for k := range P {
						P[k] = float32(math.Pow(10, dec*(rng.Float64()-0.5)))
					}
				}
				prop := randVec32(rng, n)
				if pk != "random" {
					s := -1.0
					if pk == "compliant" {
						s = 50
					}
					for k := range prop {
						var d float64
						for i := 0; i < m; i++ {
							d += float64(J.Row(i)[k]) / float64(m)
						}
						if P != nil {
							d *= float64(P[k])
						}
						prop[k] = float32(s * d)
					}
				}
				cs = append(cs, metricCase{fmt.Sprintf("m=%d/%s/%s", m, mk, pk), J, prop, P})
			}
		}
	}
	return cs
}

// metricGram64 returns J diag(P) Jᵀ in float64 (P nil: identity).
func metricGram64(J Jacobian, P []float32) []float64 {
	m := J.M
	K := make([]float64, m*m)
	for i := 0; i < m; i++ {
		for j := 0; j < m; j++ {
			for k := 0; k < J.N; k++ {
				p := 1.0
				if P != nil {
					p = float64(P[k])
				}
				K[i*m+j] += float64(J.Row(i)[k]) * p * float64(J.Row(j)[k])
			}
		}
	}
	return K
}

// TestConstrain checks the metric QP on random instances: every task
// decreases at rate ≥ φ_P along the update, φ_P = α·ρ·g_P with g_P the
// metric's min-norm value, u − prop = P Jᵀλ with λ ≥ 0, and λ_i > 0 only
// where the constraint is tight (the KKT conditions of the closest update
// in the metric).
func TestConstrain(t *testing.T) {
	worst := 0.0
	for _, c := range metricCases(21) {
		for _, ar := range [][2]float64{{0.5, 1}, {2, 1}, {0.5, 0.2}, {0.5, 3}, {1, 0}} {
			alpha, rho := ar[0], ar[1]
			p := PNG{Settings{Alpha: alpha, Workers: 2}}
			u := make([]float32, c.J.N)
			info, err := p.Constrain(u, c.J, c.prop, c.metric, nil, rho)
			if err != nil {
				t.Fatalf("%s α=%v ρ=%v: %v", c.name, alpha, rho, err)
			}
			K := metricGram64(c.J, c.metric)
			_, g := MinNorm(K, c.J.M)
			if math.Abs(info.G-g) > 1e-9*scaleOf(K, c.J.M) || info.Phi != alpha*rho*info.G || info.Scale != rho {
				t.Errorf("%s α=%v ρ=%v: g_P = %v, ρ = %v, φ_P = %v; want g_P = %v, φ_P = α·ρ·g_P", c.name, alpha, rho, info.G, info.Scale, info.Phi, g)
			}
			dots, norms := jv(c.J, u)
			un := norm32(u)
			for i := range dots {
				tol := vRelTol * norms[i] * un
				viol := info.Phi - dots[i]
				worst = math.Max(worst, viol/(norms[i]*un))
				if viol > tol {
					t.Errorf("%s α=%v: ∇ℓ_%dᵀu = %.10g < φ_P = %.10g", c.name, alpha, i, dots[i], info.Phi)
				}
				if info.Lambda[i] < 0 || (info.Lambda[i] > 0 && math.Abs(viol) > tol) {
					t.Errorf("%s α=%v: λ_%d = %g with ∇ℓ_iᵀu − φ_P = %g", c.name, alpha, i, info.Lambda[i], -viol)
				}
			}
			for k := range u {
				var s float64
				for i, l := range info.Lambda {
					s += l * float64(c.J.Row(i)[k])
				}
				if c.metric != nil {
					s *= float64(c.metric[k])
				}
				want := float64(c.prop[k]) + s
				if math.Abs(float64(u[k])-want) > vRelTol*(math.Abs(want)+un/math.Sqrt(float64(len(u)))) {
					t.Fatalf("%s α=%v: u[%d] = %v, want prop + P∘Jᵀλ = %v", c.name, alpha, k, u[k], want)
				}
			}
			pd, _ := jv(c.J, c.prop)
			complies := true
			for _, d := range pd {
				complies = complies && d >= info.Phi
			}
			if strings.HasSuffix(c.name, "/compliant") && c.J.M < 5 && !complies {
				t.Errorf("%s: the compliant proposal does not comply (test set-up)", c.name)
			}
			if complies {
				for i, l := range info.Lambda {
					if l != 0 {
						t.Errorf("%s α=%v: λ_%d = %g for a proposal that already complies; want 0 (u = prop)", c.name, alpha, i, l)
					}
				}
			}
		}
	}
	t.Logf("worst (φ_P − ∇ℓ_iᵀu)/(‖∇ℓ_i‖‖u‖): %.3g", worst)
}

// TestConstrainKeepsPaperStep checks that plain steps keep the paper's
// form: handed the PNG direction v itself in the identity metric,
// Constrain returns v unchanged (λ = 0), since v already satisfies
// ∇ℓ_iᵀv ≥ α·g.
func TestConstrainKeepsPaperStep(t *testing.T) {
	for _, c := range pngCases(23) {
		p := PNG{Settings{Gamma: 1e-9, Workers: 2}}
		v := make([]float32, c.J.N)
		info, err := p.Direction(v, c.J, c.grad, nil)
		if err != nil || !info.ControlOn {
			t.Fatalf("%s: control on = %v, err = %v; want on", c.name, info.ControlOn, err)
		}
		u := make([]float32, c.J.N)
		mi, err := p.Constrain(u, c.J, v, nil, nil, 1)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if math.Abs(mi.G-info.G) > 1e-9*info.G {
			t.Errorf("%s: g_I = %v, PNG's g = %v", c.name, mi.G, info.G)
		}
		// v meets its constraints only to rounding: λ may be a rounding
		// residue, but u must equal v to float32 precision.
		vn := norm32(v)
		for k := range u {
			if math.Abs(float64(u[k]-v[k])) > 1e-5*vn/math.Sqrt(float64(len(v)))+1e-6*math.Abs(float64(v[k])) {
				t.Fatalf("%s: u[%d] = %v, v[%d] = %v; want the PNG direction unchanged", c.name, k, u[k], k, v[k])
			}
		}
	}
}

func TestConstrainErrors(t *testing.T) {
	J := Jacobian{M: 2, N: 3, Data: []float32{1, 0, 0, 0, 1, 0}}
	prop := []float32{1, 1, 1}
	for _, tc := range []struct {
		name   string
		prop   []float32
		metric []float32
		scale  float64
	}{
		{"zero metric", prop, []float32{1, 0, 1}, 1},
		{"negative metric", prop, []float32{1, -1, 1}, 1},
		{"NaN metric", prop, []float32{1, float32(math.NaN()), 1}, 1},
		{"Inf proposal", []float32{1, float32(math.Inf(1)), 1}, nil, 1},
		{"negative scale", prop, nil, -1},
		{"NaN scale", prop, nil, math.NaN()},
		{"Inf scale", prop, nil, math.Inf(1)},
	} {
		_, err := PNG{}.Constrain(make([]float32, 3), J, tc.prop, tc.metric, nil, tc.scale)
		if err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}
