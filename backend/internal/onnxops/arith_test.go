package onnxops

import (
	"math"
	"testing"

	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

func TestArithBroadcastForward(t *testing.T) {
	a := onnxtest.Feed("a", []int{2, 1, 3}, 1, 2, 3, 4, 5, 6)
	b := onnxtest.Feed("b", []int{2, 1}, 10, 20)
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
						want = append(want, c.f(a.T.F64[i*3+k], b.T.F64[j]/10))
					}
				}
			}
			bs := onnxtest.Feed("b", []int{2, 1}, 1, 2)
			got := runOne(t, c.op, 13, nil, []onnxtest.In{a, bs})
			onnxtest.AssertClose(t, c.op, got, []int{2, 2, 3}, want, 1e-12)
		})
	}
}

func TestArithGradient(t *testing.T) {
	for _, op := range []string{"Add", "Sub", "Mul", "Div", "Pow"} {
		for _, wrt := range []string{"a", "b"} {
			t.Run(op+"/"+wrt, func(t *testing.T) {
				a := onnxtest.Feed("a", []int{2, 1, 3}, 0.5, 1.2, 0.7, 1.9, 0.3, 1.1)
				b := onnxtest.Feed("b", []int{2, 1}, 1.5, 0.8)
				m := onnxtest.OneNode(op, 13, nil, []onnxtest.In{a, b}, "y")
				gradCheck(t, m, onnxtest.Feeds([]onnxtest.In{a, b}), wrt, 1e-6)
			})
		}
	}
	t.Run("initializer", func(t *testing.T) {
		a := onnxtest.RandFeed("a", 3, 4, 3)
		w := onnxtest.InitF("w", []int{3}, 0.1, -0.2, 0.3)
		m := onnxtest.OneNode("Mul", 13, nil, []onnxtest.In{a, w}, "y")
		gradCheck(t, m, onnxtest.Feeds([]onnxtest.In{a}), "w", 1e-6)
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
			in := []onnxtest.In{onnxtest.Feed("x", []int{3}, x...)}
			want := []float64{c.f(x[0]), c.f(x[1]), c.f(x[2])}
			onnxtest.AssertClose(t, c.op, runOne(t, c.op, 13, nil, in), []int{3}, want, 1e-12)
			gradCheck(t, onnxtest.OneNode(c.op, 13, nil, in, "y"), onnxtest.Feeds(in), "x", 1e-6)
		})
	}
}

func TestClip(t *testing.T) {
	x := onnxtest.Feed("x", []int{4}, -2, -0.5, 0.5, 2)
	got := runOne(t, "Clip", 13, nil, []onnxtest.In{x, onnxtest.InitF("lo", nil, -1), onnxtest.InitF("hi", nil, 1)})
	onnxtest.AssertClose(t, "Clip 13", got, []int{4}, []float64{-1, -0.5, 0.5, 1}, 0)
	got = runOne(t, "Clip", 6, []*onnxpb.AttributeProto{onnxtest.AFloat("min", 0)}, []onnxtest.In{x})
	onnxtest.AssertClose(t, "Clip 6", got, []int{4}, []float64{0, 0, 0.5, 2}, 0)
	gradCheck(t, onnxtest.OneNode("Clip", 13, nil, []onnxtest.In{x, onnxtest.InitF("lo", nil, -1), onnxtest.InitF("hi", nil, 1)}, "y"), onnxtest.Feeds([]onnxtest.In{x}), "x", 1e-6)
}
