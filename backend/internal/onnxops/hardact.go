package onnxops

import (
	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/parallel"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Piecewise-linear activations PyTorch exports from MobileNet-style nets:
// HardSigmoid (opset 6: y = max(0, min(1, alpha·x + beta)), alpha 0.2 and
// beta 0.5 by default; F.hardsigmoid exports alpha 1/6) and HardSwish
// (opset 14: y = x·max(0, min(1, x/6 + 1/2)); at opsets below 14
// nn.Hardswish exports as HardSigmoid and Mul). Derivatives at the kinks
// follow PyTorch: HardSigmoid's is alpha strictly inside (0, 1) and 0
// elsewhere; HardSwish's is x/3 + 1/2 on [−3, 3], 0 below and 1 above.

func init() {
	graph.Register("HardSigmoid", 6, lowerHardSigmoid)
	graph.Register("HardSwish", 14, lowerHardSwish)
}

func lowerHardSigmoid(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	alpha, err := graph.AttrFloat(n, "alpha", 0.2)
	if err != nil {
		return nil, err
	}
	beta, err := graph.AttrFloat(n, "beta", 0.5)
	if err != nil {
		return nil, err
	}
	return b.Unary(n, in, func(x float64) float64 {
		return max(0, min(1, alpha*x+beta))
	}, func(x, _ float64) float64 {
		if z := alpha*x + beta; z > 0 && z < 1 {
			return alpha
		}
		return 0
	})
}

func lowerHardSwish(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	v, err := b.Unary(n, in, hardSwish, hardSwishDeriv)
	if err == nil && !v[0].IsConst() {
		op := v[0].N.Op().(*graph.KernelOp)
		op.Fwd32, op.Bwd32 = hardSwish32, hardSwishGrad32
	}
	return v, err
}

func hardSwish(x float64) float64 { return x * max(0, min(1, x/6+0.5)) }

func hardSwishDeriv(x, _ float64) float64 {
	switch {
	case x < -3:
		return 0
	case x > 3:
		return 1
	}
	return x/3 + 0.5
}

// hardSwish32 and hardSwishGrad32 are HardSwish's float32 kernels: the
// float64 formulas inlined into the loops (MobileNetV3 runs HardSwish on
// most of its activations), each element rounded once.
func hardSwish32(dst []float32, in [][]float32) {
	x := in[0][:len(dst)]
	parallel.Elems(len(dst), func(lo, hi int) {
		for i, v := range x[lo:hi] {
			dst[lo+i] = float32(hardSwish(float64(v)))
		}
	})
}

func hardSwishGrad32(_ int, dst []float32, in [][]float32, _, g []float32) bool {
	x, g := in[0][:len(dst)], g[:len(dst)]
	parallel.Elems(len(dst), func(lo, hi int) {
		for i, v := range x[lo:hi] {
			dst[lo+i] = float32(float64(g[lo+i]) * hardSwishDeriv(float64(v), 0))
		}
	})
	return true
}
