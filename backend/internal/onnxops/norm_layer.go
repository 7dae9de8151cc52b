package onnxops

import (
	"math"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/rewrite"
	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// LayerNormalization (opset 17): normalise X over its trailing axes
// [axis, rank), y = (x − μ)/√(σ² + ε)·Scale + B (biased variance), Scale
// and the optional B broadcast to X's shape. The optional outputs Mean and
// InvStdDev have X's leading dimensions and ones for the normalised axes.
// The statistics are computed in float64 whatever stash_type says (a
// float32 graph rounds them once to float32). Differentiable in X, Scale
// and B, and Mean and InvStdDev in X.

//
// The nine ops exporters write for LayerNorm before opset 17,
// ReduceMean → Sub → Pow(·, 2) → ReduceMean → Add(·, ε) → Sqrt → Div →
// Mul(·, Scale) → Add(·, B) (rewrite.LayerNorm finds them), run as
// LayerNormalization over the same trailing axes (lowerFusedLayerNorm):
// one pass for the statistics and one for the output instead of nine ops
// with five stored intermediates and their broadcast gradients, and the
// statistics in float64 (the float32 ops round each step, so the two
// differ by float32 round-off: TestLayerNormPatternFused, TestFuseLayerNorm).

func init() {
	graph.Register("LayerNormalization", 17, lowerLayerNorm)
	graph.RegisterFused(rewrite.LayerNorm, lowerFusedLayerNorm)
}

// lowerFusedLayerNorm lowers a fused LayerNorm (rewrite.LayerNorm) as
// LayerNormalization of its x, Scale and B with its ε, or as the Add it
// replaced where the pattern is not one: x not a float value computed at
// run time, the exponent not a constant 2, ε not a constant single value,
// the ReduceMeans' axes not X's trailing axes, or Scale or B broadcasting
// X to a larger shape.
func lowerFusedLayerNorm(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	k := len(rewrite.Fallback(n).Input)
	x, sc, bias, eps, two := in[k], in[k+1], in[k+2], in[k+3], in[k+4]
	if x == nil || x.IsConst() || x.N == nil || graph.IsIntNode(x) || sc == nil || bias == nil {
		return b.LowerFallback(n, in)
	}
	single := func(v *graph.Value) (float64, bool) {
		if v == nil || !v.IsConst() || !v.C.IsFloat() || shape.Numel(v.C.Shape) != 1 || len(v.C.Shape) > len(x.Shape) {
			return 0, false
		}
		return v.C.Float64s()[0], true
	}
	e, ok1 := single(eps)
	p, ok2 := single(two)
	if !ok1 || !ok2 || p != 2 || float64(float32(e)) != e { // the attribute is a float32
		return b.LowerFallback(n, in)
	}
	r := len(x.Shape)
	axes := rewrite.AttrInts(n, rewrite.AttrLayerNormAxes)
	norm := make([]int, len(axes))
	for i, a := range axes {
		if a < -int64(r) || a >= int64(r) {
			return b.LowerFallback(n, in)
		}
		if a < 0 {
			a += int64(r)
		}
		norm[i] = int(a)
	}
	slices.Sort(norm)
	for i, a := range norm {
		if a != r-len(norm)+i {
			return b.LowerFallback(n, in)
		}
	}
	for _, v := range []*graph.Value{sc, bias} {
		if bs, err := shape.Broadcast(x.Shape, v.Shape); err != nil || !shape.Equal(bs, x.Shape) {
			return b.LowerFallback(n, in)
		}
	}
	name, op := n.GetName(), "LayerNormalization"
	ln := &onnxpb.NodeProto{Name: &name, OpType: &op, Input: rewrite.Extra(n)[:3], Output: n.Output[:1],
		Attribute: []*onnxpb.AttributeProto{
			{Name: proto.String("axis"), Type: onnxpb.AttributeProto_INT.Enum(), I: proto.Int64(int64(r - len(norm)))},
			{Name: proto.String("epsilon"), Type: onnxpb.AttributeProto_FLOAT.Enum(), F: proto.Float32(float32(e))},
		}}
	return lowerLayerNorm(b, ln, []*graph.Value{x, sc, bias})
}

// stashTypes are the stash_type values ONNX allows (float, float16,
// double, bfloat16).
var stashTypes = map[int64]bool{1: true, 10: true, 11: true, 16: true}

// layerGroups splits shape s at axis (normalised, possibly negative) into
// the number of groups and the size of each.
func layerGroups(n *onnxpb.NodeProto, s []int, axis int64) (groups, size, ax int, err error) {
	r := int64(len(s))
	if axis < -r || axis >= r {
		return 0, 0, 0, graph.NodeErr(n, "attribute axis %d out of range for input %q of rank %d (expected %d to %d)", axis, n.Input[0], r, -r, r-1)
	}
	if axis < 0 {
		axis += r
	}
	return shape.Numel(s[:axis]), shape.Numel(s[axis:]), int(axis), nil
}

func lowerLayerNorm(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	x, err := graph.Input(n, in, 0)
	if err != nil {
		return nil, err
	}
	sc, err := graph.Input(n, in, 1)
	if err != nil {
		return nil, err
	}
	bias := graph.OptInput(in, 2)
	axis, err := graph.AttrInt(n, "axis", -1)
	if err != nil {
		return nil, err
	}
	eps, err := graph.AttrFloat(n, "epsilon", 1e-5)
	if err != nil {
		return nil, err
	}
	st, err := graph.AttrInt(n, "stash_type", 1)
	if err != nil {
		return nil, err
	}
	if !stashTypes[st] {
		return nil, graph.NodeErr(n, "attribute stash_type %d: expected a float type (1 float, 10 float16, 11 double, 16 bfloat16)", st)
	}
	groups, S, ax, err := layerGroups(n, x.Shape, axis)
	if err != nil {
		return nil, err
	}
	ins := []graph.Node{b.Node(x), b.Node(sc)}
	idx := []*shape.Bcast{nil, nil, nil} // element of Scale / B used by each element of X
	for i, v := range []*graph.Value{sc, bias} {
		if v == nil {
			continue
		}
		bs, err := shape.Broadcast(x.Shape, v.Shape)
		if err != nil || !shape.Equal(bs, x.Shape) {
			return nil, graph.NodeErr(n, "input %d %q of shape %v does not broadcast to X's shape %v (opset %d)", i+1, n.Input[i+1], v.Shape, x.Shape, b.Opset)
		}
		idx[i+1] = shape.NewBcast(v.Shape, x.Shape)
		if i == 1 {
			ins = append(ins, b.Node(v))
		}
	}
	at := func(k, j int) int { return atB(idx[k], j) }
	stats := func(src []float64, off int) (mu, inv float64) {
		return layerStats(src[off:off+S], eps)
	}
	fwd := func(dst []float64, in [][]float64) {
		for gi := 0; gi < groups; gi++ {
			off := gi * S
			mu, inv := stats(in[0], off)
			for j := off; j < off+S; j++ {
				dst[j] = (in[0][j] - mu) * inv * in[1][at(1, j)]
				if len(in) > 2 {
					dst[j] += in[2][at(2, j)]
				}
			}
		}
	}
	bwd := func(k int, dst []float64, in [][]float64, _, g []float64) {
		for gi := 0; gi < groups; gi++ {
			off := gi * S
			mu, inv := stats(in[0], off)
			switch k {
			case 0: // dx = inv·(g' − mean(g') − x̂·mean(g'·x̂)), g' = Scale·g
				var mg, mgx float64
				for j := off; j < off+S; j++ {
					gs := g[j] * in[1][at(1, j)]
					mg += gs
					mgx += gs * (in[0][j] - mu) * inv
				}
				mg /= float64(S)
				mgx /= float64(S)
				for j := off; j < off+S; j++ {
					xh := (in[0][j] - mu) * inv
					dst[j] = inv * (g[j]*in[1][at(1, j)] - mg - xh*mgx)
				}
			case 1:
				for j := off; j < off+S; j++ {
					dst[at(1, j)] += g[j] * (in[0][j] - mu) * inv
				}
			case 2:
				for j := off; j < off+S; j++ {
					dst[at(2, j)] += g[j]
				}
			}
		}
	}
	var y graph.Node
	if affineTrailing(sc, idx[1], groups, S) && (bias == nil || affineTrailing(bias, idx[2], groups, S)) {
		l := layerNorm32{groups: groups, S: S, eps: eps, bias: bias != nil}
		y, err = b.FillingKernel32(n.GetName(), "LayerNormalization", ins, x.Shape, fwd, bwd, nil, l.forward, l.backward)
	} else {
		y, err = b.Kernel(n.GetName(), "LayerNormalization", ins, x.Shape, fwd, bwd, nil)
	}
	if err != nil {
		return nil, err
	}
	outs := []*graph.Value{graph.NodeValue(y)}
	if len(n.Output) < 2 || (n.Output[1] == "" && (len(n.Output) < 3 || n.Output[2] == "")) {
		return outs, nil
	}
	statShape := append([]int{}, x.Shape...)
	for i := ax; i < len(statShape); i++ {
		statShape[i] = 1
	}
	mean, err := b.Kernel(n.GetName(), "LayerNormalization Mean", []graph.Node{b.Node(x)}, statShape,
		func(dst []float64, in [][]float64) {
			for gi := range dst {
				dst[gi], _ = stats(in[0], gi*S)
			}
		},
		func(_ int, dst []float64, _ [][]float64, _, g []float64) {
			for j := range dst {
				dst[j] = g[j/S] / float64(S)
			}
		}, nil)
	if err != nil {
		return nil, err
	}
	// ∂inv/∂x_j = −inv³·(x_j − μ)/S
	invStd, err := b.Kernel(n.GetName(), "LayerNormalization InvStdDev", []graph.Node{b.Node(x)}, statShape,
		func(dst []float64, in [][]float64) {
			for gi := range dst {
				_, dst[gi] = stats(in[0], gi*S)
			}
		},
		func(_ int, dst []float64, in [][]float64, _, g []float64) {
			for gi := 0; gi < groups; gi++ {
				mu, inv := stats(in[0], gi*S)
				for j := gi * S; j < (gi+1)*S; j++ {
					dst[j] = -g[gi] * inv * inv * inv * (in[0][j] - mu) / float64(S)
				}
			}
		}, nil)
	if err != nil {
		return nil, err
	}
	return append(outs, graph.NodeValue(mean), graph.NodeValue(invStd)), nil
}

// layerStats returns the mean of v and 1/√(σ² + eps), σ² the biased
// variance.
func layerStats(v []float64, eps float64) (mu, inv float64) {
	for _, e := range v {
		mu += e
	}
	mu /= float64(len(v))
	var vr float64
	for _, e := range v {
		vr += (e - mu) * (e - mu)
	}
	return mu, 1 / math.Sqrt(vr/float64(len(v))+eps)
}

// affineTrailing reports whether Scale or B (v, with broadcast b into
// X) maps element j of X to j mod S: it covers exactly the normalised
// axes.
func affineTrailing(v *graph.Value, b *shape.Bcast, groups, S int) bool {
	switch {
	case b == nil:
		return groups == 1
	case b.Idx == nil:
		return b.Mid == S && b.Inner == 1
	}
	if shape.Numel(v.Shape) != S {
		return false
	}
	for j, i := range b.Idx {
		if i != j%S {
			return false
		}
	}
	return true
}
