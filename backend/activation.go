package backend

import (
	"math"

	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Activations: Relu, LeakyRelu, Sigmoid, Tanh.

func init() {
	register("Relu", 1, lowerRelu)
	register("LeakyRelu", 1, lowerLeakyRelu)
	register("Sigmoid", 1, lowerSigmoid)
	register("Tanh", 1, lowerTanh)
}

func lowerRelu(b *builder, n *onnxpb.NodeProto, in []*value) ([]*value, error) {
	// y > 0 exactly where x > 0 (NaN gives NaN, not > 0, either way).
	return b.unaryOut(n, in, func(x float64) float64 { return math.Max(x, 0) },
		func(y float64) float64 {
			if y > 0 {
				return 1
			}
			return 0
		})
}

func lowerLeakyRelu(b *builder, n *onnxpb.NodeProto, in []*value) ([]*value, error) {
	alpha, err := attrFloat(n, "alpha", 0.01)
	if err != nil {
		return nil, err
	}
	return b.unary(n, in, func(x float64) float64 {
		if x >= 0 {
			return x
		}
		return alpha * x
	}, func(x, _ float64) float64 {
		if x > 0 {
			return 1
		}
		return alpha
	})
}

func lowerSigmoid(b *builder, n *onnxpb.NodeProto, in []*value) ([]*value, error) {
	return b.unaryOut(n, in, func(x float64) float64 {
		if x >= 0 {
			return 1 / (1 + math.Exp(-x))
		}
		e := math.Exp(x)
		return e / (1 + e)
	}, func(y float64) float64 { return y * (1 - y) })
}

func lowerTanh(b *builder, n *onnxpb.NodeProto, in []*value) ([]*value, error) {
	return b.unaryOut(n, in, math.Tanh, func(y float64) float64 { return 1 - y*y })
}
