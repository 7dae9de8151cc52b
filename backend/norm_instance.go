package backend

import (
	"math"

	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// InstanceNormalization: per sample and channel, normalise over the
// spatial dimensions, y = scale[c]·(x − μ)/√(σ² + ε) + B[c] (biased
// variance). Differentiable in X, scale and B.

func init() { register("InstanceNormalization", 1, lowerInstanceNorm) }

func lowerInstanceNorm(b *builder, n *onnxpb.NodeProto, in []*value) ([]*value, error) {
	x, sc, bias, eps, err := scaleBiasNorm(n, in)
	if err != nil {
		return nil, err
	}
	if len(x.shape) < 3 {
		return nil, nodeErr(n, "input %q of shape %v: expected N×C×D1×… (rank >= 3, opset %d)", n.Input[0], x.shape, b.opset)
	}
	N, C, S := x.shape[0], x.shape[1], shape.Numel(x.shape[2:])
	if shape.Numel(sc.shape) != C || shape.Numel(bias.shape) != C {
		return nil, nodeErr(n, "scale %v and B %v must have C = %d elements (opset %d)", sc.shape, bias.shape, C, b.opset)
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
	r, err := b.kernel(n.GetName(), "InstanceNormalization", []gnode{b.node(x), b.node(sc), b.node(bias)}, x.shape, fwd, bwd, nil)
	if err != nil {
		return nil, err
	}
	return []*value{nodeValue(r)}, nil
}

// scaleBiasNorm reads the inputs X, scale and B and the epsilon attribute
// (default 1e-5) shared by InstanceNormalization and GroupNormalization.
func scaleBiasNorm(n *onnxpb.NodeProto, in []*value) (x, scale, bias *value, eps float64, err error) {
	var xs [3]*value
	for i := range xs {
		if xs[i], err = input(n, in, i); err != nil {
			return nil, nil, nil, 0, err
		}
	}
	eps, err = attrFloat(n, "epsilon", 1e-5)
	if err != nil {
		return nil, nil, nil, 0, err
	}
	return xs[0], xs[1], xs[2], eps, nil
}
