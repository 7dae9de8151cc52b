package onnxops

import (
	"math"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/parallel"
)

// Float32 kernels of LayerNormalization: the float64 path's arithmetic on
// the float32 data (every statistic and sum in float64, in the same
// order, each result rounded once), so the bits are the float64 path's
// rounded to float32, without float64 copies of X, the output and the
// gradients. They take Scale and B covering exactly the normalised axes
// (the index of element j in its group is j mod S), the layout every
// exporter writes; other broadcasts run on the float64 path.

// layerNorm32 describes one LayerNormalization: groups of S values, Scale
// and B of S values each (B optional).
type layerNorm32 struct {
	groups, S int
	eps       float64
	bias      bool
}

// layerStats32 is layerStats on float32 values.
func layerStats32(v []float32, eps float64) (mu, inv float64) {
	for _, e := range v {
		mu += float64(e)
	}
	mu /= float64(len(v))
	var vr float64
	for _, e := range v {
		d := float64(e) - mu
		vr += d * d
	}
	return mu, 1 / math.Sqrt(vr/float64(len(v))+eps)
}

// forward writes the normalised x into dst.
func (l layerNorm32) forward(dst []float32, in [][]float32) {
	x, sc := in[0], in[1]
	var b []float32
	if l.bias {
		b = in[2]
	}
	S := l.S
	parallel.Items(l.groups, S, func(lo, hi int) {
		for gi := lo; gi < hi; gi++ {
			off := gi * S
			xs, d := x[off:off+S], dst[off:off+S]
			mu, inv := layerStats32(xs, l.eps)
			for j, v := range xs {
				y := (float64(v) - mu) * inv * float64(sc[j])
				if b != nil {
					y += float64(b[j])
				}
				d[j] = float32(y)
			}
		}
	})
}

// gradX writes ∂/∂x into dst: inv·(g' − mean(g') − x̂·mean(g'·x̂)),
// g' = Scale·g, per group.
func (l layerNorm32) gradX(dst, x, sc, g []float32) {
	S := l.S
	parallel.Items(l.groups, 3*S, func(lo, hi int) {
		for gi := lo; gi < hi; gi++ {
			off := gi * S
			xs, gs, d := x[off:off+S], g[off:off+S], dst[off:off+S]
			mu, inv := layerStats32(xs, l.eps)
			var mg, mgx float64
			for j, v := range xs {
				t := float64(gs[j]) * float64(sc[j])
				mg += t
				mgx += t * (float64(v) - mu) * inv
			}
			mg /= float64(S)
			mgx /= float64(S)
			for j, v := range xs {
				xh := (float64(v) - mu) * inv
				d[j] = float32(inv * (float64(gs[j])*float64(sc[j]) - mg - xh*mgx))
			}
		}
	})
}

// gradAffine writes ∂/∂Scale (bias false) or ∂/∂B (bias true) into dst
// (S values): each sums one term per group in ascending group order, as
// the float64 path does, in float64 (acc: S zeroed values; stats: 2·groups
// values), then rounds once. The columns are split across goroutines, so
// every sum keeps its order.
func (l layerNorm32) gradAffine(dst []float32, x, g []float32, bias bool, acc, stats []float64) {
	S := l.S
	if !bias {
		parallel.Items(l.groups, S, func(lo, hi int) {
			for gi := lo; gi < hi; gi++ {
				stats[2*gi], stats[2*gi+1] = layerStats32(x[gi*S:(gi+1)*S], l.eps)
			}
		})
	}
	parallel.Items(S, l.groups, func(lo, hi int) {
		a := acc[lo:hi]
		for gi := 0; gi < l.groups; gi++ {
			gs := g[gi*S+lo : gi*S+hi]
			if bias {
				for j, v := range gs {
					a[j] += float64(v)
				}
				continue
			}
			mu, inv := stats[2*gi], stats[2*gi+1]
			xs := x[gi*S+lo : gi*S+hi]
			for j, v := range gs {
				a[j] += float64(v) * (float64(xs[j]) - mu) * inv
			}
		}
		for j, v := range a {
			dst[lo+j] = float32(v)
		}
	})
}

// backward is a graph.Backward32Func for input k (0 X, 1 Scale, 2 B).
func (l layerNorm32) backward(k int, dst []float32, in [][]float32, _, g []float32) bool {
	switch k {
	case 0:
		l.gradX(dst, in[0], in[1], g)
	case 1, 2:
		var sc graph.F64Scratch
		defer sc.Release()
		var stats []float64
		if k == 1 {
			stats = sc.Get(2 * l.groups)
		}
		l.gradAffine(dst, in[0], g, k == 2, sc.Get(l.S), stats)
	default:
		return false
	}
	return true
}
