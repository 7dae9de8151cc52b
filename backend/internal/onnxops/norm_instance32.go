package onnxops

import (
	"bytes"
	"sync"
	"unsafe"

	"github.com/paretonav/paretonav/backend/internal/kernels"
	"github.com/paretonav/paretonav/backend/internal/parallel"
	"github.com/paretonav/paretonav/backend/internal/vmath"
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
	kept    keptStats
}

// keptStatsLimit bounds, in bytes, the copy of X and the statistics one
// InstanceNormalization keeps from its forward pass (the ops' kept values
// together share kernels.ColCacheTotal with the Conv ops' caches).
const keptStatsLimit = 16 << 20

// keptStats are the statistics of every instance of one forward input,
// with a copy of that input: a backward pass uses them only when its own
// X is bit-for-bit the copy, so they are exactly the ones it would
// compute, whatever ran between the passes. The forward pass only
// TryLocks lock (a backward pass reading them: it keeps nothing this time)
// and the backward passes TryRLock it (several tasks' passes read them
// side by side; a forward pass writing them: they compute their own).
type keptStats struct {
	lock      sync.RWMutex
	valid     bool
	x         []float32
	mean, inv []float64 // the mean and 1/√(σ²+ε) of each instance
	bytes     *int64    // what they hold, counted by kernels.ReserveKept
}

// keptBytes is what p keeps from a forward pass: X and two float64s per
// instance; 0 above keptStatsLimit.
func (p *instNorm32) keptBytes() int64 {
	b := int64(p.n*p.c) * int64(4*p.s+16)
	if b > keptStatsLimit {
		return 0
	}
	return b
}

// begin locks p's kept statistics for a forward pass over x and returns
// them to fill (the caller copies x and the statistics in, then calls
// done), or nil when nothing is kept this time.
func (p *instNorm32) begin(x []float32) *keptStats {
	need := p.keptBytes()
	k := &p.kept
	if need == 0 || len(x) == 0 || !k.lock.TryLock() {
		return nil
	}
	k.valid = false
	if len(k.x) != len(x) {
		if k.bytes == nil {
			k.bytes = kernels.KeptCounter(p)
		}
		if !kernels.ReserveKept(k.bytes, need) {
			k.x, k.mean, k.inv = nil, nil, nil
			k.lock.Unlock()
			return nil
		}
		k.x, k.mean, k.inv = make([]float32, len(x)), make([]float64, p.n*p.c), make([]float64, p.n*p.c)
	}
	return k
}

// done marks the statistics filled and unlocks them.
func (k *keptStats) done() {
	k.valid = true
	k.lock.Unlock()
}

// read returns p's kept statistics when they are of an input bit-for-bit
// equal to x, read-locked until the caller calls release; nil otherwise.
func (p *instNorm32) read(x []float32) *keptStats {
	k := &p.kept
	if p.keptBytes() == 0 || len(x) == 0 || !k.lock.TryRLock() {
		return nil
	}
	if !k.valid || len(k.x) != len(x) || !bytes.Equal(f32Bytes(k.x), f32Bytes(x)) {
		k.lock.RUnlock()
		return nil
	}
	return k
}

// release ends a read of k (nil: nothing read).
func (k *keptStats) release() {
	if k != nil {
		k.lock.RUnlock()
	}
}

// f32Bytes is the memory of x as bytes.
func f32Bytes(x []float32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(x))), 4*len(x))
}

// stats sets mu[k], inv[k] to the statistics of instance i0+k, from kept
// when it is not nil.
func (p *instNorm32) stats(kept *keptStats, x []float32, i0 int, mu, inv []float64) {
	if kept != nil {
		copy(mu, kept.mean[i0:])
		copy(inv, kept.inv[i0:])
		return
	}
	p.statsInto(x, i0, mu, inv)
}

