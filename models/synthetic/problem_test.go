package synthetic

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/png"
	"gonum.org/v1/gonum/diff/fd"
	"gonum.org/v1/gonum/floats/scalar"
)

var _ finetune.Problem = (*Problem)(nil)

// Tolerances.
const (
	fdStep   = 1e-6
	fdTol    = 1e-7 // central differences against analytic float64 gradients
	exactTol = 1e-12
	f32Tol   = 1e-6 // float32 parameters and Jacobian
)

func TestGradientsFiniteDifference(t *testing.T) {
	const points = 50
	rng := rand.New(rand.NewPCG(7, 8))
	for _, name := range Names {
		p, err := New(name)
		if err != nil {
			t.Fatal(err)
		}
		n := p.NumParams()
		for range points {
			x := make([]float64, n)
			for i := range x {
				x[i] = 2*rng.Float64() - 1
			}
			g1, g2 := make([]float64, n), make([]float64, n)
			p.Losses(x, g1, g2)
			for task, got := range [][]float64{g1, g2} {
				f := func(y []float64) float64 {
					l1, l2 := p.Losses(y, nil, nil)
					return []float64{l1, l2}[task]
				}
				want := fd.Gradient(nil, f, x, &fd.Settings{Formula: fd.Central, Step: fdStep})
				for i := range want {
					if !scalar.EqualWithinAbsOrRel(got[i], want[i], fdTol, fdTol) {
						t.Errorf("%s at %v: ∂ℓ%d/∂θ%d = %v, central difference %v", name, x, task+1, i, got[i], want[i])
					}
				}
			}
		}
	}
}

func TestKnownValues(t *testing.T) {
	eta := 1 / math.Sqrt(10)
	fill := func(v float64) []float64 {
		x := make([]float64, 10)
		for i := range x {
			x[i] = v
		}
		return x
	}
	r := math.Sqrt(math.Pi / 2) // x2² + x3² = π: g = 1
	tests := []struct {
		name   string
		x      []float64
		l1, l2 float64
		gap    float64
	}{
		{"exp2", fill(eta), 0, 1 - math.Exp(-4), 0},
		{"exp2", fill(-eta), 1 - math.Exp(-4), 0, 0},
		{"exp2", fill(0), 1 - math.Exp(-1), 1 - math.Exp(-1), 0},
		{"exp2", fill(2 * eta), 1 - math.Exp(-1), 1 - math.Exp(-9), 1},
		{"zdt2v", []float64{0, r, r}, 0.5*math.Sin(math.Pi) + 0.5, 1 - 0.25, 0},
		{"zdt2v", []float64{math.Pi / 2, r, r}, 0.5*math.Sin(3*math.Pi/2) + 0.5, 1, 0},
		{"zdt2v", []float64{0, 0, 0}, 0.5, 10 - 0.25/10, 9},
	}
	for _, tt := range tests {
		p, err := New(tt.name)
		if err != nil {
			t.Fatal(err)
		}
		l1, l2 := p.Losses(tt.x, nil, nil)
		if !scalar.EqualWithinAbs(l1, tt.l1, exactTol) || !scalar.EqualWithinAbs(l2, tt.l2, exactTol) {
			t.Errorf("%s at %v: losses (%v, %v), want (%v, %v)", tt.name, tt.x, l1, l2, tt.l1, tt.l2)
		}
		if gap := p.ParetoGap(tt.x); !scalar.EqualWithinAbs(gap, tt.gap, exactTol) {
			t.Errorf("%s at %v: ParetoGap %v, want %v", tt.name, tt.x, gap, tt.gap)
		}
	}
}

func TestExp2ParetoSet(t *testing.T) {
	p := Exp2()
	eta := 1 / math.Sqrt(10)
	for _, tv := range []float64{-1, -0.5, 0, 0.3, 1} {
		x := make([]float64, 10)
		for i := range x {
			x[i] = tv * eta
		}
		l1, l2 := p.Losses(x, nil, nil)
		want := Exp2Point(tv)
		if !scalar.EqualWithinAbs(l1, want[0], exactTol) || !scalar.EqualWithinAbs(l2, want[1], exactTol) {
			t.Errorf("t=%v: losses (%v, %v), Exp2Point %v", tv, l1, l2, want)
		}
		if d := p.FrontDistance([2]float64{l1, l2}); d > 1e-9 {
			t.Errorf("t=%v: FrontDistance of a Pareto point is %v", tv, d)
		}
		// On the Pareto set the two gradients are anti-parallel (between
		// the two minima), so a convex combination vanishes.
		g1, g2 := make([]float64, 10), make([]float64, 10)
		p.Losses(x, g1, g2)
		var dot, n1, n2 float64
		for i := range g1 {
			dot += g1[i] * g2[i]
			n1 += g1[i] * g1[i]
			n2 += g2[i] * g2[i]
		}
		if n1 > 0 && n2 > 0 && !scalar.EqualWithinAbs(dot/math.Sqrt(n1*n2), -1, 1e-12) {
			t.Errorf("t=%v: cos(∇ℓ1, ∇ℓ2) = %v, want -1", tv, dot/math.Sqrt(n1*n2))
		}
	}
}

