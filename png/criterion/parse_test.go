package criterion

import (
	"errors"
	"strings"
	"testing"

	"gonum.org/v1/gonum/floats/scalar"
)

// valueTol is the tolerance for values computed by hand.
const valueTol = 1e-12

var abc = []string{"a", "b", "c"}

func TestParseValues(t *testing.T) {
	x := []float64{0.5, 2, 4}
	tests := []struct {
		expr, norm string
		want       float64
	}{
		{"a", "a", 0.5},
		{"1e-3", "0.001", 0.001},
		{".5*b", "0.5 * b", 1},
		{"5.+a", "5 + a", 5.5},
		{"2E+1", "20", 20},
		{"a+b*c", "a + b * c", 8.5},
		{"(a+b)*c", "(a + b) * c", 10},
		{"a-b-c", "a - b - c", -5.5},
		{"a-(b-c)", "a - (b - c)", 2.5},
		{"c/b/b", "c / b / b", 1},
		{"c/(b/b)", "c / (b / b)", 4},
		{"-a*b", "-a * b", -1},
		{"-(a*b)", "-(a * b)", -1},
		{"--a", "--a", 0.5},
		{"a - -b", "a - -b", 2.5},
		{"  pow( c , .5 )", "pow(c, 0.5)", 2},
		{"sqrt(c)+log(b)-log(2)", "sqrt(c) + log(b) - log(2)", 2},
		{"exp(0)*abs(-a)", "exp(0) * abs(-a)", 0.5},
		{"sin(0)+cos(0)+tanh(0)", "sin(0) + cos(0) + tanh(0)", 1},
		{"min(c,b,a)+max(a,b,c)", "min(c, b, a) + max(a, b, c)", 4.5},
		{"(b*c)/(0.001+a)", "b * c / (0.001 + a)", 8 / 0.501},
		{"a+(b+c)", "a + (b + c)", 6.5},
	}
	for _, tt := range tests {
		c, err := Parse(tt.expr, abc)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.expr, err)
			continue
		}
		if got := c.String(); got != tt.norm {
			t.Errorf("Parse(%q).String() = %q, want %q", tt.expr, got, tt.norm)
		}
		got, err := c.Eval(x, nil)
		if err != nil {
			t.Errorf("Parse(%q).Eval: %v", tt.expr, err)
			continue
		}
		if !scalar.EqualWithinAbsOrRel(got, tt.want, valueTol, valueTol) {
			t.Errorf("Parse(%q).Eval(%v) = %v, want %v", tt.expr, x, got, tt.want)
		}
	}
}

func TestParseSyntaxErrors(t *testing.T) {
	tests := []struct {
		expr string
		col  int
		msg  string // substring of the message
	}{
		{"", 1, "empty criterion"},
		{"   ", 1, "empty criterion"},
		{"a^2", 2, "pow(a, b)"},
		{"a**2", 2, "pow(a, b)"},
		{"(a+b", 5, "expected ')'"},
		{"log(a+b", 8, "expected ',' or ')'"},
		{"a+b)", 4, "unmatched ')'"},
		{"a b", 3, "expected an operator"},
		{"a+", 3, "expected a number"},
		{"+a", 1, "unary '+'"},
		{"2a", 2, "after number"},
		{"1e", 1, "exponent needs digits"},
		{"1e999", 1, "out of range"},
		{".", 1, "'.' must be part"},
		{"1.2.3", 4, "after number"},
		{"a % b", 3, "unexpected character"},
		{"foo(a)", 1, "unknown function \"foo\""},
		{"a(b)", 1, "task a is not a function"},
		{"log", 4, "expected '(' after function log"},
		{"pow(a)", 1, "pow takes 2 argument"},
		{"log(a,b)", 1, "log takes 1 argument"},
		{"min(a)", 1, "two or more"},
		{"max()", 5, "expected a number"},
		{"a,b", 2, "expected an operator"},
		{"a = b", 3, "unexpected character"},
		{strings.Repeat("(", 300) + "a" + strings.Repeat(")", 300), 202, "nested more than"},
	}
	for _, tt := range tests {
		_, err := Parse(tt.expr, abc)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Parse(%q): got %v, want *SyntaxError", tt.expr, err)
			continue
		}
		if se.Col != tt.col || !strings.Contains(se.Msg, tt.msg) {
			t.Errorf("Parse(%q): column %d %q, want column %d containing %q", tt.expr, se.Col, se.Msg, tt.col, tt.msg)
		}
	}
}

func TestSyntaxErrorMessage(t *testing.T) {
	_, err := Parse("log(a b)", abc)
	want := "criterion: column 7: expected ',' or ')' to close log( at column 4, found name \"b\""
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

func TestParseUnknownName(t *testing.T) {
	tasks := []string{"seg", "depth", "normal"}
	_, err := Parse("seg + 0.5*dpth", tasks)
	var ue *UnknownNameError
	if !errors.As(err, &ue) {
		t.Fatalf("got %v, want *UnknownNameError", err)
	}
	if ue.Name != "dpth" || ue.Col != 11 || strings.Join(ue.Known, ",") != "seg,depth,normal" {
		t.Errorf("got %+v", ue)
	}
	want := `criterion: column 11: unknown task "dpth"; known tasks: seg, depth, normal`
	if err.Error() != want {
		t.Errorf("message %q, want %q", err.Error(), want)
	}
}

func TestParseTaskNamedLikeFunction(t *testing.T) {
	c, err := Parse("exp + exp(exp)", []string{"exp"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Eval([]float64{0}, nil)
	if err != nil || got != 1 {
		t.Errorf("got %v, %v; want 1", got, err)
	}
}

func TestParseBadTasks(t *testing.T) {
	for _, tasks := range [][]string{nil, {"a", "a"}, {"seg-1"}, {"1x"}, {""}} {
		if _, err := Parse("1", tasks); err == nil {
			t.Errorf("Parse with tasks %q: no error", tasks)
		}
	}
}

func TestParseRoundTrip(t *testing.T) {
	x := []float64{0.3, 1.7, 2.2}
	for _, expr := range []string{
		"a-(b-c)*-(a/b)", "--a - -(-b)", "pow(a, -b) / -c", "1e-300*a+1e300*b",
		"min(a, max(b, c), 0.1) - abs(a - b)", "-(a + b) * (c - a) / (b * c)",
		"ratio:1,2,3", "wd:0.1, 1e-2 ,3",
	} {
		c1, err := Parse(expr, abc)
		if err != nil {
			t.Fatalf("Parse(%q): %v", expr, err)
		}
		c2, err := Parse(c1.String(), abc)
		if err != nil {
			t.Fatalf("re-Parse(%q): %v", c1.String(), err)
		}
		if c2.String() != c1.String() {
			t.Errorf("%q: String %q then %q", expr, c1.String(), c2.String())
		}
		v1, err1 := c1.Eval(x, nil)
		v2, err2 := c2.Eval(x, nil)
		if v1 != v2 || (err1 == nil) != (err2 == nil) {
			t.Errorf("%q: %v, %v after round trip, was %v, %v", expr, v2, err2, v1, err1)
		}
	}
}
