package onnxops

import (
	"github.com/paretonav/paretonav/backend/internal/parallel"
)

// Float32 kernels of InstanceNormalization: the float64 kernel's
// arithmetic on the float32 data (statistics and sums in float64 in the
// same order, each result rounded once), so the bits are the float64
// kernel's rounded to float32, without float64 copies of X, the output
// and the gradients; the instances split across goroutines (∂scale and ∂B
// by channel, each channel's sum over the samples in the float64 order).

// instNorm32 is one InstanceNormalization: n·c instances of s values.
type instNorm32 struct {
	n, c, s int
	eps     float64
}

// statsInto sets mu[k], inv[k] to the float64 kernel's mean and
// 1/√(σ²+ε) of instance i0+k (layerStats32Groups: the same sums, four
// instances' chains at a time).
func (p *instNorm32) statsInto(x []float32, i0 int, mu, inv []float64) {
	layerStats32Groups(x[i0*p.s:], p.s, p.eps, mu, inv)
}

func (p *instNorm32) forward(dst []float32, in [][]float32) {
	x, sc, b := in[0], in[1], in[2]
	parallel.Items(p.n*p.c, 2*p.s, func(lo, hi int) {
		var mus, invs [statsChunk]float64
		for i0 := lo; i0 < hi; i0 += statsChunk {
			q := min(statsChunk, hi-i0)
			p.statsInto(x, i0, mus[:q], invs[:q])
			for k := range q {
				i := i0 + k
				c, xi, yi := i%p.c, x[i*p.s:][:p.s], dst[i*p.s:][:p.s]
				mu, inv := mus[k], invs[k]
				s, bb := float64(sc[c]), float64(b[c])
				for j, v := range xi {
					yi[j] = float32(s*(float64(v)-mu)*inv + bb)
				}
			}
		}
	})
}

// dxSums2 returns the sums Σg and Σg·x̂ of two instances (x, g) and
// (x2, g2) of equal length, each in the float64 kernel's order, their
// four chains interleaved.
func dxSums2(x, g, x2, g2 []float32, mu, inv, mu2, inv2 float64) (mg, mgx, mg2, mgx2 float64) {
	g2 = g2[:len(x)]
	x2 = x2[:len(x)]
	g = g[:len(x)]
	for j, v := range x {
		xh := (float64(v) - mu) * inv
		xh2 := (float64(x2[j]) - mu2) * inv2
		mg += float64(g[j])
		mgx += float64(g[j]) * xh
		mg2 += float64(g2[j])
		mgx2 += float64(g2[j]) * xh2
	}
	return
}

func (p *instNorm32) backward(k int, dst []float32, in [][]float32, _, g []float32) bool {
	x, sc := in[0], in[1]
	S := p.s
	switch k {
	case 0:
		parallel.Items(p.n*p.c, 3*S, func(lo, hi int) {
			var mus, invs [statsChunk]float64
			for i0 := lo; i0 < hi; i0 += statsChunk {
				q := min(statsChunk, hi-i0)
				p.statsInto(x, i0, mus[:q], invs[:q])
				for k := 0; k < q; {
					var mg, mgx [2]float64
					r := min(2, q-k)
					i := i0 + k
					if r == 2 {
						mg[0], mgx[0], mg[1], mgx[1] = dxSums2(x[i*S:][:S], g[i*S:], x[(i+1)*S:], g[(i+1)*S:], mus[k], invs[k], mus[k+1], invs[k+1])
					} else {
						xi, gi := x[i*S:][:S], g[i*S:][:S]
						for j, v := range xi {
							xh := (float64(v) - mus[k]) * invs[k]
							mg[0] += float64(gi[j])
							mgx[0] += float64(gi[j]) * xh
						}
					}
					for e := range r {
						i := i0 + k + e
						c, xi, gi, di := i%p.c, x[i*S:][:S], g[i*S:][:S], dst[i*S:][:S]
						mu, inv := mus[k+e], invs[k+e]
						m, mx := mg[e]/float64(S), mgx[e]/float64(S)
						si := float64(sc[c]) * inv // s·inv·(…) multiplies s·inv first
						for j, v := range xi {
							xh := (float64(v) - mu) * inv
							di[j] = float32(si * (float64(gi[j]) - m - xh*mx))
						}
					}
					k += r
				}
			}
		})
	case 1, 2:
		// Channels four at a time (four independent chains, fewer at the
		// end), each channel's sum over the samples in the float64 order.
		parallel.Items(p.c, p.n*3*S, func(lo, hi int) {
			var mu, inv [4]float64
			for c0 := lo; c0 < hi; c0 += 4 {
				q := min(4, hi-c0)
				var acc [4]float64
				for b := 0; b < p.n; b++ {
					i0 := b*p.c + c0
					if k == 2 {
						for e := range q {
							a := acc[e]
							for _, v := range g[(i0+e)*S:][:S] {
								a += float64(v)
							}
							acc[e] = a
						}
						continue
					}
					p.statsInto(x, i0, mu[:q], inv[:q])
					if q == 4 {
						scaleSums4(x[i0*S:], g[i0*S:], S, &mu, &inv, &acc)
						continue
					}
					for e := range q {
						xi, gi := x[(i0+e)*S:][:S], g[(i0+e)*S:][:S]
						a := acc[e]
						for j, v := range xi {
							a += float64(gi[j]) * (float64(v) - mu[e]) * inv[e]
						}
						acc[e] = a
					}
				}
				for e := range q {
					dst[c0+e] = float32(acc[e])
				}
			}
		})
	default:
		return false
	}
	return true
}

// scaleSums4 adds to acc[e] the terms g·x̂ of instance e of the four
// consecutive instances of S values at x and g, each in order, the four
// chains interleaved.
func scaleSums4(x, g []float32, S int, mu, inv, acc *[4]float64) {
	x0, x1, x2, x3 := x[:S], x[S:][:S], x[2*S:][:S], x[3*S:][:S]
	g0, g1, g2, g3 := g[:S], g[S:][:S], g[2*S:][:S], g[3*S:][:S]
	a0, a1, a2, a3 := acc[0], acc[1], acc[2], acc[3]
	for j, v := range x0 {
		a0 += float64(g0[j]) * (float64(v) - mu[0]) * inv[0]
		a1 += float64(g1[j]) * (float64(x1[j]) - mu[1]) * inv[1]
		a2 += float64(g2[j]) * (float64(x2[j]) - mu[2]) * inv[2]
		a3 += float64(g3[j]) * (float64(x3[j]) - mu[3]) * inv[3]
	}
	acc[0], acc[1], acc[2], acc[3] = a0, a1, a2, a3
}
