package loss

import (
	"fmt"
	"math"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/importer"
)

// normal_cos: 1 − the mean over valid pixels of the cosine between the
// predicted and the target normal [N, C, H, W] (channel dimension 1). Both
// vectors are normalised per pixel, so the loss lies in [0, 2] whatever
// the scale of the prediction; a pixel is valid when its target is not all
// zero, and a zero predicted normal counts as cosine 0 (the 90° that the
// angle metrics give it). For a prediction that is already unit length (as
// MTAN's model makes it) this is 1 − the mean dot product.

func init() {
	register(Kind{
		Name:    "normal_cos",
		Summary: "1 − the mean cosine between predicted and target normals over the pixels with a target normal",
		Target:  "unit normals of the output's shape (0 = no normal)",
		TargetShape: func(out []int) ([]int, error) {
			if len(out) < 2 {
				return nil, fmt.Errorf("normals must have shape [N, C, ...], have %v", out)
			}
			return sameShape(out)
		},
		Metrics: Normals, Count: countNormals, Build: normalLoss,
	})
}

// countNormals counts the pixels whose target normal is not zero (an
// [N, C, ...] target: C values a pixel).
func countNormals(a *importer.Tensor, _ Head) (int, error) {
	if len(a.Shape) < 2 {
		return 0, fmt.Errorf("has shape %v, expected [N, C, ...]", a.Shape)
	}
	v := a.Float64s()
	N, C := a.Shape[0], a.Shape[1]
	inner := len(v) / max(N*C, 1)
	k := 0
	for n := 0; n < N; n++ {
		for j := 0; j < inner; j++ {
			for c := 0; c < C; c++ {
				if v[(n*C+c)*inner+j] != 0 {
					k++
					break
				}
			}
		}
	}
	return k, nil
}

// normalGeom is the layout of a normal_cos loss: N examples of C-vectors
// over inner positions.
type normalGeom struct{ N, C, inner int }

// normalPixel returns |x|, |t| and x·t at pixel (n, j) of g, in float64.
func normalPixel[T graph.Float](g normalGeom, x, tg []T, n, j int) (nx, nt, dot float64) {
	for c := 0; c < g.C; c++ {
		i := (n*g.C+c)*g.inner + j
		xi, ti := float64(x[i]), float64(tg[i])
		nx += xi * xi
		nt += ti * ti
		dot += xi * ti
	}
	return math.Sqrt(nx), math.Sqrt(nt), dot
}

// normalCount is the number of valid pixels (target not all zero).
func normalCount[T graph.Float](g normalGeom, tg []T) float64 {
	k := 0.0
	for n := 0; n < g.N; n++ {
		for j := 0; j < g.inner; j++ {
			if _, nt, _ := normalPixel(g, tg, tg, n, j); nt != 0 {
				k++
			}
		}
	}
	return k
}

func normalLoss(b *graph.Builder, h Head, out, target graph.Node) (graph.Node, error) {
	s := out.Shape()
	g := normalGeom{N: s[0], C: s[1], inner: shape.Numel(s[2:])}
	fwd, bwd := normalFwd[float64](g), normalBwd[float64](g)
	fwd32, bwd32g := normalFwd[float32](g), normalBwd[float32](g)
	bwd32 := func(k int, dst []float32, in [][]float32, out, gr []float32) bool {
		bwd32g(k, dst, in, out, gr)
		return true
	}
	return b.FillingKernel32("loss:"+h.Task, h.Kind, []graph.Node{out, target}, nil, fwd, bwd, []bool{true, false}, fwd32, bwd32)
}

// normalFwd is normal_cos's value on data of type T, in float64 rounded
// once (the graph.Forward32Func rule for float32 data).
func normalFwd[T graph.Float](g normalGeom) func(dst []T, in [][]T) {
	return func(dst []T, in [][]T) {
		x, tg := in[0], in[1]
		sum := 0.0
		for n := 0; n < g.N; n++ {
			for j := 0; j < g.inner; j++ {
				nx, nt, dot := normalPixel(g, x, tg, n, j)
				if nt == 0 || nx == 0 {
					continue // invalid pixel, or cosine 0
				}
				sum += dot / (nx * nt)
			}
		}
		k := normalCount(g, tg)
		if k == 0 {
			dst[0] = T(math.NaN())
			return
		}
		dst[0] = T(1 - sum/k)
	}
}

// normalBwd is normal_cos's gradient with respect to the prediction,
// writing every element of dst, each in float64 rounded once:
// ∂cos/∂x = (t/|t| − cos·x/|x|)/|x|; an invalid pixel and a zero
// prediction get zero (the zero subgradient).
func normalBwd[T graph.Float](g normalGeom) func(k int, dst []T, in [][]T, out, gr []T) {
	return func(_ int, dst []T, in [][]T, _, gr []T) {
		x, tg := in[0], in[1]
		k := -float64(gr[0]) / normalCount(g, tg)
		for n := 0; n < g.N; n++ {
			for j := 0; j < g.inner; j++ {
				nx, nt, dot := normalPixel(g, x, tg, n, j)
				if nt == 0 || nx == 0 {
					for c := 0; c < g.C; c++ {
						dst[(n*g.C+c)*g.inner+j] = 0
					}
					continue
				}
				cos := dot / (nx * nt)
				for c := 0; c < g.C; c++ {
					i := (n*g.C+c)*g.inner + j
					dst[i] = T(k * (float64(tg[i])/nt - cos*float64(x[i])/nx) / nx)
				}
			}
		}
	}
}
