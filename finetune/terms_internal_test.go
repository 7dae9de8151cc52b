package finetune

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/diff/fd"
	"gonum.org/v1/gonum/floats/scalar"

	"github.com/paretonav/paretonav/png"
	"github.com/paretonav/paretonav/png/criterion"
)

// sinProblem has tasks ℓ_i = Σ_j sin(θ_j + i)² and one term
// wave = Σ_j cos(j·θ_j), in float32 like every Problem.
type sinProblem struct{ theta []float32 }

func (p *sinProblem) Tasks() []string               { return []string{"a", "b"} }
func (p *sinProblem) Terms() []string               { return []string{"wave"} }
func (p *sinProblem) NumParams() int                { return len(p.theta) }
func (p *sinProblem) Params(dst []float32)          { copy(dst, p.theta) }
func (p *sinProblem) SetParams(src []float32) error { copy(p.theta, src); return nil }
func (p *sinProblem) Evaluate(b Batch, losses []float64, jac *png.Jacobian) error {
	return p.EvaluateTerms(b, losses, make([]float64, 1), jac, nil)
}
func (p *sinProblem) EvaluateTerms(_ Batch, losses, terms []float64, jac, tjac *png.Jacobian) error {
	clear(losses)
	terms[0] = 0
	for j, t := range p.theta {
		x := float64(t)
		for i := range losses {
			s := math.Sin(x + float64(i))
			losses[i] += s * s
			if jac != nil {
				jac.Row(i)[j] = float32(2 * s * math.Cos(x+float64(i)))
			}
		}
		terms[0] += math.Cos(float64(j) * x)
		if tjac != nil {
			tjac.Row(0)[j] = float32(-float64(j) * math.Sin(float64(j)*x))
		}
	}
	return nil
}

// TestCriterionGradientThroughTermsAndDrift checks ∇F = Jᵀ·Coef + Extra,
// the direction's z, against central differences of F(θ) for criteria
// that read drift and a term through nonlinear expressions.
func TestCriterionGradientThroughTermsAndDrift(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, expr := range []string{
		"drift",
		"sqrt(drift + 1) * a + log(3 + wave) * b",
		"wd:0.5,0.7 + 0.3*pow(drift, 1.5) - wave*wave",
		"a + b",
	} {
		const n = 6
		p := &sinProblem{theta: make([]float32, n)}
		for j := range p.theta {
			p.theta[j] = float32(rng.Float64() - 0.5)
		}
		crit, err := criterion.Parse(expr, p.Tasks(), "wave")
		if err != nil {
			t.Fatal(err)
		}
		l, err := newLoop([]Problem{p}, nil, nil, &Settings{Criterion: crit}, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		pt := l.pts[0]
		// Move away from θ₀ so that drift's gradient is not zero.
		for j := range pt.theta {
			pt.theta[j] += float32(0.3 * rng.NormFloat64())
		}
		F := func(th []float64) float64 {
			for j, v := range th {
				pt.theta[j] = float32(v)
			}
			if err := l.setParams(); err != nil {
				t.Fatal(err)
			}
			if b, err := l.evaluate(nil, false); b != nil || err != nil {
				t.Fatalf("evaluate: %v %v", b, err)
			}
			f, err := l.obj.eval(l.L, l.coefs, l.perF)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
		th := make([]float64, n)
		for j, v := range pt.theta {
			th[j] = float64(v)
		}
		want := fd.Gradient(nil, F, th, &fd.Settings{Formula: fd.Central, Step: 1e-3})
		F(th)
		if b, err := l.evaluate(nil, true); b != nil || err != nil {
			t.Fatalf("evaluate: %v %v", b, err)
		}
		if _, err := l.obj.eval(l.L, l.coefs, l.perF); err != nil {
			t.Fatal(err)
		}
		g := pt.gradient(l.lay)
		if (g.Extra != nil) != (expr != "a + b") {
			t.Errorf("%s: Extra set = %v, want %v (only terms and drift leave the span of J)", expr, g.Extra != nil, expr != "a + b")
		}
		for j := range want {
			z := 0.0
			for i, c := range g.Coef {
				z += c * float64(pt.jac.Row(i)[j])
			}
			if g.Extra != nil {
				z += float64(g.Extra[j])
			}
			// θ, J and Extra are float32: compare at float32 precision.
			if !scalar.EqualWithinAbsOrRel(z, want[j], 1e-4, 1e-4) {
				t.Errorf("%s: ∂F/∂θ_%d = %.7g, central difference %.7g", expr, j, z, want[j])
			}
		}
	}
}
