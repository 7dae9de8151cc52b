package onnxops

import (
	"math"
	"testing"

	"github.com/paretonav/paretonav/backend/internal/onnxtest"
)

func TestActivationForward(t *testing.T) {
	x := []float64{-2, -0.5, 0, 0.5, 3}
	sig := func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }
	cases := []struct {
		op    string
		attrs []float64 // alpha for LeakyRelu
		want  []float64
	}{
		{"Relu", nil, []float64{0, 0, 0, 0.5, 3}},
		{"LeakyRelu", []float64{0.1}, []float64{-0.2, -0.05, 0, 0.5, 3}},
		{"Sigmoid", nil, []float64{sig(-2), sig(-0.5), 0.5, sig(0.5), sig(3)}},
		{"Tanh", nil, []float64{math.Tanh(-2), math.Tanh(-0.5), 0, math.Tanh(0.5), math.Tanh(3)}},
	}
	for _, c := range cases {
		t.Run(c.op, func(t *testing.T) {
			ins := []onnxtest.In{onnxtest.Feed("x", []int{5}, x...)}
			m := onnxtest.OneNode(c.op, 13, nil, ins, "y")
			if c.attrs != nil {
				m.Proto.Graph.Node[0].Attribute = append(m.Proto.Graph.Node[0].Attribute, onnxtest.AFloat("alpha", float32(c.attrs[0])))
			}
			got := forward(t, m, onnxtest.Feeds(ins))["y"]
			onnxtest.AssertClose(t, c.op, got, []int{5}, c.want, 1e-7)
		})
	}
}

func TestActivationGradient(t *testing.T) {
	for _, op := range []string{"Relu", "LeakyRelu", "Sigmoid", "Tanh"} {
		t.Run(op, func(t *testing.T) {
			// values away from the kinks of Relu and LeakyRelu
			ins := []onnxtest.In{onnxtest.Feed("x", []int{2, 3}, -1.5, -0.3, 0.2, 0.7, 1.1, -2.2)}
			m := onnxtest.OneNode(op, 13, nil, ins, "y")
			gradCheck(t, m, onnxtest.Feeds(ins), "x", 1e-6)
		})
	}
}
