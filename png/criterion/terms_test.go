package criterion

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/floats/scalar"
)

// TestTermsAndDrift evaluates expressions over tasks a, b, the term adv
// and drift: the variables Eval reads, the value, the normalised text and
// the gradient, worked out by hand.
func TestTermsAndDrift(t *testing.T) {
	tests := []struct {
		expr     string
		terms    []string
		vars     []string
		x        []float64
		want     float64
		wantGrad []float64
		norm     string
	}{
		{"a + b", nil, []string{"a", "b"}, []float64{1, 2}, 3, []float64{1, 1}, "a + b"},
		{"a + b", []string{"adv"}, []string{"a", "b", "adv"}, []float64{1, 2, 5}, 3, []float64{1, 1, 0}, "a + b"},
		{"a + 0.5*drift", nil, []string{"a", "b", "drift"}, []float64{1, 2, 4}, 3, []float64{1, 0, 0.5}, "a + 0.5 * drift"},
		{"a*adv - drift", []string{"adv"}, []string{"a", "b", "adv", "drift"}, []float64{2, 9, 3, 1}, 5, []float64{3, 0, 2, -1}, "a * adv - drift"},
		{"wd:0.2,0.8 + 0.01*drift", nil, []string{"a", "b", "drift"}, []float64{0.4, 0.4, 10}, 0.5, []float64{2, -1, 0.01}, "wd:0.2,0.8 + 0.01 * drift"},
		{"2*wd:0.2,0.8-adv", []string{"adv"}, []string{"a", "b", "adv"}, []float64{0.4, 0.4, 1}, -0.2, []float64{4, -2, -1}, "2 * wd:0.2,0.8 - adv"},
		{"cosine:-0.5,0 - drift", nil, []string{"a", "b", "drift"}, []float64{-0.5, 1, 1}, -2, []float64{0, 0, -1}, "cosine:-0.5,0 - drift"},
		{"wd: 2e-1 , 8E-1+drift", nil, []string{"a", "b", "drift"}, []float64{0.2, 0.8, 3}, 3, []float64{0, 0, 1}, "wd:0.2,0.8 + drift"},
		{"max((wd:1,1), drift)", nil, []string{"a", "b", "drift"}, []float64{2, 1, 0.5}, 1, []float64{2, 0, 0}, "max((wd:1,1), drift)"},
	}
	for _, tt := range tests {
		c, err := Parse(tt.expr, ab, tt.terms...)
		if err != nil {
			t.Errorf("Parse(%q, terms %v): %v", tt.expr, tt.terms, err)
			continue
		}
		if got := VarsOf(c); !slices.Equal(got, tt.vars) {
			t.Errorf("Parse(%q): VarsOf = %v, want %v", tt.expr, got, tt.vars)
			continue
		}
		if got := c.Tasks(); !slices.Equal(got, ab) {
			t.Errorf("Parse(%q): Tasks = %v, want %v", tt.expr, got, ab)
		}
		if c.String() != tt.norm {
			t.Errorf("Parse(%q).String() = %q, want %q", tt.expr, c.String(), tt.norm)
		}
		grad := make([]float64, len(tt.x))
		got, err := c.Eval(tt.x, grad)
		if err != nil {
			t.Errorf("%s at %v: %v", tt.expr, tt.x, err)
			continue
		}
		if !scalar.EqualWithinAbsOrRel(got, tt.want, valueTol, valueTol) {
			t.Errorf("%s at %v = %v, want %v", tt.expr, tt.x, got, tt.want)
		}
		for i := range grad {
			if !scalar.EqualWithinAbs(grad[i], tt.wantGrad[i], valueTol) {
				t.Errorf("%s at %v: gradient %v, want %v", tt.expr, tt.x, grad, tt.wantGrad)
				break
			}
		}
		// The normalised text parses back to the same criterion.
		c2, err := Parse(c.String(), ab, tt.terms...)
		if err != nil {
			t.Errorf("re-Parse(%q): %v", c.String(), err)
			continue
		}
		if v2, _ := c2.Eval(tt.x, nil); c2.String() != c.String() || v2 != got {
			t.Errorf("%q: round trip gives %q = %v, want %q = %v", tt.expr, c2.String(), v2, c.String(), got)
		}
	}
}

