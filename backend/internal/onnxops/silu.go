package onnxops

import (
	"slices"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/parallel"
	"github.com/paretonav/paretonav/backend/internal/rewrite"
	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/backend/internal/vmath"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// SiLU (Swish, x·σ(x): EfficientNet's activation, exported by PyTorch as
// a Sigmoid and a Mul of its input by its output) runs as one op when a
// Mul reads a Sigmoid's output and that Sigmoid's input, of the same
// shape: one pass in the forward pass instead of two, one in the backward
// pass instead of three (the Mul's two gradients, the Sigmoid's and their
// sum), and neither σ(x) nor its gradient is stored. The Sigmoid node
// stays in the graph and runs only when something else reads it.
//
// The float32 kernels give the unfused ops' bits: y = x·s with s =
// vmath.Sigmoid32(x) (float32(σ(x)) of the float64 formula), and
// ∂x = (0 + g·s) + float32(float64(0 + g·x)·(s·(1 − s))), the Mul's
// gradient of x plus the Sigmoid's gradient of the Mul's gradient of s,
// in float32 as the executor adds them (TestFuseSiLU). The σ(x) that the
// gradient needs is recomputed from x in blocks that stay in cache.

func init() { graph.RegisterFused(rewrite.SiLU, lowerFusedSiLU) }

// lowerFusedSiLU lowers a fused SiLU (rewrite.SiLU: a Mul of x and
// Sigmoid(x)) as one op where both are computed at run time, of the same
// shape, and the Sigmoid's node reads x's; as the Mul otherwise.
func lowerFusedSiLU(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	i := int(rewrite.AttrInt(n, rewrite.AttrSiLUX, 0))
	x, y := in[i], in[1-i]
	if x == nil || y == nil || x.IsConst() || y.IsConst() || !shape.Equal(x.Shape, y.Shape) ||
		x.N == nil || graph.KindOf(y.N) != "Sigmoid" || !slices.Equal(b.Children(y.N), []graph.Node{x.N}) {
		return b.LowerFallback(n, in)
	}
	name, kind := n.GetName(), "SiLU"
	m := &onnxpb.NodeProto{Name: &name, OpType: &kind, Input: n.Input, Output: n.Output}
	v, err := b.Unary(m, []*graph.Value{x}, silu64, siluDeriv64)
	if err != nil {
		return nil, graph.NodeErr(n, "%v", err)
	}
	op := v[0].N.Op().(*graph.KernelOp)
	op.Fwd32, op.Bwd32 = siluFwd32, siluBwd32
	op.Bwd = func(_ int, dst []float64, in [][]float64, _, g []float64) {
		for i, v := range in[0][:len(dst)] {
			dst[i] = g[i] * siluDeriv64(v, 0)
		}
	}
	op.GradReads = []bool{true, false, true} // x and g: σ(x) is recomputed
	return v, nil
}

// silu64 is x·σ(x) as the unfused float64 ops compute it.
func silu64(x float64) float64 { return x * sigmoid64(x) }

// siluDeriv64 is σ(x) + x·σ(x)·(1 − σ(x)).
func siluDeriv64(x, _ float64) float64 {
	s := sigmoid64(x)
	return s + x*(s*(1-s))
}

// siluBlock is the values whose σ one pass of the kernels holds at a time.
const siluBlock = 512

func siluFwd32(dst []float32, in [][]float32) {
	parallel.ForElems(len(dst), parallel.Vec2{D: dst, X: in[0][:len(dst)]}, func(v parallel.Vec2, lo, hi int) {
		for b0 := lo; b0 < hi; b0 += siluBlock {
			b1 := min(hi, b0+siluBlock)
			d, xs := v.D[b0:b1], v.X[b0:b1]
			vmath.Sigmoid32(d, xs)
			for i, v := range xs {
				d[i] = v * d[i]
			}
		}
	})
}

func siluBwd32(_ int, dst []float32, in [][]float32, _, g []float32) bool {
	parallel.ForElems(len(dst), parallel.Vec3{D: dst, X: in[0][:len(dst)], Y: g[:len(dst)]}, func(v parallel.Vec3, lo, hi int) {
		var sb [siluBlock]float32
		for b0 := lo; b0 < hi; b0 += siluBlock {
			b1 := min(hi, b0+siluBlock)
			s, xs, gs, d := sb[:b1-b0], v.X[b0:b1], v.Y[b0:b1], v.D[b0:b1]
			vmath.Sigmoid32(s, xs)
			for i, sv := range s {
				gv := gs[i]
				a := 0 + gv*sv
				gx := float64(0 + gv*xs[i])
				s64 := float64(sv)
				d[i] = a + float32(gx*(s64*(1-s64)))
			}
		}
	})
	return true
}
