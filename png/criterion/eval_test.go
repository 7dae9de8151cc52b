package criterion

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestGradientFiniteDifference checks ∂F/∂ℓ against central differences at
// random points for many expressions. Points are drawn from [lo, hi]³,
// chosen per row so that the expression is smooth there.
func TestGradientFiniteDifference(t *testing.T) {
	const points = 20
	tests := []struct {
		expr   string
		lo, hi float64
	}{
		{"a", 0.1, 2},
		{"a + b - c", 0.1, 2},
		{"a * b * c", -2, 2},
		{"a / b", 0.5, 2},
		{"(a*c)/(0.001+b)", 0.1, 2},
		{"-a * -b + --c", -2, 2},
		{"log(a) + log(b*c)", 0.1, 2},
		{"exp(a - b) * exp(-c)", -2, 2},
		{"sqrt(a*a + b*b + c)", 0.1, 2},
		{"abs(a - b) + abs(c)", -2, 2},
		{"sin(a*b) + cos(c/a)", 0.5, 2},
		{"tanh(3*a - b) * c", -1, 1},
		{"pow(a, 2) + pow(b, 3) - pow(c, -1)", 0.1, 2},
		{"pow(a, b)", 0.1, 2},
		{"pow(a, b*c) / pow(2, a)", 0.1, 2},
		{"pow(a - 3, 2)", 0.1, 2},
		{"min(a, b, c) + 2*max(a, b*c, 0.5)", 0.1, 2},
		{"max(a, b) / min(b, c)", 0.1, 2},
		{"log(1 + exp(a)) - sqrt(1 + pow(b - c, 2))", -2, 2},
		{"a*log(a) + b*log(b) + c*log(c)", 0.1, 2},
		{"1/(a*a) + 1/(b*c)", 0.5, 2},
		{"(a - 0.2)*(a - 0.2)/0.2 + (b - 0.8)*(b - 0.8)/0.8", 0.1, 2},
		{"a*b + a*c + b*c - a*a", -2, 2},
		{"exp(sin(a) * cos(b)) * tanh(c)", -2, 2},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tt := range tests {
		c, err := Parse(tt.expr, abc)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tt.expr, err)
		}
		for range points {
			x := make([]float64, 3)
			for i := range x {
				x[i] = tt.lo + (tt.hi-tt.lo)*rng.Float64()
			}
			checkGrad(t, c, x)
		}
	}
}

func TestSubgradientsAtTies(t *testing.T) {
	tests := []struct {
		expr string
		x    []float64
		want []float64
	}{
		{"abs(a - b)", []float64{1, 1, 0}, []float64{0, 0, 0}},
		{"min(a, b, c)", []float64{1, 1, 1}, []float64{1, 0, 0}},
		{"min(c, b, a)", []float64{2, 1, 1}, []float64{0, 0, 1}},
		{"max(b, a)", []float64{3, 3, 0}, []float64{0, 1, 0}},
		{"0 * sqrt(a)", []float64{0, 1, 1}, []float64{0, 0, 0}},
		{"pow(a, 2)", []float64{0, 1, 1}, []float64{0, 0, 0}},
		{"pow(a, 1)", []float64{0, 1, 1}, []float64{1, 0, 0}},
		{"pow(a, 0)", []float64{0, 1, 1}, []float64{0, 0, 0}},
		{"pow(2, a) * pow(a, 3)", []float64{0, 1, 1}, []float64{0, 0, 0}},
		{"pow(b, a)", []float64{0, 1, 1}, []float64{0, 0, 0}},
	}
	for _, tt := range tests {
		c, err := Parse(tt.expr, abc)
		if err != nil {
			t.Fatal(err)
		}
		got := make([]float64, 3)
		if _, err := c.Eval(tt.x, got); err != nil {
			t.Errorf("%s at %v: %v", tt.expr, tt.x, err)
			continue
		}
		for i := range got {
			if math.Abs(got[i]-tt.want[i]) > valueTol {
				t.Errorf("%s at %v: gradient %v, want %v", tt.expr, tt.x, got, tt.want)
				break
			}
		}
	}
}

func TestEvalDomainErrors(t *testing.T) {
	tests := []struct {
		expr string
		x    []float64
		op   string
		msg  string // substring of Error()
	}{
		{"log(a - 1)", []float64{0.5, 1, 1}, "log", "log of non-positive value -0.5 in log(a - 1)"},
		{"log(a)", []float64{0, 1, 1}, "log", "log of non-positive value 0"},
		{"sqrt(a - b)", []float64{0.5, 1, 1}, "sqrt", "sqrt of negative value -0.5"},
		{"a / (b - c)", []float64{1, 1, 1}, "/", "division by zero (divisor is 0) in a / (b - c)"},
		{"pow(a, 0.5)", []float64{-1, 1, 1}, "pow", "negative base -1 to non-integer exponent"},
		{"pow(a, -1)", []float64{0, 1, 1}, "pow", "zero to negative exponent"},
		{"pow(b, a)", []float64{2, -1, 1}, "pow", "exponent that depends on the losses"},
		{"exp(1000*a)", []float64{1, 1, 1}, "exp", "exp overflowed to +Inf"},
		{"a * 1e300 * 1e300", []float64{1, 1, 1}, "*", "* overflowed to +Inf"},
		{"pow(10, 400*a)", []float64{1, 1, 1}, "pow", "pow overflowed"},
		{"a", []float64{math.NaN(), 1, 1}, "input", "loss a is NaN"},
		{"b", []float64{1, math.Inf(1), 1}, "input", "loss b is +Inf"},
	}
	for _, tt := range tests {
		c, err := Parse(tt.expr, abc)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Eval(tt.x, make([]float64, 3))
		var ee *EvalError
		if !errors.As(err, &ee) {
			t.Errorf("%s at %v: got %v, want *EvalError", tt.expr, tt.x, err)
			continue
		}
		if ee.Op != tt.op || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%s at %v: op %q, %q; want op %q containing %q", tt.expr, tt.x, ee.Op, err, tt.op, tt.msg)
		}
	}
}

func TestGradientOnlyErrors(t *testing.T) {
	tests := []struct {
		expr string
		x    []float64
		msg  string
	}{
		{"sqrt(a)", []float64{0, 1, 1}, "sqrt has an infinite derivative at 0"},
		{"pow(a, 0.5)", []float64{0, 1, 1}, "infinite derivative at base 0"},
		{"1e300 * a * exp(700 * b)", []float64{1, 1, 1}, ""},
	}
	for _, tt := range tests {
		c, err := Parse(tt.expr, abc)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Eval(tt.x, nil); err != nil && tt.msg != "" {
			t.Errorf("%s at %v without gradient: %v", tt.expr, tt.x, err)
		}
		_, err = c.Eval(tt.x, make([]float64, 3))
		var ee *EvalError
		if !errors.As(err, &ee) || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%s at %v with gradient: got %v, want *EvalError containing %q", tt.expr, tt.x, err, tt.msg)
		}
	}
}

func TestEvalLengthErrors(t *testing.T) {
	c, err := Parse("a + b", abc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Eval([]float64{1, 2}, nil); err == nil || !strings.Contains(err.Error(), "got 2 losses, expected 3") {
		t.Errorf("short losses: %v", err)
	}
	if _, err := c.Eval([]float64{1, 2, 3}, make([]float64, 1)); err == nil || !strings.Contains(err.Error(), "gradient has length 1, expected 3") {
		t.Errorf("short gradient: %v", err)
	}
}