// TestTermsGradientFiniteDifference checks ∂F/∂x, drift and terms
// included, against central differences at random points.
func TestTermsGradientFiniteDifference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, expr := range []string{
		"wd:0.2,0.8 + 0.01*drift",
		"ratio:1,2 * exp(-adv) + sqrt(drift)",
		"(a*b)/(0.1 + adv) + pow(drift, 1.5)",
		"log(a + adv) * cosine:0.2,0.4 - tanh(drift*b)",
	} {
		c, err := Parse(expr, ab, "adv")
		if err != nil {
			t.Fatalf("Parse(%q): %v", expr, err)
		}
		for range 20 {
			x := make([]float64, len(VarsOf(c)))
			for i := range x {
				x[i] = 0.05 + 1.5*rng.Float64()
			}
			checkGrad(t, c, x)
		}
	}
}

func TestTermsErrors(t *testing.T) {
	tests := []struct {
		expr  string
		tasks []string
		terms []string
		msg   string
	}{
		{"a", ab, []string{"drift"}, `term name "drift" is reserved`},
		{"a", []string{"drift", "b"}, nil, `task name "drift" is reserved`},
		{"a", ab, []string{"b"}, `term name "b" is also a task's`},
		{"a", ab, []string{"x", "x"}, `term name "x" is also`},
		{"a", ab, []string{"x-1"}, `term name "x-1" is not an identifier`},
		{"a + advv", ab, []string{"adv"}, `column 5: unknown task "advv"; known tasks: a, b; terms: adv`},
		{"adv(a)", ab, []string{"adv"}, "adv is not a function"},
		{"drift(a)", ab, nil, "drift is not a function"},
		{"max(wd:1,1, a)", ab, nil, `reference 3 is "a"`},
		{"wd:1,2,3 + a", ab, nil, "got 3 references, expected 2"},
		{"a + energy:eps=1", ab, nil, "multi-point"},
	}
	for _, tt := range tests {
		_, err := Parse(tt.expr, tt.tasks, tt.terms...)
		if err == nil || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("Parse(%q, %v, terms %v): %v, want an error containing %q", tt.expr, tt.tasks, tt.terms, err, tt.msg)
		}
	}
}

func TestTermsEvalErrors(t *testing.T) {
	c, err := Parse("a + adv + drift", ab, "adv")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Eval([]float64{1, 2, 3}, nil); err == nil || !strings.Contains(err.Error(), "got 3 values, expected 4 (variables [a b adv drift])") {
		t.Errorf("short values: %v", err)
	}
	var ee *EvalError
	if _, err := c.Eval([]float64{1, 2, 3, math.NaN()}, nil); !errors.As(err, &ee) || !strings.Contains(ee.Msg, "value drift is NaN") {
		t.Errorf("NaN drift: %v", err)
	}
	if _, err := c.Eval([]float64{1, 2, math.Inf(1), 0}, nil); !errors.As(err, &ee) || !strings.Contains(ee.Msg, "loss adv is +Inf") {
		t.Errorf("infinite term: %v", err)
	}
}

func TestParseMultiPoint(t *testing.T) {
	tests := []struct {
		spec      string
		multi     string
		point     string // "" for none
		pointVars []string
	}{
		{"energy", "energy:eps=0.0001", "", nil},
		{"energy:eps=1e+3", "energy:eps=1000", "", nil},
		{"energy:eps=1e+3 + 0.01*drift", "energy:eps=1000", "0.01 * drift", []string{"a", "b", "adv", "drift"}},
		{" energy + adv", "energy:eps=0.0001", "adv", []string{"a", "b", "adv"}},
	}
	for _, tt := range tests {
		m, p, err := ParseMultiPoint(tt.spec, ab, "adv")
		if err != nil {
			t.Errorf("ParseMultiPoint(%q): %v", tt.spec, err)
			continue
		}
		if m.String() != tt.multi {
			t.Errorf("ParseMultiPoint(%q): multi %q, want %q", tt.spec, m.String(), tt.multi)
		}
		switch {
		case tt.point == "" && p != nil:
			t.Errorf("ParseMultiPoint(%q): point %q, want none", tt.spec, p.String())
		case tt.point != "" && (p == nil || p.String() != tt.point || !slices.Equal(VarsOf(p), tt.pointVars)):
			t.Errorf("ParseMultiPoint(%q): point %v, want %q over %v", tt.spec, p, tt.point, tt.pointVars)
		}
	}
	for _, tt := range []struct{ spec, msg string }{
		{"energy + a*", "column 12: expected a number"},
		{"energy + advv", `column 10: unknown task "advv"`},
		{"energy:eps=x + a", `eps is "x"`},
		{"wd:1,1 + a", "unknown multi-point criterion"},
	} {
		if _, _, err := ParseMultiPoint(tt.spec, ab, "adv"); err == nil || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("ParseMultiPoint(%q): %v, want an error containing %q", tt.spec, err, tt.msg)
		}
	}
}
