package backend

import (
	"math"
	"testing"

	"github.com/paretonav/paretonav/importer/onnxpb"
)

func TestArithBroadcastForward(t *testing.T) {
	a := feed("a", []int{2, 1, 3}, 1, 2, 3, 4, 5, 6)
	b := feed("b", []int{2, 1}, 10, 20)
	// out [2,2,3]: out[i,j,k] = a[i,0,k] op b[j,0]
	cases := []struct {
		op string
		f  func(x, y float64) float64
	}{
		{"Add", func(x, y float64) float64 { return x + y }},
		{"Sub", func(x, y float64) float64 { return x - y }},
		{"Mul", func(x, y float64) float64 { return x * y }},
		{"Div", func(x, y float64) float64 { return x / y }},
		{"Pow", math.Pow},
	}
	for _, c := range cases {
		t.Run(c.op, func(t *testing.T) {
			var want []float64
			for i := 0; i < 2; i++ {
				for j := 0; j < 2; j++ {
					for k := 0; k < 3; k++ {
						want = append(want, c.f(a.t.F64[i*3+k], b.t.F64[j]/10))
					}
				}
			}
			bs := feed("b", []int{2, 1}, 1, 2)
			got := runOne(t, c.op, 13, nil, []tin{a, bs})
			assertClose(t, c.op, got, []int{2, 2, 3}, want, 1e-12)
		})
	}
}

func TestArithGradient(t *testing.T) {
	for _, op := range []string{"Add", "Sub", "Mul", "Div", "Pow"} {
		for _, wrt := range []string{"a", "b"} {
			t.Run(op+"/"+wrt, func(t *testing.T) {
				a := feed("a", []int{2, 1, 3}, 0.5, 1.2, 0.7, 1.9, 0.3, 1.1)
				b := feed("b", []int{2, 1}, 1.5, 0.8)
				m := oneNode(op, 13, nil, []tin{a, b}, "y")
				gradCheck(t, m, feedsOf([]tin{a, b}), wrt, 1e-6)
			})
		}
	}
	t.Run("initializer", func(t *testing.T) {
		a := randFeed("a", 3, 4, 3)
		w := initF("w", []int{3}, 0.1, -0.2, 0.3)
		m := oneNode("Mul", 13, nil, []tin{a, w}, "y")
		gradCheck(t, m, feedsOf([]tin{a}), "w", 1e-6)
	})
}

func TestMathUnary(t *testing.T) {
	x := []float64{0.3, 1.7, 2.5}
	cases := []struct {
		op string
		f  func(float64) float64
	}{
		{"Sqrt", math.Sqrt}, {"Exp", math.Exp}, {"Log", math.Log},
		{"Neg", func(v float64) float64 { return -v }}, {"Abs", math.Abs},
	}
	for _, c := range cases {
		t.Run(c.op, func(t *testing.T) {
			in := []tin{feed("x", []int{3}, x...)}
			want := []float64{c.f(x[0]), c.f(x[1]), c.f(x[2])}
			assertClose(t, c.op, runOne(t, c.op, 13, nil, in), []int{3}, want, 1e-12)
			gradCheck(t, oneNode(c.op, 13, nil, in, "y"), feedsOf(in), "x", 1e-6)
		})
	}
}

func TestClip(t *testing.T) {
	x := feed("x", []int{4}, -2, -0.5, 0.5, 2)
	got := runOne(t, "Clip", 13, nil, []tin{x, initF("lo", nil, -1), initF("hi", nil, 1)})
	assertClose(t, "Clip 13", got, []int{4}, []float64{-1, -0.5, 0.5, 1}, 0)
	got = runOne(t, "Clip", 6, []*onnxpb.AttributeProto{aFloat("min", 0)}, []tin{x})
	assertClose(t, "Clip 6", got, []int{4}, []float64{0, 0, 0.5, 2}, 0)
	gradCheck(t, oneNode("Clip", 13, nil, []tin{x, initF("lo", nil, -1), initF("hi", nil, 1)}, "y"), feedsOf([]tin{x}), "x", 1e-6)
}
