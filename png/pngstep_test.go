package png

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// jv returns Jv in float64 (row i: ∇ℓ_iᵀv) and ‖∇ℓ_i‖.
func jv(J Jacobian, v []float32) (dots, norms []float64) {
	dots = make([]float64, J.M)
	norms = make([]float64, J.M)
	for i := 0; i < J.M; i++ {
		var s, nn float64
		for k, x := range J.Row(i) {
			s += float64(x) * float64(v[k])
			nn += float64(x) * float64(x)
		}
		dots[i], norms[i] = s, math.Sqrt(nn)
	}
	return dots, norms
}

// gradOf returns ∇F = Jᵀc + extra in float64.
func gradOf(J Jacobian, grad Gradient) []float64 {
	z := make([]float64, J.N)
	for k := range z {
		if grad.Extra != nil {
			z[k] = float64(grad.Extra[k])
		}
		for i, c := range grad.Coef {
			z[k] += c * float64(J.Row(i)[k])
		}
	}
	return z
}

// norm32 returns ‖v‖ in float64.
func norm32(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

// vRelTol bounds the error of a float32 direction relative to its norm
// (one float32 rounding per entry, ≈ 6e-8).
const vRelTol = 1e-6

// pngCase is a PNG test instance.
type pngCase struct {
	name string
	J    Jacobian
	grad Gradient
}

// pngCases returns random instances for every m: Coef only, Coef and
// Extra, and Extra only, with n > m (full rank, g > 0) and a common
// component so the control has work to do.
func pngCases(seed uint64) []pngCase {
	rng := rand.New(rand.NewPCG(seed, 7))
	var cs []pngCase
	for _, m := range []int{1, 2, 3, 5, 10, 32} {
		n := 3*m + 40
		for _, kind := range []string{"coef", "coef+extra", "extra"} {
			J := randJacobian(rng, m, n)
			for i := 0; i < m; i++ {
				J.Row(i)[0] += 4
			}
			var g Gradient
			if kind != "extra" {
				g.Coef = make([]float64, m)
				for i := range g.Coef {
					g.Coef[i] = rng.NormFloat64()
				}
			}
			if kind != "coef" {
				g.Extra = randVec32(rng, n)
			}
			cs = append(cs, pngCase{fmt.Sprintf("m=%d/%s", m, kind), J, g})
		}
	}
	return cs
}

func TestPNGControlOn(t *testing.T) {
	worst := 0.0
	for _, c := range pngCases(8) {
		for _, alpha := range []float64{0.5, 2, -0.5} {
			p := PNG{Settings{Alpha: alpha, Gamma: 1e-9, Workers: 2}}
			v := make([]float32, c.J.N)
			info, err := p.Direction(v, c.J, c.grad, nil)
			if err != nil {
				t.Fatalf("%s α=%v: %v", c.name, alpha, err)
			}
			if !info.ControlOn || info.Phi != alpha*info.G {
				t.Fatalf("%s α=%v: ControlOn = %v, φ = %v, g = %v; want on with φ = αg", c.name, alpha, info.ControlOn, info.Phi, info.G)
			}
			dots, norms := jv(c.J, v)
			vn := norm32(v)
			for i := range dots {
				// KKT of the dual: ∇ℓ_iᵀv ≥ φ, with equality where λ_i > 0.
				tol := vRelTol * norms[i] * vn
				viol := info.Phi - dots[i]
				worst = math.Max(worst, viol/(norms[i]*vn))
				if viol > tol {
					t.Errorf("%s α=%v: ∇ℓ_%dᵀv = %.10g < φ = %.10g", c.name, alpha, i, dots[i], info.Phi)
				}
				if info.Lambda[i] < 0 || (info.Lambda[i] > 0 && math.Abs(viol) > tol) {
					t.Errorf("%s α=%v: λ_%d = %g with ∇ℓ_iᵀv − φ = %g", c.name, alpha, i, info.Lambda[i], -viol)
				}
			}
			if math.Abs(info.VNorm-vn) > 1e-12*vn {
				t.Errorf("%s: VNorm = %v, ‖v‖ = %v", c.name, info.VNorm, vn)
			}
		}
	}
	t.Logf("worst (φ − ∇ℓ_iᵀv)/(‖∇ℓ_i‖‖v‖): %.3g", worst)
}

func TestPNGControlOff(t *testing.T) {
	for _, c := range pngCases(9) {
		p := PNG{Settings{Gamma: 1e9}}
		v := make([]float32, c.J.N)
		st := &State{}
		info, err := p.Direction(v, c.J, c.grad, st)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		K, _ := naiveGram(c.J, nil)
		var trace float64
		for i := 0; i < c.J.M; i++ {
			trace += K[i*c.J.M+i]
		}
		wantE := 1e9 * trace / float64(c.J.M)
		if info.ControlOn || info.Phi != 0 || math.Abs(info.E-wantE) > 1e-12*wantE {
			t.Errorf("%s: ControlOn = %v, φ = %v, e = %v; want off, 0, %v", c.name, info.ControlOn, info.Phi, info.E, wantE)
		}
		for i, l := range info.Lambda {
			if l != 0 {
				t.Errorf("%s: λ_%d = %v with the control off", c.name, i, l)
			}
		}
		z := gradOf(c.J, c.grad)
		zn := 0.0
		for _, x := range z {
			zn = math.Max(zn, math.Abs(x))
		}
		for k := range z {
			if math.Abs(float64(v[k])-z[k]) > vRelTol*zn {
				t.Fatalf("%s: v[%d] = %v, ∇F = %v", c.name, k, v[k], z[k])
			}
		}
		if st.Steps != 1 || st.Weight != 1 || math.Abs(st.AvgSqNorm-trace/float64(c.J.M)) > 1e-12*trace {
			t.Errorf("%s: state after one step = %+v, want ē = trace/m = %v", c.name, *st, trace/float64(c.J.M))
		}
	}
}

// limitTol bounds ‖v/‖v‖ − u/‖u‖‖ in the limits φ → ±∞ (float32 v).
const limitTol = 1e-5

// unitDist returns ‖a/‖a‖ − b/‖b‖‖ for float32 a and float64 b.
func unitDist(a []float32, b []float64) float64 {
	na := norm32(a)
	var nb float64
	for _, x := range b {
		nb += x * x
	}
	nb = math.Sqrt(nb)
	var s float64
	for k := range a {
		d := float64(a[k])/na - b[k]/nb
		s += d * d
	}
	return math.Sqrt(s)
}

func TestPNGLimits(t *testing.T) {
	for _, c := range pngCases(10) {
		m := c.J.M
		K := make([]float64, m*m)
		var je []float64
		if c.grad.Extra != nil {
			je = make([]float64, m)
		}
		gramPass(K, je, c.J, c.grad.Extra, 1)
		omega, g := MinNorm(K, m)
		s := scaleOf(K, m)

		// φ → −∞: λ = 0 and v = ∇F.
		v := make([]float32, c.J.N)
		lambda, _, err := controlled(v, c.J, c.grad, K, je, true, -1e12*s, 1)
		if err != nil {
			t.Fatalf("%s φ→−∞: %v", c.name, err)
		}
		for i, l := range lambda {
			if l != 0 {
				t.Errorf("%s φ→−∞: λ_%d = %v, want 0", c.name, i, l)
			}
		}
		if d := unitDist(v, gradOf(c.J, c.grad)); d > limitTol {
			t.Errorf("%s φ→−∞: v differs from ∇F by %g (unit vectors)", c.name, d)
		}

		// The same through Settings: a very negative α keeps λ = 0.
		info, err := PNG{Settings{Alpha: -1e12, Gamma: 1e-9}}.Direction(v, c.J, c.grad, nil)
		if err != nil || !info.ControlOn || maxAbs(info.Lambda) != 0 {
			t.Errorf("%s α=−1e12: control on = %v, λ = %v, err %v; want on, 0", c.name, info.ControlOn, info.Lambda, err)
		}

		// φ → +∞: v ∝ Jᵀω*, the MGD direction.
		if g <= 1e-6*s {
			t.Fatalf("%s: g = %v, want a full-rank instance", c.name, g)
		}
		if _, _, err := controlled(v, c.J, c.grad, K, je, true, 1e12*s, 1); err != nil {
			t.Fatalf("%s φ→+∞: %v", c.name, err)
		}
		if d := unitDist(v, gradOf(c.J, Gradient{Coef: omega})); d > limitTol {
			t.Errorf("%s φ→+∞: v differs from the MGD direction by %g (unit vectors)", c.name, d)
		}
	}
}

func TestPNGDegenerate(t *testing.T) {
	rows := func(r ...[]float32) Jacobian {
		J := NewJacobian(len(r), len(r[0]))
		for i := range r {
			copy(J.Row(i), r[i])
		}
		return J
	}
	tests := []struct {
		name    string
		J       Jacobian
		coef    []float64
		control bool // expected ControlOn
	}{
		{"opposite gradients: g = 0, plain descent", rows([]float32{1, 2}, []float32{-1, -2}), []float64{1, 0}, false},
		{"zero Jacobian", rows([]float32{0, 0}, []float32{0, 0}), []float64{1, 1}, false},
		{"zero gradient among others", rows([]float32{0, 0}, []float32{1, 0}), []float64{0, 1}, false},
		{"duplicate gradients", rows([]float32{1, 2}, []float32{1, 2}), []float64{1, -1}, true},
		{"parallel gradients", rows([]float32{1, 2}, []float32{3, 6}), []float64{-1, 0}, true},
		{"m = 1", rows([]float32{3, 4}), []float64{-2}, true},
		{"m = 1, zero gradient", rows([]float32{0, 0}), []float64{1}, false},
		{"rank 1, m = 3", rows([]float32{1, 0}, []float32{2, 0}, []float32{0.5, 0}), []float64{-1, 1, 0}, true},
	}
	for _, tt := range tests {
		v := make([]float32, tt.J.N)
		info, err := PNG{Settings{Gamma: 1e-6}}.Direction(v, tt.J, Gradient{Coef: tt.coef}, nil)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if info.ControlOn != tt.control {
			t.Errorf("%s: ControlOn = %v, want %v (g = %v, e = %v)", tt.name, info.ControlOn, tt.control, info.G, info.E)
		}
		if math.IsNaN(info.G) || math.IsNaN(info.VNorm) || hasNaN(info.Lambda) || hasNaN(info.Omega) {
			t.Errorf("%s: NaN in %+v", tt.name, info)
		}
		dots, norms := jv(tt.J, v)
		for i := range dots {
			if info.ControlOn && dots[i] < info.Phi-vRelTol*norms[i]*info.VNorm {
				t.Errorf("%s: ∇ℓ_%dᵀv = %v < φ = %v", tt.name, i, dots[i], info.Phi)
			}
		}
	}
}

func TestPNGState(t *testing.T) {
	// Two steps with trace/m = 1 then 3 and β = 0.5: W = 1, ē = 1; then
	// W = 1.5, ē = (0.5·1·1 + 3)/1.5.
	J := NewJacobian(1, 1)
	v := make([]float32, 1)
	st := &State{}
	p := PNG{Settings{Discount: 0.5, Gamma: 2}}
	want := []struct{ avg, w, e float64 }{{1, 1, 2}, {3.5 / 1.5, 1.5, 7 / 1.5}}
	for step, x := range []float32{1, float32(math.Sqrt(3))} {
		J.Data[0] = x
		info, err := p.Direction(v, J, Gradient{}, st)
		if err != nil {
			t.Fatal(err)
		}
		w := want[step]
		if math.Abs(st.AvgSqNorm-w.avg) > 1e-6 || st.Weight != w.w || st.Steps != step+1 || math.Abs(info.E-w.e) > 1e-6 {
			t.Errorf("step %d: state %+v, e = %v; want ē = %v, W = %v, e = %v", step, *st, info.E, w.avg, w.w, w.e)
		}
	}
}

func TestPNGErrors(t *testing.T) {
	good := NewJacobian(2, 3)
	copy(good.Data, []float32{1, 0, 0, 0, 1, 0})
	nan := NewJacobian(2, 3)
	nan.Data[4] = float32(math.NaN())
	tests := []struct {
		name   string
		method Method
		J      Jacobian
		grad   Gradient
		is     error // wrapped sentinel, nil for any error
	}{
		{"NaN in J", PNG{}, nan, Gradient{}, ErrNonFinite},
		{"Inf in Extra", PNG{}, good, Gradient{Extra: []float32{0, float32(math.Inf(1)), 0}}, ErrNonFinite},
		{"NaN in Coef", PNG{}, good, Gradient{Coef: []float64{math.NaN(), 0}}, ErrNonFinite},
		{"no tasks", PNG{}, NewJacobian(0, 3), Gradient{}, nil},
		{"negative Gamma", PNG{Settings{Gamma: -1}}, good, Gradient{}, nil},
		{"Discount 1", PNG{Settings{Discount: 1}}, good, Gradient{}, nil},
		{"NaN Alpha", PNG{Settings{Alpha: math.NaN()}}, good, Gradient{}, nil},
		{"negative Workers", PNG{Settings{Workers: -2}}, good, Gradient{}, nil},
		{"MGD NaN in J", MGD{}, nan, Gradient{}, ErrNonFinite},
		{"Linear NaN in J", Linear{}, nan, Gradient{}, ErrNonFinite},
		{"Linear wrong weights", Linear{Weights: []float64{1}}, good, Gradient{}, nil},
		{"Linear NaN weight", Linear{Weights: []float64{1, math.NaN()}}, good, Gradient{}, nil},
	}
	for _, tt := range tests {
		st := &State{AvgSqNorm: 7, Weight: 2, Steps: 3}
		before := *st
		_, err := tt.method.Direction(make([]float32, tt.J.N), tt.J, tt.grad, st)
		if err == nil || (tt.is != nil && !errors.Is(err, tt.is)) {
			t.Errorf("%s: err = %v, want an error wrapping %v", tt.name, err, tt.is)
		}
		if *st != before {
			t.Errorf("%s: state changed on error: %+v", tt.name, *st)
		}
	}
}

func TestPNGPanicsOnShape(t *testing.T) {
	J := NewJacobian(2, 3)
	tests := []struct {
		name string
		dst  []float32
		grad Gradient
	}{
		{"short dst", make([]float32, 2), Gradient{}},
		{"short Coef", make([]float32, 3), Gradient{Coef: []float64{1}}},
		{"short Extra", make([]float32, 3), Gradient{Extra: []float32{1}}},
	}
	for _, tt := range tests {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Direction did not panic", tt.name)
				}
			}()
			PNG{}.Direction(tt.dst, J, tt.grad, nil)
		}()
	}
}

