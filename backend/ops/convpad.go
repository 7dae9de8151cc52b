package ops

import "gorgonia.org/tensor"

// Stride-1 convolutions with padding and few channels (the small MTAN's
// 3×3, pad 1) run as the same
// convolution without padding over a zero-padded copy of their input, so
// that the wide rows apply to them (wideForward, convWideGradX, and the
// weight gradient's dot products where wideRows holds): one copy or sum
// of L values per tap instead of oH rows of oW through im2col and col2im,
// and no packing of an im2col matrix for the weight gradient. The padded
// copies are made a chunk of samples at a time, within ColBandElems.

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
	if _, f32 := any(z).(float32); !f32 || !WideFwd || g.direct || g.y.s != 1 || g.x.s != 1 || g.colRows > padWideMaxRows || batchedPlanes(g) {
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
	if p.cg*p.inPlane > ColBandElems || !wideForward(&p) {
		return *g, false
	}
	return p, true
}

// padChunk is the number of samples whose padded input planes (c·h'·w'
// each) fit in ColBandElems, at least 1.
func padChunk(p *convGeom) int { return max(1, min(p.n, ColBandElems/(p.c*p.inPlane))) }

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
		convForward(chunkGeom(p, k), sc, newTensor(tensor.Shape{k, p.c, p.h, p.w}, xp), wt, bt, o)
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
		convGradX(chunkGeom(p, k), sc, wt, chunkGrad(g, gy, n0, k), dxp)
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
// reads wide rows (wideRows): the dot products over the padded input,
// which check it is finite (else the im2col product over it).
func convGradWPadded[T float](g, p *convGeom, sc *scratch, x, gy, dw []T) {
	padChunks(g, p, x, true, func(n0, k int, xp []T) {
		convGradWInto(chunkGeom(p, k), sc, newTensor(tensor.Shape{k, p.c, p.h, p.w}, xp), chunkGrad(g, gy, n0, k), dw)
	})
}

// chunkGrad is samples [n0, n0+k) of the output gradient gy of g.
func chunkGrad[T float](g *convGeom, gy []T, n0, k int) tensor.Tensor {
	return newTensor(tensor.Shape{k, g.m, g.oh, g.ow}, gy[n0*g.m*g.outPlane:][:k*g.m*g.outPlane])
}
