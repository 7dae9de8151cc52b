package onnxops

import (
	"math"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/parallel"
	"github.com/paretonav/paretonav/backend/internal/vmath"
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

// statsChunk is how many groups' statistics the kernels compute ahead of
// using them (two arrays of it on a goroutine's stack).
const statsChunk = 64

// layerStats32Groups sets mu[i], inv[i] to layerStats32 of group i of x
// (S values each) for i < len(mu): eight groups at a time in vector lanes
// (vmath.Stats8), then four at a time, each group's sums in their own
// order (layerStats32's bits), so independent chains of float64
// additions overlap instead of each waiting for the last.
func layerStats32Groups(x []float32, S int, eps float64, mu, inv []float64) {
	n, i := len(mu), 0
	inv = inv[:n]
	fs := float64(S)
	for ; i+8 <= n; i += 8 {
		vmath.Stats8(x[i*S:], S, eps, (*[8]float64)(mu[i:]), (*[8]float64)(inv[i:]))
	}
	for ; i+4 <= n; i += 4 {
		a, b, c, d := x[i*S:][:S], x[(i+1)*S:][:S], x[(i+2)*S:][:S], x[(i+3)*S:][:S]
		var s0, s1, s2, s3 float64
		for j, v := range a {
			s0 += float64(v)
			s1 += float64(b[j])
			s2 += float64(c[j])
			s3 += float64(d[j])
		}
		m0, m1, m2, m3 := s0/fs, s1/fs, s2/fs, s3/fs
		var v0, v1, v2, v3 float64
		for j, v := range a {
			d0, d1, d2, d3 := float64(v)-m0, float64(b[j])-m1, float64(c[j])-m2, float64(d[j])-m3
			v0 += d0 * d0
			v1 += d1 * d1
			v2 += d2 * d2
			v3 += d3 * d3
		}
		mu[i], mu[i+1], mu[i+2], mu[i+3] = m0, m1, m2, m3
		inv[i], inv[i+1], inv[i+2], inv[i+3] = 1/math.Sqrt(v0/fs+eps), 1/math.Sqrt(v1/fs+eps), 1/math.Sqrt(v2/fs+eps), 1/math.Sqrt(v3/fs+eps)
	}
	for ; i < n; i++ {
		mu[i], inv[i] = layerStats32(x[i*S:(i+1)*S], eps)
	}
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
		var mus, invs [statsChunk]float64
		for gi := lo; gi < hi; gi++ {
			if k := (gi - lo) % statsChunk; k == 0 {
				n := min(statsChunk, hi-gi)
				layerStats32Groups(x[gi*S:], S, l.eps, mus[:n], invs[:n])
			}
			mu, inv := mus[(gi-lo)%statsChunk], invs[(gi-lo)%statsChunk]
			off := gi * S
			xs, d := x[off:off+S], dst[off:off+S]
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
		var mus, invs [statsChunk]float64
		var mg, mgx [4]float64
		for c0 := lo; c0 < hi; c0 += statsChunk {
			n := min(statsChunk, hi-c0)
			layerStats32Groups(x[c0*S:], S, l.eps, mus[:n], invs[:n])
			for i := 0; i < n; {
				// The sums of four groups at a time (fewer at the end),
				// each group's in its own order: independent chains.
				q := min(4, n-i)
				if q == 4 {
					gradXSums4(x[(c0+i)*S:], g[(c0+i)*S:], sc[:S], mus[i:i+4], invs[i:i+4], &mg, &mgx)
				} else {
					for k := range q {
						mg[k], mgx[k] = gradXSums(x[(c0+i+k)*S:][:S], g[(c0+i+k)*S:][:S], sc[:S], mus[i+k], invs[i+k])
					}
				}
				for k := range q {
					mu, inv := mus[i+k], invs[i+k]
					off := (c0 + i + k) * S
					xs, gs, d := x[off:off+S], g[off:off+S], dst[off:off+S]
					m, mx := mg[k]/float64(S), mgx[k]/float64(S)
					for j, v := range xs {
						xh := (float64(v) - mu) * inv
						d[j] = float32(inv * (float64(gs[j])*float64(sc[j]) - m - xh*mx))
					}
				}
				i += q
			}
		}
	})
}

// gradXSums returns gradX's sums over one group: Σ g'·1 and Σ g'·x̂, g' =
// Scale·g, in ascending order.
func gradXSums(xs, gs, sc []float32, mu, inv float64) (mg, mgx float64) {
	gs, sc = gs[:len(xs)], sc[:len(xs)]
	for j, v := range xs {
		t := float64(gs[j]) * float64(sc[j])
		mg += t
		mgx += t * (float64(v) - mu) * inv
	}
	return mg, mgx
}

// gradXSums4 is gradXSums of four consecutive groups (x and g from the
// first group on, S = len(sc) values each), interleaved: the same sums in
// the same order as four calls, in eight independent chains.
func gradXSums4(x, g, sc []float32, mu, inv []float64, mg, mgx *[4]float64) {
	S := len(sc)
	x0, x1, x2, x3 := x[:S], x[S:2*S], x[2*S:3*S], x[3*S:4*S]
	g0, g1, g2, g3 := g[:S], g[S:2*S], g[2*S:3*S], g[3*S:4*S]
	m0, m1, m2, m3 := mu[0], mu[1], mu[2], mu[3]
	i0, i1, i2, i3 := inv[0], inv[1], inv[2], inv[3]
	var a0, a1, a2, a3, b0, b1, b2, b3 float64
	for j, s := range sc {
		f := float64(s)
		t0, t1, t2, t3 := float64(g0[j])*f, float64(g1[j])*f, float64(g2[j])*f, float64(g3[j])*f
		a0 += t0
		a1 += t1
		a2 += t2
		a3 += t3
		b0 += t0 * (float64(x0[j]) - m0) * i0
		b1 += t1 * (float64(x1[j]) - m1) * i1
		b2 += t2 * (float64(x2[j]) - m2) * i2
		b3 += t3 * (float64(x3[j]) - m3) * i3
	}
	*mg = [4]float64{a0, a1, a2, a3}
	*mgx = [4]float64{b0, b1, b2, b3}
}

// gradAffine writes ∂/∂Scale (bias false) or ∂/∂B (bias true) into dst
// (S values): each sums one term per group in ascending group order, as
// the float64 path does, in float64 (acc: S zeroed values; stats: 2·groups
// values: the means, then the inverse deviations), then rounds once. The
// columns are split across goroutines, so every sum keeps its order.
func (l layerNorm32) gradAffine(dst []float32, x, g []float32, bias bool, acc, stats []float64) {
	S := l.S
	if !bias {
		parallel.Items(l.groups, S, func(lo, hi int) {
			layerStats32Groups(x[lo*S:], S, l.eps, stats[lo:hi], stats[l.groups+lo:l.groups+hi])
		})
	}
	parallel.Items(S, l.groups, func(lo, hi int) {
		a := acc[lo:hi]
		for gi := 0; gi < l.groups; gi++ {
			gs := g[gi*S+lo : gi*S+hi]
			if bias {
				vmath.AddTo64(a, gs)
				continue
			}
			vmath.AddNormTo64(a, gs, x[gi*S+lo:gi*S+hi], stats[gi], stats[l.groups+gi])
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
