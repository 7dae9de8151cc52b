package onnxops

import (
	"math"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/importer/onnxpb"
	"gorgonia.org/tensor"
)

// InstanceNormalization: per sample and channel, normalise over the
// spatial dimensions, y = scale[c]·(x − μ)/√(σ² + ε) + B[c] (biased
// variance). Differentiable in X, scale and B.

func init() { graph.Register("InstanceNormalization", 1, lowerInstanceNorm) }

func lowerInstanceNorm(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	x, sc, bias, eps, err := scaleBiasNorm(n, in)
	if err != nil {
		return nil, err
	}
	if len(x.Shape) < 3 {
		return nil, graph.NodeErr(n, "input %q of shape %v: expected N×C×D1×… (rank >= 3, opset %d)", n.Input[0], x.Shape, b.Opset)
	}
	N, C, S := x.Shape[0], x.Shape[1], shape.Numel(x.Shape[2:])
	if shape.Numel(sc.Shape) != C || shape.Numel(bias.Shape) != C {
		return nil, graph.NodeErr(n, "scale %v and B %v must have C = %d elements (opset %d)", sc.Shape, bias.Shape, C, b.Opset)
	}
	// stats returns the mean and 1/√(σ²+ε) of instance (n, c).
	stats := func(src []float64, off int) (mu, inv float64) {
		for _, v := range src[off : off+S] {
			mu += v
		}
		mu /= float64(S)
		var vr float64
		for _, v := range src[off : off+S] {
			vr += (v - mu) * (v - mu)
		}
		return mu, 1 / math.Sqrt(vr/float64(S)+eps)
	}
	fwd := func(dst []float64, in [][]float64) {
		for i := 0; i < N*C; i++ {
			c, off := i%C, i*S
			mu, inv := stats(in[0], off)
			for j := off; j < off+S; j++ {
				dst[j] = in[1][c]*(in[0][j]-mu)*inv + in[2][c]
			}
		}
	}
	bwd := func(k int, dst []float64, in [][]float64, _, g []float64) {
		for i := 0; i < N*C; i++ {
			c, off := i%C, i*S
			mu, inv := stats(in[0], off)
			switch k {
			case 0: // dx = inv·(g' − mean(g') − x̂·mean(g'·x̂)), g' = scale·g
				var mg, mgx float64
				for j := off; j < off+S; j++ {
					xh := (in[0][j] - mu) * inv
					mg += g[j]
					mgx += g[j] * xh
				}
				mg /= float64(S)
				mgx /= float64(S)
				for j := off; j < off+S; j++ {
					xh := (in[0][j] - mu) * inv
					dst[j] = in[1][c] * inv * (g[j] - mg - xh*mgx)
				}
			case 1:
				for j := off; j < off+S; j++ {
					dst[c] += g[j] * (in[0][j] - mu) * inv
				}
			case 2:
				for j := off; j < off+S; j++ {
					dst[c] += g[j]
				}
			}
		}
	}
	p32 := &instNorm32{n: N, c: C, s: S, eps: eps}
	if b.Dtype == tensor.Float32 {
		b.ColCache += p32.keptBytes()
	}
	r, err := b.FillingKernel32(n.GetName(), "InstanceNormalization", []graph.Node{b.Node(x), b.Node(sc), b.Node(bias)}, x.Shape, fwd, bwd, nil, p32.forward, p32.backward)
	if err != nil {
		return nil, err
	}
	return []*graph.Value{graph.NodeValue(r)}, nil
}

// scaleBiasNorm reads the inputs X, scale and B and the epsilon attribute
// (default 1e-5) shared by InstanceNormalization and GroupNormalization.
func scaleBiasNorm(n *onnxpb.NodeProto, in []*graph.Value) (x, scale, bias *graph.Value, eps float64, err error) {
	var xs [3]*graph.Value
	for i := range xs {
		if xs[i], err = graph.Input(n, in, i); err != nil {
			return nil, nil, nil, 0, err
		}
	}
	eps, err = graph.AttrFloat(n, "epsilon", 1e-5)
	if err != nil {
		return nil, nil, nil, 0, err
	}
	return xs[0], xs[1], xs[2], eps, nil
}
