package onnxops

import (
	"math"

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

// stats is the float64 kernel's mean and 1/√(σ²+ε) of instance x.
func (p *instNorm32) stats(x []float32) (mu, inv float64) {
	for _, v := range x {
		mu += float64(v)
	}
	mu /= float64(p.s)
	var vr float64
	for _, v := range x {
		vr += (float64(v) - mu) * (float64(v) - mu)
	}
	return mu, 1 / math.Sqrt(vr/float64(p.s)+p.eps)
}

func (p *instNorm32) forward(dst []float32, in [][]float32) {
	x, sc, b := in[0], in[1], in[2]
	parallel.Items(p.n*p.c, 2*p.s, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			c, xi, yi := i%p.c, x[i*p.s:][:p.s], dst[i*p.s:][:p.s]
			mu, inv := p.stats(xi)
			s, bb := float64(sc[c]), float64(b[c])
			for j, v := range xi {
				yi[j] = float32(s*(float64(v)-mu)*inv + bb)
			}
		}
	})
}

func (p *instNorm32) backward(k int, dst []float32, in [][]float32, _, g []float32) bool {
	x, sc := in[0], in[1]
	switch k {
	case 0:
		parallel.Items(p.n*p.c, 3*p.s, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				c, xi, gi, di := i%p.c, x[i*p.s:][:p.s], g[i*p.s:][:p.s], dst[i*p.s:][:p.s]
				mu, inv := p.stats(xi)
				var mg, mgx float64
				for j, v := range xi {
					xh := (float64(v) - mu) * inv
					mg += float64(gi[j])
					mgx += float64(gi[j]) * xh
				}
				mg /= float64(p.s)
				mgx /= float64(p.s)
				s := float64(sc[c])
				for j, v := range xi {
					xh := (float64(v) - mu) * inv
					di[j] = float32(s * inv * (float64(gi[j]) - mg - xh*mgx))
				}
			}
		})
	case 1, 2:
		parallel.Items(p.c, p.n*3*p.s, func(lo, hi int) {
			for c := lo; c < hi; c++ {
				var acc float64
				for b := 0; b < p.n; b++ {
					i := b*p.c + c
					gi := g[i*p.s:][:p.s]
					if k == 2 {
						for _, v := range gi {
							acc += float64(v)
						}
						continue
					}
					xi := x[i*p.s:][:p.s]
					mu, inv := p.stats(xi)
					for j, v := range xi {
						acc += float64(gi[j]) * (float64(v) - mu) * inv
					}
				}
				dst[c] = float32(acc)
			}
		})
	default:
		return false
	}
	return true
}