// statsInto sets mu[k], inv[k] to the float64 kernel's mean and
// 1/√(σ²+ε) of instance i0+k (layerStats32Groups: the same sums, four
// instances' chains at a time).
func (p *instNorm32) statsInto(x []float32, i0 int, mu, inv []float64) {
	layerStats32Groups(x[i0*p.s:], p.s, p.eps, mu, inv)
}

func (p *instNorm32) forward(dst []float32, in [][]float32) {
	x, sc, b := in[0], in[1], in[2]
	kept := p.begin(x)
	parallel.Items(p.n*p.c, 2*p.s, func(lo, hi int) {
		var mus, invs [statsChunk]float64
		for i0 := lo; i0 < hi; i0 += statsChunk {
			q := min(statsChunk, hi-i0)
			p.statsInto(x, i0, mus[:q], invs[:q])
			if kept != nil {
				copy(kept.x[i0*p.s:(i0+q)*p.s], x[i0*p.s:])
				copy(kept.mean[i0:], mus[:q])
				copy(kept.inv[i0:], invs[:q])
			}
			for k := range q {
				i := i0 + k
				c, xi, yi := i%p.c, x[i*p.s:][:p.s], dst[i*p.s:][:p.s]
				vmath.NormRow32(yi, xi, mus[k], invs[k], float64(sc[c]), float64(b[c]))
			}
		}
	})
	if kept != nil {
		kept.done()
	}
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
	var kept *keptStats
	if k == 0 || k == 1 {
		kept = p.read(x)
		defer kept.release()
	}
	switch k {
	case 0:
		parallel.Items(p.n*p.c, 3*S, func(lo, hi int) {
			var mus, invs [statsChunk]float64
			for i0 := lo; i0 < hi; i0 += statsChunk {
				q := min(statsChunk, hi-i0)
				p.stats(kept, x, i0, mus[:q], invs[:q])
				for k := 0; k < q; {
					var mg, mgx [8]float64
					r := min(2, q-k)
					if q-k >= 8 {
						r = 8
					}
					i := i0 + k
					if r == 8 {
						vmath.NormSums8(x[i*S:], g[i*S:], S, (*[8]float64)(mus[k:]), (*[8]float64)(invs[k:]), &mg, &mgx)
					} else if r == 2 {
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
						vmath.NormGradRow32(di, xi, gi, mu, inv, m, mx, si)
					}
					k += r
				}
			}
		})
	case 2:
		// Channels eight at a time in vector lanes (fewer at the end),
		// each channel's sum over the samples in the float64 order.
		parallel.Items(p.c, p.n*S, func(lo, hi int) {
			for c0 := lo; c0 < hi; c0 += 8 {
				q := min(8, hi-c0)
				var acc [8]float64
				for b := 0; b < p.n; b++ {
					i0 := b*p.c + c0
					if q == 8 {
						vmath.AddRuns8(&acc, g[i0*S:], S)
						continue
					}
					for e := range q {
						a := acc[e]
						for _, v := range g[(i0+e)*S:][:S] {
							a += float64(v)
						}
						acc[e] = a
					}
				}
				for e := range q {
					dst[c0+e] = float32(acc[e])
				}
			}
		})
	case 1:
		// Channels eight at a time in vector lanes, then four (independent
		// chains, fewer at the end), each channel's sum over the samples
		// in the float64 order.
		parallel.Items(p.c, p.n*3*S, func(lo, hi int) {
			var mu, inv [8]float64
			for c0 := lo; c0 < hi; {
				q := min(4, hi-c0)
				if hi-c0 >= 8 {
					q = 8
				}
				var acc [8]float64
				for b := 0; b < p.n; b++ {
					i0 := b*p.c + c0
					p.stats(kept, x, i0, mu[:q], inv[:q])
					switch q {
					case 8:
						vmath.AddProdRuns8(&acc, g[i0*S:], x[i0*S:], S, &mu, &inv)
						continue
					case 4:
						scaleSums4(x[i0*S:], g[i0*S:], S, (*[4]float64)(mu[:]), (*[4]float64)(inv[:]), (*[4]float64)(acc[:]))
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
				c0 += q
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
