package kernels

import (
	"gorgonia.org/tensor"

	fgemm "github.com/paretonav/paretonav/backend/internal/gemm"
)

// Stride-1 convolutions with padding and few channels (the small MTAN's
// 3×3, pad 1) run as the same
// convolution without padding over a zero-padded copy of their input, so
// that the wide rows apply to them (wideForward, convWideGradX, and the
// weight gradient's dot products where wideRows holds): one copy or sum
// of L values per tap instead of oH rows of oW through im2col and col2im,
// and no packing of an im2col matrix for the weight gradient. The padded
// copies are made a chunk of samples at a time, within colBandElems.

// padWideMaxRows is the largest im2col height (C/group·kH·kW) whose
// convolution runs over its padded input: 32 channels of a 3×3 filter.
// Beyond it the products dominate and the im2col path is faster
// (BenchmarkConvMTAN at 128 channels, 32×48: input gradient 137 against
// 174 GFLOP/s, weight gradient 166 against 193 over the padded input).
const padWideMaxRows = 288

// padWide returns the geometry of g over its zero-padded input and true
// when g's float32 passes run over the padded input: stride 1, some
// padding, at most padWideMaxRows im2col rows, not run over the whole
// batch (batchedPlanes), and wide rows within wideForward's bounds for the
// padded geometry.
func padWide[T float](g *convGeom) (convGeom, bool) {
	var z T
	if _, f32 := any(z).(float32); !f32 || !useWideFwd || g.direct || g.y.s != 1 || g.x.s != 1 || g.colRows > padWideMaxRows || batchedPlanes(g) {
		return *g, false
	}
	if g.y.pb == 0 && g.y.pe == 0 && g.x.pb == 0 && g.x.pe == 0 {
		return *g, false
	}
	p := *g
	p.h, p.w = g.h+g.y.pb+g.y.pe, g.w+g.x.pb+g.x.pe
	p.y.in, p.x.in = p.h, p.w
	p.y.pb, p.y.pe, p.x.pb, p.x.pe = 0, 0, 0, 0
	p.inPlane = p.h * p.w
	if p.cg*p.inPlane > colBandElems || !wideForward(&p) {
		return *g, false
	}
	return p, true
}

// padChunk is the number of samples whose padded input planes (c·h'·w'
// each) fit in colBandElems, at least 1.
func padChunk(p *convGeom) int { return max(1, min(p.n, colBandElems/(p.c*p.inPlane))) }

// padInputs copies samples [n0, n0+k) of x (g's planes) into xp (p's
// planes, zero borders).
func padInputs[T float](g, p *convGeom, x, xp []T, n0, k int) {
	parallelWork(k*g.c, p.inPlane, func(_, lo, hi int) { // a plane: its padded values written
		for pc := lo; pc < hi; pc++ {
			src := x[(n0*g.c+pc)*g.inPlane:][:g.inPlane]
			dst := xp[pc*p.inPlane:][:p.inPlane]
			// The zeros before the first row, between one row's end
			// and the next one's start, and after the last, each one clear.
			at := g.y.pb*p.w + g.x.pb // where row i goes
			clear(dst[:at])
			for i := 0; i < g.h; i++ {
				copy(dst[at:at+g.w], src[i*g.w:(i+1)*g.w])
				next := at + p.w
				if i+1 == g.h {
					next = len(dst)
				}
				clear(dst[at+g.w : next])
				at += p.w
			}
		}
	})
}

// chunkGeom is p for k samples.
func chunkGeom(p *convGeom, k int) convGeom {
	c := *p
	c.n = k
	return c
}

// padChunks runs f over the samples of g a chunk at a time (padChunk
// samples): samples [n0, n0+k) and, of a buffer of their padded planes
// (p's), its part xp; with pad, xp holds those samples of x zero-padded.
func padChunks[T float](g, p *convGeom, x []T, pad bool, f func(n0, k int, xp []T)) {
	k := padChunk(p)
	buf := getScratch[T](&colScratch, k*p.c*p.inPlane)
	defer colScratch.pool.Put(buf)
	for n0 := 0; n0 < g.n; n0 += k {
		kk := min(k, g.n-n0)
		xp := (*buf)[:kk*p.c*p.inPlane]
		if pad {
			padInputs(g, p, x, xp, n0, kk)
		}
		f(n0, kk, xp)
	}
}

// convForwardPadded is convForward for padWide: the same outputs, bit for
// bit (the padding's zeros meet the same weights in the same order).
func convForwardPadded[T float](g, p *convGeom, sc *scratch, x, w []T, bt tensor.Tensor, out []T) {
	wt := newTensor(tensor.Shape{g.m, g.cg, g.kh, g.kw}, w)
	padChunks(g, p, x, true, func(n0, k int, xp []T) {
		o := out[n0*g.m*g.outPlane:][:k*g.m*g.outPlane]
		cg := chunkGeom(p, k)
		convForward(&cg, sc, newTensor(tensor.Shape{k, p.c, p.h, p.w}, xp), wt, bt, o)
	})
}

