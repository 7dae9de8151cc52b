package criterion

import (
	"math"
	"testing"
)

// FuzzParse checks that Parse never panics and that String re-parses to a
// criterion with the same String and the same value and gradient.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"a", "a+b*c", "-(a-b)/c", "pow(a, 2) + log(b) - sqrt(c)", "min(a,b,c)*max(a,1e-3)",
		"a^2", "a**2", "((a)", "exp(exp(exp(a)))", "--a - -b", ".5e+3*c", "wd:0.2,0.8,1",
		"ratio:1,2,3", "cosine:1,2", "energy", "abs(sin(a)) + cos(tanh(b))", "1/0", "é", "a(b)",
	} {
		f.Add(s)
	}
	x := []float64{0.3, 1.1, 2.5}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := Parse(s, abc)
		if err != nil {
			if c != nil {
				t.Fatalf("Parse(%q) returned both a criterion and %v", s, err)
			}
			return
		}
		c2, err := Parse(c.String(), abc)
		if err != nil {
			t.Fatalf("Parse(%q).String() = %q does not re-parse: %v", s, c.String(), err)
		}
		if c2.String() != c.String() {
			t.Fatalf("String not stable: %q then %q", c.String(), c2.String())
		}
		g1, g2 := make([]float64, 3), make([]float64, 3)
		v1, err1 := c.Eval(x, g1)
		v2, err2 := c2.Eval(x, g2)
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("%q: errors differ after round trip: %v vs %v", s, err1, err2)
		}
		if err1 != nil {
			return
		}
		if math.IsNaN(v1) || math.IsInf(v1, 0) {
			t.Fatalf("%q: Eval returned %v without an error", s, v1)
		}
		if v1 != v2 {
			t.Fatalf("%q: value %v, after round trip %v", s, v1, v2)
		}
		for i := range g1 {
			if g1[i] != g2[i] || math.IsNaN(g1[i]) || math.IsInf(g1[i], 0) {
				t.Fatalf("%q: gradient %v, after round trip %v", s, g1, g2)
			}
		}
	})
}
