package onnxops

import (
	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// GroupNormalization: X (N×C×D1×…) is split into num_groups groups of
// C/num_groups channels per sample; each group is normalised over its
// channels and spatial positions (biased variance, epsilon), then scaled
// and shifted. Opset 18 takes scale and bias per group (num_groups
// elements), opset 21 per channel (C elements) and adds stash_type (the
// statistics are computed in float64 whatever it says). Differentiable in
// X, scale and bias.

func init() {
	graph.Register("GroupNormalization", 18, lowerGroupNorm)
	graph.Register("GroupNormalization", 21, lowerGroupNorm)
}

func lowerGroupNorm(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	x, sc, bias, eps, err := scaleBiasNorm(n, in)
	if err != nil {
		return nil, err
	}
	if !graph.HasAttr(n, "num_groups") {
		return nil, graph.NodeErr(n, "attribute num_groups is required")
	}
	ng, err := graph.AttrInt(n, "num_groups", 0)
	if err != nil {
		return nil, err
	}
	if b.Opset >= 21 {
		st, err := graph.AttrInt(n, "stash_type", 1)
		if err != nil {
			return nil, err
		}
		if !stashTypes[st] {
			return nil, graph.NodeErr(n, "attribute stash_type %d: expected a float type (1 float, 10 float16, 11 double, 16 bfloat16)", st)
		}
	}
	if len(x.Shape) < 2 {
		return nil, graph.NodeErr(n, "input %q of shape %v: expected N×C×D1×… (rank >= 2)", n.Input[0], x.Shape)
	}
	N, C, S := x.Shape[0], x.Shape[1], shape.Numel(x.Shape[2:])
	if ng <= 0 || int64(C)%ng != 0 {
		return nil, graph.NodeErr(n, "num_groups %d must be positive and divide the %d channels of %q", ng, C, n.Input[0])
	}
	G := int(ng)
	per := C / G // channels per group
	affine, what := G, "num_groups"
	if b.Opset >= 21 {
		affine, what = C, "C"
	}
	if shape.Numel(sc.Shape) != affine || shape.Numel(bias.Shape) != affine {
		return nil, graph.NodeErr(n, "scale %v and bias %v must have %s = %d elements at opset %d", sc.Shape, bias.Shape, what, affine, b.Opset)
	}
	// aff returns the scale/bias index of channel c.
	aff := func(c int) int {
		if affine == G {
			return c / per
		}
		return c
	}
	size := per * S // elements per group
	fwd := func(dst []float64, in [][]float64) {
		for gi := 0; gi < N*G; gi++ {
			off := gi * size
			mu, inv := layerStats(in[0][off:off+size], eps)
			for j := off; j < off+size; j++ {
				k := aff((j / S) % C)
				dst[j] = in[1][k]*(in[0][j]-mu)*inv + in[2][k]
			}
		}
	}
	bwd := func(k int, dst []float64, in [][]float64, _, g []float64) {
		for gi := 0; gi < N*G; gi++ {
			off := gi * size
			mu, inv := layerStats(in[0][off:off+size], eps)
			switch k {
			case 0: // dx = inv·(g' − mean(g') − x̂·mean(g'·x̂)), g' = scale·g
				var mg, mgx float64
				for j := off; j < off+size; j++ {
					gs := g[j] * in[1][aff((j/S)%C)]
					mg += gs
					mgx += gs * (in[0][j] - mu) * inv
				}
				mg /= float64(size)
				mgx /= float64(size)
				for j := off; j < off+size; j++ {
					xh := (in[0][j] - mu) * inv
					dst[j] = inv * (g[j]*in[1][aff((j/S)%C)] - mg - xh*mgx)
				}
			case 1:
				for j := off; j < off+size; j++ {
					dst[aff((j/S)%C)] += g[j] * (in[0][j] - mu) * inv
				}
			case 2:
				for j := off; j < off+size; j++ {
					dst[aff((j/S)%C)] += g[j]
				}
			}
		}
	}
	r, err := b.Kernel(n.GetName(), "GroupNormalization", []graph.Node{b.Node(x), b.Node(sc), b.Node(bias)}, x.Shape, fwd, bwd, nil)
	if err != nil {
		return nil, err
	}
	return []*graph.Value{graph.NodeValue(r)}, nil
}