// TestPNGThresholdCap checks that exploding gradients cannot raise the
// threshold above its warm-up value. Two tasks with gradients s·(±1, a):
// g = s²a², trace/m = s²(1 + a²). Ten warm-up steps (W for β = 0.9) at
// s = 1, a = 1 give ē_W = 2; then the gradients explode (s = 1000, a =
// 0.1: g = 1e4, 10⁴ times larger). The paper's e = γ·ē explodes with them
// (e ≈ 1e5 > g: the control turns off far from the front); capped, e stays
// ≤ γ·ρ·ē_W and the control stays on. When the gradients then shrink
// (s = 0.01), the capped e follows ē down.
func TestPNGThresholdCap(t *testing.T) {
	type step struct{ s, a float64 }
	var steps []step
	for range 10 {
		steps = append(steps, step{1, 1})
	}
	for range 5 {
		steps = append(steps, step{1000, 0.1})
	}
	for range 250 {
		steps = append(steps, step{0.01, 1})
	}
	for _, tc := range []struct {
		name   string
		cap    float64
		maxE   float64 // bound on e after the warm-up
		wantOn bool    // control during the explosion
	}{
		{"cap 1", 1, 0.1 * 2, true},
		{"cap 10", 10, 0.1 * 10 * 2, true},
		{"no cap (default)", 0, math.Inf(1), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := PNG{Settings{ThresholdCap: tc.cap}}
			st := &State{}
			J := NewJacobian(2, 2)
			v := make([]float32, 2)
			var last Info
			for k, x := range steps {
				copy(J.Data, []float32{float32(x.s), float32(x.s * x.a), float32(-x.s), float32(x.s * x.a)})
				info, err := p.Direction(v, J, Gradient{Coef: []float64{1, 0}}, st)
				if err != nil {
					t.Fatal(err)
				}
				if k >= 10 && info.E > tc.maxE*(1+1e-6) {
					t.Errorf("step %d: e = %g, want ≤ %g", k+1, info.E, tc.maxE)
				}
				if x.s == 1000 && info.ControlOn != tc.wantOn {
					t.Errorf("step %d (exploded gradients): control on = %v with g = %g, e = %g; want %v", k+1, info.ControlOn, info.G, info.E, tc.wantOn)
				}
				last = info
			}
			// 250 steps at trace/m = 2e-4 later, ē has forgotten the
			// explosion (0.9²⁵⁰·1e6 ≈ 4e-6): e ≈ γ·2e-4 = 2e-5.
			if last.E > 1e-3 {
				t.Errorf("final e = %g: the capped threshold does not follow ē down", last.E)
			}
		})
	}
}
