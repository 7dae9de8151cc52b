package onnxops

import (
	"math"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Activations added to ONNX after opset 17 (earlier exports write them
// out with elementary ops):
//
// Gelu (opset 20): y = x·Φ(x) = ½x(1 + erf(x/√2)) with approximate
// "none", or ½x(1 + tanh(√(2/π)(x + 0.044715x³))) with approximate
// "tanh".
//
// Mish (opset 18): y = x·tanh(softplus(x)).

func init() {
	graph.Register("Gelu", 20, lowerGelu)
	graph.Register("Mish", 18, lowerMish)
}

// lowerMish: dy/dx = tanh(sp) + x·(1 − tanh²(sp))·σ(x), sp = softplus(x).
func lowerMish(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	sp := func(x float64) float64 { return max(x, 0) + math.Log1p(math.Exp(-math.Abs(x))) }
	return b.Unary(n, in,
		func(x float64) float64 { return x * math.Tanh(sp(x)) },
		func(x, _ float64) float64 {
			t := math.Tanh(sp(x))
			return t + x*(1-t*t)/(1+math.Exp(-x))
		})
}

// geluC is √(2/π).
var geluC = math.Sqrt(2 / math.Pi)

func lowerGelu(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	approx, err := graph.AttrString(n, "approximate", "none")
	if err != nil {
		return nil, err
	}
	switch approx {
	case "none":
		x, err := graph.Input(n, in, 0)
		if err != nil {
			return nil, err
		}
		return lowerGeluOp(b, n, x) // gelu.go
	case "tanh":
		return b.Unary(n, in,
			func(x float64) float64 { return 0.5 * x * (1 + math.Tanh(geluC*(x+0.044715*x*x*x))) },
			func(x, _ float64) float64 {
				t := math.Tanh(geluC * (x + 0.044715*x*x*x))
				return 0.5*(1+t) + 0.5*x*(1-t*t)*geluC*(1+3*0.044715*x*x)
			})
	}
	return nil, graph.NodeErr(n, "attribute approximate %q: expected \"none\" or \"tanh\"", approx)
}