func TestFront(t *testing.T) {
	const k = 11
	for _, name := range Names {
		p, _ := New(name)
		f := p.Front(k)
		if len(f) != k {
			t.Fatalf("%s: %d points, want %d", name, len(f), k)
		}
		for i := 1; i < k; i++ {
			if !(f[i][0] > f[i-1][0] && f[i][1] < f[i-1][1]) {
				t.Errorf("%s: front not sorted by ℓ1 with ℓ2 decreasing at %d: %v, %v", name, i, f[i-1], f[i])
			}
		}
		for _, pt := range f {
			if d := p.FrontDistance(pt); d > 1e-9 {
				t.Errorf("%s: FrontDistance(%v) = %v, want 0", name, pt, d)
			}
		}
	}
	// A point 0.1 above the zdt2v front at ℓ1 = 0 (where the front is flat).
	if d := ZDT2V().FrontDistance([2]float64{0, 1.1}); !scalar.EqualWithinAbs(d, 0.1, 1e-9) {
		t.Errorf("FrontDistance((0, 1.1)) = %v, want 0.1", d)
	}
}

func TestEvaluateFloat32(t *testing.T) {
	for _, name := range Names {
		p, _ := New(name)
		n := p.NumParams()
		theta := make([]float32, n)
		p.Params(theta)
		init := DefaultInit(n)
		for i := range theta {
			if theta[i] != init[i] {
				t.Fatalf("%s: starts at %v, want DefaultInit %v", name, theta, init)
			}
		}
		theta[1] = 0.25
		if err := p.SetParams(theta); err != nil {
			t.Fatal(err)
		}
		losses := make([]float64, 2)
		jac := png.NewJacobian(2, n)
		if err := p.Evaluate(nil, losses, &jac); err != nil {
			t.Fatal(err)
		}
		x := widen(theta)
		g1, g2 := make([]float64, n), make([]float64, n)
		l1, l2 := p.Losses(x, g1, g2)
		if losses[0] != l1 || losses[1] != l2 {
			t.Errorf("%s: Evaluate losses %v, Losses (%v, %v)", name, losses, l1, l2)
		}
		for i := range n {
			if !scalar.EqualWithinAbs(float64(jac.Row(0)[i]), g1[i], f32Tol) || !scalar.EqualWithinAbs(float64(jac.Row(1)[i]), g2[i], f32Tol) {
				t.Errorf("%s: Jacobian column %d = (%v, %v), want (%v, %v)", name, i, jac.Row(0)[i], jac.Row(1)[i], g1[i], g2[i])
			}
		}
		if err := p.Evaluate(nil, losses, nil); err != nil {
			t.Errorf("%s: Evaluate without Jacobian: %v", name, err)
		}
	}
}

func TestErrors(t *testing.T) {
	if _, err := New("zdt3"); err == nil || !strings.Contains(err.Error(), "known problems: exp2, zdt2v") {
		t.Errorf("New(zdt3): %v", err)
	}
	p := Exp2()
	bad := png.NewJacobian(2, 3)
	tests := []struct {
		what string
		err  error
		msg  string
	}{
		{"short SetParams", p.SetParams(make([]float32, 3)), "got 3 parameters, expected 10"},
		{"NaN SetParams", p.SetParams([]float32{float32(math.NaN()), 0, 0, 0, 0, 0, 0, 0, 0, 0}), "parameter 0 is NaN"},
		{"losses length", p.Evaluate(nil, make([]float64, 3), nil), "losses has length 3, expected 2"},
		{"Jacobian shape", p.Evaluate(nil, make([]float64, 2), &bad), "expected 2×10"},
	}
	for _, tt := range tests {
		if tt.err == nil || !strings.Contains(tt.err.Error(), tt.msg) {
			t.Errorf("%s: got %v, want error containing %q", tt.what, tt.err, tt.msg)
		}
	}
}
