package importer

import (
	"math"
	"strings"
	"testing"
)

// TestEvalMod checks Mod against numpy's mod (fmod = 0) and fmod
// (fmod = 1), on the mixed-sign inputs of the ONNX operator's examples.
func TestEvalMod(t *testing.T) {
	x := i64([]int{6}, -4, 7, 5, 4, -7, 8)
	y := i64([]int{6}, 2, -3, 8, -2, 3, 5)
	cases := []struct {
		desc string
		fmod int64
		a, b *Tensor
		want []float64
	}{
		{"int64 mod", 0, x, y, []float64{0, -2, 5, 0, 2, 3}},                   // np.mod
		{"int64 fmod", 1, x, y, []float64{0, 1, 5, 0, -1, 3}},                  // np.fmod
		{"int64 broadcast", 0, x, i64(scalar, 3), []float64{2, 1, 2, 1, 2, 2}}, // np.mod(x, 3)
		{"float fmod", 1, f32([]int{6}, -4.3, 7.2, 5, 4.3, -7.2, 8), f32([]int{6}, 2.1, -3.4, 8, -2.1, 3.4, 5),
			[]float64{-0.1, 0.4, 5, 0.1, -0.4, 3}}, // np.fmod
	}
	for _, c := range cases {
		t.Run(c.desc, func(t *testing.T) {
			out, err := EvalNode(mkNode("Mod", []string{"a", "b"}, []string{"m"}, attrI("fmod", c.fmod)), 13, []*Tensor{c.a, c.b})
			if err != nil {
				t.Fatal(err)
			}
			got := out[0].Float64s()
			if len(got) != len(c.want) || out[0].Type != c.a.Type {
				t.Fatalf("got %v %v, want %v %v", out[0].Type, got, c.a.Type, c.want)
			}
			for i := range got {
				if math.Abs(got[i]-c.want[i]) > 1e-5 {
					t.Errorf("element %d: %g, want %g", i, got[i], c.want[i])
				}
			}
		})
	}
}

// TestEvalModErrors checks that float inputs without fmod and a zero
// integer divisor are refused, naming the problem.
func TestEvalModErrors(t *testing.T) {
	for _, c := range []struct {
		in   []*Tensor
		fmod int64
		want string
	}{
		{[]*Tensor{f32([]int{1}, 1.5), f32([]int{1}, 1)}, 0, "requires fmod = 1"},
		{[]*Tensor{i64([]int{1}, 3), i64([]int{1}, 0)}, 0, "modulo by zero"},
		{[]*Tensor{i64([]int{1}, 3), f32([]int{1}, 1)}, 1, "element types"},
	} {
		_, err := EvalNode(mkNode("Mod", []string{"a", "b"}, []string{"m"}, attrI("fmod", c.fmod)), 13, c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want an error containing %q", err, c.want)
		}
	}
}