// convGradXPadded is convGradX for padWide: the gradient over the padded
// input, cropped into dx (any contents: the crop writes every element;
// convGradX takes the padded buffer with any contents too). (The padded pass checks the weights are finite before it
// reads wide rows; with an infinite or NaN weight it forms the im2col
// product over the padded input, the same values as over the original.)
func convGradXPadded[T float](g, p *convGeom, sc *scratch, w, gy, dx []T) {
	wt := newTensor(tensor.Shape{g.m, g.cg, g.kh, g.kw}, w)
	padChunks(g, p, nil, false, func(n0, k int, dxp []T) {
		cg := chunkGeom(p, k)
		convGradX(&cg, sc, wt, chunkGrad(g, gy, n0, k), dxp)
		parallelWork(k*g.c, g.inPlane, func(_, lo, hi int) { // a plane: its cropped values moved
			for pc := lo; pc < hi; pc++ {
				src := dxp[pc*p.inPlane:][:p.inPlane]
				dst := dx[(n0*g.c+pc)*g.inPlane:][:g.inPlane]
				for i := 0; i < g.h; i++ {
					copy(dst[i*g.w:(i+1)*g.w], src[(g.y.pb+i)*p.w+g.x.pb:][:g.w])
				}
			}
		})
	})
}

// convGradWPadded is convGradWInto for padWide where the padded geometry
// reads wide rows (wideRows): the segmented dot products over the input
// in place (convGradWSegments), or else the dot products over the padded
// input, which check it is finite (else the im2col product over it).
func convGradWPadded[T float](g, p *convGeom, sc *scratch, x, gy, dw []T) {
	if convGradWSegments(g, x, gy, dw) {
		return
	}
	padChunks(g, p, x, true, func(n0, k int, xp []T) {
		cg := chunkGeom(p, k)
		convGradWInto(&cg, sc, newTensor(tensor.Shape{k, p.c, p.h, p.w}, xp), chunkGrad(g, gy, n0, k), dw)
	})
}

// chunkGrad is samples [n0, n0+k) of the output gradient gy of g.
func chunkGrad[T float](g *convGeom, gy []T, n0, k int) tensor.Tensor {
	return newTensor(tensor.Shape{k, g.m, g.oh, g.ow}, gy[n0*g.m*g.outPlane:][:k*g.m*g.outPlane])
}

// usePadSegments enables convGradWSegments; tests turn it off to compare.
var usePadSegments = true

// convGradWSegments adds the weight gradient of g (float32, stride 1,
// padded: padWide) into dw without padding its input: for each tap
// (ki, kj), the outputs whose input lies inside the plane form a
// rectangle of rows and columns, so that the tap's sums over every
// channel are one segmented product (fgemm.SdotRowsSeg) of gy's rectangle
// against the input's, both in place; the padding's zeros, which add
// nothing, are not read, and the input is not copied (padInputs runs once
// per task's gradient otherwise). Each worker adds its samples' sums into
// a tap-major scratch (taps × filters × channels), added into dw at the
// end. The sums are those of the padded path up to round-off (terms in
// another order, the zeros left out). It reports false, doing nothing,
// when the CPU has no segmented dot kernel, for float64, or with
// usePadSegments off.
func convGradWSegments[T float](g *convGeom, x, gy, dw []T) bool {
	x32, ok := any(x).([]float32)
	if !ok || !usePadSegments || !fgemm.Accelerated() {
		return false
	}
	gy32, dw32 := any(gy).([]float32), any(dw).([]float32)
	taps := g.kh * g.kw
	size := g.g * taps * g.mg * g.cg // per group, tap, filter, channel
	acc := make([]*[]float32, workers(g.n))
	done := true
	parallelProducts(g.n, g.sampleWork(), func(wk, lo, hi int) {
		buf := getScratch[float32](&colScratch, size)
		acc[wk] = buf
		t := *buf
		clear(t)
		var boff [64]int
		offs := boff[:0]
		if g.cg > len(boff) {
			offs = make([]int, 0, g.cg)
		}
		per := segItems(g)
		for n := lo; n < hi; n += per {
			items := min(per, hi-n)
			for gi := 0; gi < g.g; gi++ {
				xg := x32[(n*g.c+gi*g.cg)*g.inPlane:][:((items-1)*g.c+g.cg)*g.inPlane]
				gyg := gy32[(n*g.m+gi*g.mg)*g.outPlane:][:((items-1)*g.m+g.mg)*g.outPlane]
				for ki := 0; ki < g.kh; ki++ {
					// output rows [r0, r1) read input rows oi − pt + ki·dH ∈ [0, h)
					dy := ki*g.y.d - g.y.pb
					r0, r1 := max(0, -dy), min(g.oh, g.h-dy)
					for kj := 0; kj < g.kw; kj++ {
						dx := kj*g.x.d - g.x.pb
						c0, c1 := max(0, -dx), min(g.ow, g.w-dx)
						if r0 >= r1 || c0 >= c1 {
							continue
						}
						offs = offs[:0]
						for c := 0; c < g.cg; c++ {
							offs = append(offs, c*g.inPlane+(r0+dy)*g.w+c0+dx)
						}
						tt := t[(gi*taps+ki*g.kw+kj)*g.mg*g.cg:][:g.mg*g.cg]
						if !fgemm.SdotRowsSeg(g.mg, g.cg, g.sampleSegs(c1-c0, r1-r0, items), gyg[r0*g.ow+c0:], g.outPlane, xg, offs, tt, g.cg) {
							done = false // no kernel: Accelerated said there is one
							return
						}
					}
				}
			}
		}
	})
	if done {
		for _, b := range acc {
			if b == nil {
				continue
			}
			t := *b
			for gi := 0; gi < g.g; gi++ {
				for tap := 0; tap < taps; tap++ {
					tt := t[(gi*taps+tap)*g.mg*g.cg:][:g.mg*g.cg]
					for m := 0; m < g.mg; m++ {
						row := dw32[(gi*g.mg+m)*g.colRows:][:g.colRows]
						for c, v := range tt[m*g.cg : (m+1)*g.cg] {
							row[c*taps+tap] += v
						}
					}
				}
			}
		}
	}
	for _, b := range acc {
		if b != nil {
			colScratch.pool.Put(b)
		}
	}
	return done
}
