package onnxops

import (
	"math"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/parallel"
	"github.com/paretonav/paretonav/backend/internal/rewrite"
	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/backend/internal/vmath"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// GELU, y = x·Φ(x) = ½x(1 + erf(x/√2)), runs as one op: the ONNX Gelu op
// (opset 20, approximate "none") and the five ops PyTorch 1.13's exporter
// writes for it, Div(x, √2) → Erf → Add(·, 1) → Mul(x, ·) → Mul(·, 0.5)
// (the operands of each in either order, the three factors of the two
// Muls in any grouping, x·(1/√2) for the Div). One pass in the forward
// pass instead of five, one in the backward pass instead of eight, and
// none of the four intermediate values is stored: the gradient, dy/dx =
// Φ(x) + x·φ(x), reads x and y (which the next MatMul or Conv keeps for
// its own gradient), Φ(x) = y/x and φ(x) recomputed in blocks that stay
// in cache. No call of math.Erf per element: the float32 forward kernel
// is vmath.Gelu32 (Φ by vmath.Phi64's polynomial and exponential, the
// whole vectors in an AVX-512 kernel with the scalar loop's bits).
//
// The five ops fuse (rewrite.Gelu finds them) only where each of the four
// intermediate values has no reader other than the next op of the pattern
// and is not a graph output, and where the constants are √2 (or 1/√2 by
// a Mul), 1 and 0.5 to float32's precision, single elements that do not
// broadcast x to a larger shape (lowerFusedGelu). The intermediate nodes
// stay in the graph and run only if something reads them. The float32 op is x·Φ(x) in float64 rounded
// once to float32, within one float32 ulp of the exact value
// (TestPhiBlockAccuracy); the five float32 ops round four times and lose
// the lower tail to cancellation in 1 + erf (TestFuseGelu compares the
// two).

func init() {
	graph.Register("Gelu", 20, lowerGelu)
	graph.RegisterFused(rewrite.Gelu, lowerFusedGelu)
}

// invSqrt2Pi is 1/√(2π).
var invSqrt2Pi = 1 / math.Sqrt(2*math.Pi)

// lowerGeluOp lowers n, reading x, as the fused GELU op.
func lowerGeluOp(b *graph.Builder, n *onnxpb.NodeProto, x *graph.Value) ([]*graph.Value, error) {
	name, kind := n.GetName(), "Gelu"
	m := &onnxpb.NodeProto{Name: &name, OpType: &kind, Input: n.Input[:1], Output: n.Output[:1]}
	v, err := b.Unary(m, []*graph.Value{x}, gelu64, geluDeriv64)
	if err != nil || v[0].IsConst() {
		return v, err
	}
	op := v[0].N.Op().(*graph.KernelOp)
	op.Fwd32, op.Bwd32 = geluFwd32, geluBwd32
	op.GradReads = []bool{true, true, true} // x, y and g: Φ(x) = y/x, φ(x) recomputed
	return v, nil
}

// gelu64 is x·Φ(x) with Φ from math.Erfc, accurate for either sign: the
// float64 graphs' kernel, the reference the float32 kernels are checked
// against.
func gelu64(x float64) float64 { return x * (0.5 * math.Erfc(-x/math.Sqrt2)) }

// geluDeriv64 is Φ(x) + x·φ(x).
func geluDeriv64(x, _ float64) float64 {
	return 0.5*math.Erfc(-x/math.Sqrt2) + x*math.Exp(-0.5*x*x)*invSqrt2Pi
}

// geluFwd32 is vmath.Gelu32 split among goroutines.
func geluFwd32(dst []float32, in [][]float32) {
	x := in[0][:len(dst)]
	parallel.Elems(len(dst), func(lo, hi int) { vmath.Gelu32(dst[lo:hi], x[lo:hi]) })
}

// geluBwd32 is vmath.GeluGrad32 split among goroutines: g·(Φ(x) +
// x·φ(x)) with Φ(x) = y/x from the forward pass's output (the next op, a
// MatMul or a Conv, keeps y for its own gradient) and φ(x) =
// exp(−x²/2)/√(2π) in vector blocks: no erf in the backward
// passes, which run once per task. y/x holds Φ to float32's precision
// (y's one rounding); at x = ±0, ±Inf it is ½, 1 or 0 (the limits), and
// where y underflows (x < −13) Φ's error is below 1e-45, far under
// x·φ(x).
func geluBwd32(_ int, dst []float32, in [][]float32, out, g []float32) bool {
	x, y, g := in[0][:len(dst)], out[:len(dst)], g[:len(dst)]
	parallel.Elems(len(dst), func(lo, hi int) { vmath.GeluGrad32(dst[lo:hi], x[lo:hi], y[lo:hi], g[lo:hi]) })
	return true
}

// lowerFusedGelu lowers a fused Gelu (rewrite.Gelu) as the GELU op of its
// x, or as the Mul it replaced when x is not a float value computed at
// run time or a constant does not hold the value the pattern needs.
func lowerFusedGelu(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	k := len(rewrite.Fallback(n).Input)
	x, consts := in[k], in[k+1:]
	if x == nil || x.IsConst() || x.N == nil || graph.IsIntNode(x) {
		return b.LowerFallback(n, in)
	}
	root := math.Sqrt2
	if rewrite.AttrInt(n, rewrite.AttrGeluMul, 0) == 1 {
		root = 1 / math.Sqrt2
	}
	for i, want := range []float64{1, root, 0.5} {
		v := consts[i]
		if v == nil || !v.IsConst() || !v.C.IsFloat() || shape.Numel(v.C.Shape) != 1 || len(v.C.Shape) > len(x.Shape) {
			return b.LowerFallback(n, in)
		}
		// float32's rounding of √2 and 1/√2 is 2e-8 away; 0.5 and 1 are exact.
		if got := v.C.Float64s()[0]; math.Abs(got-want) > 1e-7 {
			return b.LowerFallback(n, in)
		}
	}
	return lowerGeluOp(b, n, x)
}

// phiBlock sets phi[i] = Φ(x[i]) for i < len(phi) (vmath.Phi64, where
// its method is described); x holds at least len(phi) elements and does
// not overlap phi.
func phiBlock(phi, x []float64) { vmath.Phi64(phi, x) }

// geluC is √(2/π).
var geluC = math.Sqrt(2 / math.Pi)

// lowerGelu lowers the Gelu op (opset 20): approximate "none" as the
// fused op, "tanh" as y = ½x(1 + tanh(√(2/π)(x + 0.044715x³))) element
// by element.
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
		return lowerGeluOp(b, n, x)
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
