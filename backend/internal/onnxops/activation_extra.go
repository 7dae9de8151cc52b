package onnxops

import (
	"math"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// More activations: Elu, Selu, Softplus, Softsign, ThresholdedRelu,
// Shrink (element-wise, through graph.Builder.Unary) and PRelu (a broadcast
// slope, differentiable in both inputs).

func init() {
	graph.Register("Elu", 1, lowerElu)
	graph.Register("Selu", 1, lowerSelu)
	graph.Register("Softplus", 1, lowerSoftplus)
	graph.Register("Softsign", 1, lowerSoftsign)
	graph.Register("ThresholdedRelu", 1, lowerThresholdedRelu)
	graph.Register("Shrink", 9, lowerShrink)
	graph.Register("PRelu", 1, lowerPRelu)
}

// lowerElu: y = x for x > 0, alpha·(eˣ − 1) otherwise.
func lowerElu(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	alpha, err := graph.AttrFloat(n, "alpha", 1)
	if err != nil {
		return nil, err
	}
	return b.Unary(n, in, func(x float64) float64 {
		if x > 0 {
			return x
		}
		return alpha * math.Expm1(x)
	}, func(x, y float64) float64 {
		if x > 0 {
			return 1
		}
		return y + alpha
	})
}

// lowerSelu: y = gamma·x for x > 0, gamma·alpha·(eˣ − 1) otherwise.
func lowerSelu(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	alpha, err := graph.AttrFloat(n, "alpha", 1.67326319217681884765625)
	if err != nil {
		return nil, err
	}
	gamma, err := graph.AttrFloat(n, "gamma", 1.05070102214813232421875)
	if err != nil {
		return nil, err
	}
	return b.Unary(n, in, func(x float64) float64 {
		if x > 0 {
			return gamma * x
		}
		return gamma * alpha * math.Expm1(x)
	}, func(x, _ float64) float64 {
		if x > 0 {
			return gamma
		}
		return gamma * alpha * math.Exp(x)
	})
}

// lowerSoftplus: y = log(1 + eˣ), computed without overflow.
func lowerSoftplus(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	return b.Unary(n, in, func(x float64) float64 {
		if x > 0 {
			return x + math.Log1p(math.Exp(-x))
		}
		return math.Log1p(math.Exp(x))
	}, func(x, _ float64) float64 { return sigmoid(x) })
}

// lowerSoftsign: y = x / (1 + |x|).
func lowerSoftsign(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	return b.Unary(n, in, func(x float64) float64 { return x / (1 + math.Abs(x)) },
		func(x, _ float64) float64 { d := 1 + math.Abs(x); return 1 / (d * d) })
}

// lowerThresholdedRelu: y = x for x > alpha, 0 otherwise.
func lowerThresholdedRelu(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	alpha, err := graph.AttrFloat(n, "alpha", 1)
	if err != nil {
		return nil, err
	}
	return b.Unary(n, in, func(x float64) float64 {
		if x > alpha {
			return x
		}
		return 0
	}, func(x, _ float64) float64 {
		if x > alpha {
			return 1
		}
		return 0
	})
}

// lowerShrink: y = x − bias for x > lambd, x + bias for x < −lambd, 0
// otherwise.
func lowerShrink(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	bias, err := graph.AttrFloat(n, "bias", 0)
	if err != nil {
		return nil, err
	}
	lambd, err := graph.AttrFloat(n, "lambd", 0.5)
	if err != nil {
		return nil, err
	}
	return b.Unary(n, in, func(x float64) float64 {
		switch {
		case x < -lambd:
			return x + bias
		case x > lambd:
			return x - bias
		}
		return 0
	}, func(x, _ float64) float64 {
		if x < -lambd || x > lambd {
			return 1
		}
		return 0
	})
}

// sigmoid is 1/(1+e⁻ˣ) without overflow.
func sigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

// lowerPRelu: y = x for x ≥ 0, slope·x otherwise; slope broadcasts to x
// (unidirectionally) and is trainable.
func lowerPRelu(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	x, err := graph.Input(n, in, 0)
	if err != nil {
		return nil, err
	}
	s, err := graph.Input(n, in, 1)
	if err != nil {
		return nil, err
	}
	sshape := s.Shape
	// Opset < 7 allowed a slope of shape [C] for NCHW data: align it with
	// axis 1.
	if b.Opset < 7 && len(sshape) == 1 && len(x.Shape) > 2 && sshape[0] == x.Shape[1] && sshape[0] != x.Shape[len(x.Shape)-1] {
		sshape = append([]int{sshape[0]}, make([]int, len(x.Shape)-2)...)
		for i := 1; i < len(sshape); i++ {
			sshape[i] = 1
		}
	}
	out, err := shape.Broadcast(x.Shape, sshape)
	if err != nil || !shape.Equal(out, x.Shape) {
		return nil, graph.NodeErr(n, "slope %q of shape %v does not broadcast to X of shape %v (opset %d)", n.Input[1], s.Shape, x.Shape, b.Opset)
	}
	is := shape.BroadcastIndex(sshape, x.Shape)
	if is == nil {
		is = shape.Identity(shape.Numel(x.Shape))
	}
	fwd := func(dst []float64, in [][]float64) {
		for i, v := range in[0] {
			if v < 0 {
				v *= in[1][is[i]]
			}
			dst[i] = v
		}
	}
	bwd := func(k int, dst []float64, in [][]float64, _, g []float64) {
		for i, v := range in[0] {
			if k == 0 {
				if v < 0 {
					dst[i] = g[i] * in[1][is[i]]
				} else {
					dst[i] = g[i]
				}
			} else if v < 0 {
				dst[is[i]] += g[i] * v
			}
		}
	}
	r, err := b.Kernel(n.GetName(), "PRelu", []graph.Node{b.Node(x), b.Node(s)}, x.Shape, fwd, bwd, nil)
	if err != nil {
		return nil, err
	}
	return []*graph.Value{graph.NodeValue(r)}, nil
}
