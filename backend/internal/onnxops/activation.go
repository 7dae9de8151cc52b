package onnxops

import (
	"math"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/parallel"
	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/backend/internal/vmath"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Activations, element by element: Relu, LeakyRelu, Sigmoid and Tanh;
// Elu, Selu, Softplus, Softsign, ThresholdedRelu, Shrink and Mish (opset
// 18: y = x·tanh(softplus(x))), through graph.Builder.Unary; PRelu (a
// broadcast slope, differentiable in both inputs); and the
// piecewise-linear activations PyTorch exports from MobileNet-style nets:
// HardSigmoid (opset 6: y = max(0, min(1, alpha·x + beta)), alpha 0.2 and
// beta 0.5 by default; F.hardsigmoid exports alpha 1/6) and HardSwish
// (opset 14: y = x·max(0, min(1, x/6 + 1/2)); at opsets below 14
// nn.Hardswish exports as HardSigmoid and Mul). Derivatives at the kinks
// follow PyTorch: HardSigmoid's is alpha strictly inside (0, 1) and 0
// elsewhere; HardSwish's is x/3 + 1/2 on [−3, 3], 0 below and 1 above.
// GELU and SiLU have float32 kernels of their own (gelu.go, silu.go).

func init() {
	graph.Register("Relu", 1, lowerRelu)
	graph.Register("LeakyRelu", 1, lowerLeakyRelu)
	graph.Register("Sigmoid", 1, lowerSigmoid)
	graph.Register("Tanh", 1, lowerTanh)
	graph.Register("Elu", 1, lowerElu)
	graph.Register("Selu", 1, lowerSelu)
	graph.Register("Softplus", 1, lowerSoftplus)
	graph.Register("Softsign", 1, lowerSoftsign)
	graph.Register("ThresholdedRelu", 1, lowerThresholdedRelu)
	graph.Register("Shrink", 9, lowerShrink)
	graph.Register("PRelu", 1, lowerPRelu)
	graph.Register("Mish", 18, lowerMish)
	graph.Register("HardSigmoid", 6, lowerHardSigmoid)
	graph.Register("HardSwish", 14, lowerHardSwish)
}

func lowerRelu(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	// y > 0 exactly where x > 0 (NaN gives NaN, not > 0, either way).
	v, err := b.UnaryOut(n, in, func(x float64) float64 { return math.Max(x, 0) },
		func(y float64) float64 {
			if y > 0 {
				return 1
			}
			return 0
		})
	if err != nil || v[0].IsConst() {
		return v, err
	}
	if op, ok := v[0].N.Op().(*graph.KernelOp); ok {
		op.Fwd32, op.Bwd32 = reluFwd32, reluBwd32
	}
	return v, nil
}

// reluFwd32 is Relu's graph.Forward32Func without the float64 round trip: the
// same values (max(−0, 0) is +0, NaN stays NaN: Go's max), without a
// branch on the data (a branch on the sign of each value mispredicted half
// the time: 4.5 against 0.74 ns per value).
func reluFwd32(dst []float32, in [][]float32) {
	parallel.ForElems(len(dst), parallel.Vec2{D: dst, X: in[0][:len(dst)]}, func(v parallel.Vec2, lo, hi int) {
		vmath.AffineRelu32(v.D[lo:hi], v.X[lo:hi], 1, negZero32, true) // max(1·x + (−0), 0) is max(x, 0)
	})
}

// reluBwd32 is Relu's graph.Backward32Func reading y only: g·1 where y > 0, g·0
// elsewhere (as the float64 path's g·0 rounds: ±0, NaN for an infinite or
// NaN g), the factor chosen on integer bits, without a branch on the data.
func reluBwd32(_ int, dst []float32, _ [][]float32, out, g []float32) bool {
	parallel.ForElems(len(dst), parallel.Vec3{D: dst, X: out[:len(dst)], Y: g[:len(dst)]}, func(v parallel.Vec3, lo, hi int) {
		vmath.ReluGrad32(v.D[lo:hi], v.X[lo:hi], v.Y[lo:hi])
	})
	return true
}

func lowerLeakyRelu(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	alpha, err := graph.AttrFloat(n, "alpha", 0.01)
	if err != nil {
		return nil, err
	}
	return b.Unary(n, in, func(x float64) float64 {
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

func lowerSigmoid(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	v, err := b.UnaryOut(n, in, sigmoid64, func(y float64) float64 { return y * (1 - y) })
	if err != nil || v[0].IsConst() {
		return v, err
	}
	if op, ok := v[0].N.Op().(*graph.KernelOp); ok {
		op.Fwd32, op.Bwd32 = sigmoidFwd32, sigmoidBwd32
	}
	return v, nil
}

// sigmoid64 is the logistic function, without overflow for either sign.
func sigmoid64(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

// sigmoidFwd32 is Sigmoid's graph.Forward32Func: vmath.Sigmoid32, a vector
// kernel (AVX-512F or AVX2+FMA on amd64) that gives the bits of
// float32(sigmoid64(x)), the generic unary one's values.
func sigmoidFwd32(dst []float32, in [][]float32) {
	parallel.ForElems(len(dst), parallel.Vec2{D: dst, X: in[0][:len(dst)]}, func(v parallel.Vec2, lo, hi int) {
		vmath.Sigmoid32(v.D[lo:hi], v.X[lo:hi])
	})
}

// sigmoidBwd32 is Sigmoid's graph.Backward32Func reading y only: g·y·(1−y) in
// float64, rounded once, as the generic unary one computes it.
func sigmoidBwd32(_ int, dst []float32, _ [][]float32, out, g []float32) bool {
	parallel.ForElems(len(dst), parallel.Vec3{D: dst, X: out[:len(dst)], Y: g[:len(dst)]}, func(v parallel.Vec3, lo, hi int) {
		d, gg := v.D[lo:hi], v.Y[lo:hi]
		for i, y32 := range v.X[lo:hi] {
			y := float64(y32)
			d[i] = float32(float64(gg[i]) * (y * (1 - y)))
		}
	})
	return true
}

func lowerTanh(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	return b.UnaryOut(n, in, math.Tanh, func(y float64) float64 { return 1 - y*y })
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
