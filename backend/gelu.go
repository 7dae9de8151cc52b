package backend

import (
	"math"

	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Gelu (opset 20): y = x·Φ(x) = ½x(1 + erf(x/√2)) with approximate
// "none", or ½x(1 + tanh(√(2/π)(x + 0.044715x³))) with approximate
// "tanh". Earlier exports write the erf form out as Div/Erf/Add/Mul.

func init() { register("Gelu", 20, lowerGelu) }

// geluC is √(2/π).
var geluC = math.Sqrt(2 / math.Pi)

func lowerGelu(b *builder, n *onnxpb.NodeProto, in []*value) ([]*value, error) {
	approx, err := attrString(n, "approximate", "none")
	if err != nil {
		return nil, err
	}
	switch approx {
	case "none":
		return b.unary(n, in,
			func(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) },
			func(x, _ float64) float64 {
				return 0.5*(1+math.Erf(x/math.Sqrt2)) + x*math.Exp(-x*x/2)/math.Sqrt(2*math.Pi)
			})
	case "tanh":
		return b.unary(n, in,
			func(x float64) float64 { return 0.5 * x * (1 + math.Tanh(geluC*(x+0.044715*x*x*x))) },
			func(x, _ float64) float64 {
				t := math.Tanh(geluC * (x + 0.044715*x*x*x))
				return 0.5*(1+t) + 0.5*x*(1-t*t)*geluC*(1+3*0.044715*x*x)
			})
	}
	return nil, nodeErr(n, "attribute approximate %q: expected \"none\" or \"tanh\"", approx)
}
