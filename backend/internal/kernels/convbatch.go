package kernels

import "gorgonia.org/tensor"

// Convolutions of small output planes (MTAN's deepest layers: 4×6 and
// 8×12 at 64×96) run as one product over the whole batch: the im2col
// matrices of the N samples side by side, (C·kH·kW) × (N·oH·oW), so that
// the filters are packed once per call rather than once per sample, the
// products are wide enough for whole micro-tiles (a 4×6 plane fills 24 of
// a tile's 32 columns), and the cores split one product (productGrid:
// rows first, then columns where the rows alone give fewer blocks than
// cores) instead of taking a few samples each. The outputs are gathered
// from and scattered to the [N, M, oH·oW] layout (a copy of M·N·oH·oW values).

// batchPlaneMax is the largest output plane (oH·oW) whose convolution
// runs over the whole batch at once; 0 turns it off (tests compare both).
// At MTAN's 16×24 (384) the per-sample products are faster (256 channels,
// batch 4: forward 185–208 against 148–151 GFLOP/s, BenchmarkConvMTAN).
var batchPlaneMax = 128

// batchedPlanes reports whether g's convolution and its gradients run
// over the whole batch at once: one group, more than one sample, a small
// output plane, and the batch's im2col matrix within colBandElems. That
// includes direct 1×1 convolutions (useBatchDirect), whose "im2col matrix"
// is a copy of the input: per sample their products have as few columns
// as the plane has values. In CPU time per layer, three passes, one
// thread (BenchmarkConvPointwiseSmall, EfficientNet-B0's pointwise layers
// at 64×64, batch 4): 13–22% less on 1152→192 at 2×2 and 672→112 and
// 112→672 at 4×4, 1.7× less on 192→1152 at 2×2, the same on
// squeeze-and-excitation's 1×1 planes.
func batchedPlanes(g *convGeom) bool {
	return g.g == 1 && g.n > 1 && g.outPlane <= batchPlaneMax &&
		g.n*g.colRows*g.outPlane <= colBandElems && (!g.direct || useBatchDirect && g.outPlane <= batchDirectMaxPlane)
}

// useBatchDirect lets direct 1×1 convolutions of planes of at most
// batchDirectMaxPlane values (4×4, where it was measured) run over the
// whole batch (batchedPlanes); tests turn it off to compare.
var useBatchDirect = true

const batchDirectMaxPlane = 16

// batchIm2col writes the im2col matrix of every sample of x into col,
// (C·kH·kW) × (N·oH·oW), sample n in columns [n·oH·oW, (n+1)·oH·oW).
func batchIm2col[T float](g *convGeom, x, col []T) {
	if oneChunk(g.n, g.colRows*g.outPlane) { // no closure (oneChunk)
		batchIm2colSamples(g, x, col, 0, g.n)
		return
	}
	parallelWork(g.n, g.colRows*g.outPlane, func(_, lo, hi int) { batchIm2colSamples(g, x, col, lo, hi) })
}

// batchIm2colSamples is batchIm2col for samples [lo, hi).
func batchIm2colSamples[T float](g *convGeom, x, col []T, lo, hi int) {
	ld := g.n * g.outPlane
	for n := lo; n < hi; n++ {
		im2colRowsLd(g, x[n*g.c*g.inPlane:][:g.c*g.inPlane], col[n*g.outPlane:], ld, 0, g.oh)
	}
}

// convForwardBatched is convForward for batchedPlanes: out = W·col (+b),
// every element of out written.
func convForwardBatched[T float](g *convGeom, sc *scratch, x, w, b, out []T) {
	np := g.n * g.outPlane
	col := forwardCols(g, sc, x)
	if col != nil {
		defer func() { sc.cache.valid = true; sc.cache.mu.Unlock() }()
	} else {
		buf := getScratch[T](&colScratch, g.colRows*np)
		defer colScratch.pool.Put(buf)
		col = *buf
	}
	batchIm2col(g, x, col)
	cbuf := getScratch[T](&colScratch, g.m*np)
	defer colScratch.pool.Put(cbuf)
	c := *cbuf
	if oneBlock(g.m, np, g.colRows) { // no closures (oneChunk)
		gemmSerial(false, false, g.m, np, g.colRows, w, g.colRows, col, np, 0, c, np)
	} else {
		gridFor(g.m, np, g.colRows, func(i0, i1, j0, j1 int) {
			gemmSerial(false, false, i1-i0, j1-j0, g.colRows, w[i0*g.colRows:], g.colRows, col[j0:], np, 0, c[i0*np+j0:], np)
		})
	}
	if oneChunk(g.n, g.m*g.outPlane) {
		scatterOut(g, c, b, out, 0, g.n)
		return
	}
	parallelWork(g.n, g.m*g.outPlane, func(_, lo, hi int) { scatterOut(g, c, b, out, lo, hi) })
}

// scatterOut writes samples [lo, hi) of the batched product c (M ×
// N·oH·oW) into out [N, M, oH, oW], adding the bias b (nil for none).
func scatterOut[T float](g *convGeom, c, b, out []T, lo, hi int) {
	np := g.n * g.outPlane
	for n := lo; n < hi; n++ {
		if b == nil {
			movePlanes(out[n*g.m*g.outPlane:], g.outPlane, c[n*g.outPlane:], np, g.m, g.outPlane)
			continue
		}
		for m := 0; m < g.m; m++ {
			o, cm, bm := out[(n*g.m+m)*g.outPlane:][:g.outPlane], c[m*np+n*g.outPlane:][:g.outPlane], b[m]
			for i, v := range cm {
				o[i] = v + bm
			}
		}
	}
}

// gatherGrad copies gy [N, M, oH·oW] into dst as M × (N·oH·oW).
func gatherGrad[T float](g *convGeom, gy, dst []T) {
	if oneChunk(g.n, g.m*g.outPlane) { // no closure (oneChunk)
		gatherGradSamples(g, gy, dst, 0, g.n)
		return
	}
	parallelWork(g.n, g.m*g.outPlane, func(_, lo, hi int) { gatherGradSamples(g, gy, dst, lo, hi) })
}

// gatherGradSamples is gatherGrad for samples [lo, hi).
func gatherGradSamples[T float](g *convGeom, gy, dst []T, lo, hi int) {
	np := g.n * g.outPlane
	for n := lo; n < hi; n++ {
		movePlanes(dst[n*g.outPlane:], np, gy[n*g.m*g.outPlane:], g.outPlane, g.m, g.outPlane)
	}
}

// movePlanes copies rows runs of inner values, run r from src[r·lds:] to
// dst[r·ldd:]. Runs under 16 values (the batched products' 2×2 and 4×4
// planes) are copied by a loop: a copy call per run of 4 values cost
// 4 ns, a nanosecond a value (BenchmarkMovePlanes).
func movePlanes[T float](dst []T, ldd int, src []T, lds, rows, inner int) {
	switch {
	case inner >= 16:
		for r := 0; r < rows; r++ {
			copy(dst[r*ldd:][:inner], src[r*lds:][:inner])
		}
	case inner == 4:
		for r := 0; r < rows; r++ {
			d, s := dst[r*ldd:][:4], src[r*lds:][:4]
			d[0], d[1], d[2], d[3] = s[0], s[1], s[2], s[3]
		}
	default:
		for r := 0; r < rows; r++ {
			d, s := dst[r*ldd:][:inner], src[r*lds:][:inner]
			for i, v := range s {
				d[i] = v
			}
		}
	}
}

// convGradXBatched is convGradX for batchedPlanes: col = Wᵀ·gy over the
// batch, added back into dx (zeroed) sample by sample; for a direct 1×1
// convolution each row of col is a plane of dx, copied into it (dx any
// contents: the product's sums start from +0, so a copy gives the bits
// an addition into zeros gives).
func convGradXBatched[T float](g *convGeom, w, gy, dx []T) tensor.Tensor {
	np := g.n * g.outPlane
	gbuf := getScratch[T](&colScratch, g.m*np)
	defer colScratch.pool.Put(gbuf)
	gyAll := *gbuf
	gatherGrad(g, gy, gyAll)
	buf := getScratch[T](&colScratch, g.colRows*np)
	defer colScratch.pool.Put(buf)
	col := *buf
	if oneBlock(g.colRows, np, g.m) { // no closures (oneChunk)
		gemmSerial(true, false, g.colRows, np, g.m, w, g.colRows, gyAll, np, 0, col, np)
	} else {
		gridFor(g.colRows, np, g.m, func(i0, i1, j0, j1 int) {
			gemmSerial(true, false, i1-i0, j1-j0, g.m, w[i0:], g.colRows, gyAll[j0:], np, 0, col[i0*np+j0:], np)
		})
	}
	if oneChunk(g.n, g.colRows*g.outPlane) {
		addBackCols(g, col, dx, 0, g.n)
	} else {
		parallelWork(g.n, g.colRows*g.outPlane, func(_, lo, hi int) { addBackCols(g, col, dx, lo, hi) })
	}
	return newTensor(tensor.Shape{g.n, g.c, g.h, g.w}, dx)
}

// addBackCols writes samples [lo, hi) of the batched input-gradient
// matrix col (C·kH·kW × N·oH·oW) into dx: copied for a direct
// convolution, added back (col2im) otherwise.
func addBackCols[T float](g *convGeom, col, dx []T, lo, hi int) {
	np := g.n * g.outPlane
	for n := lo; n < hi; n++ {
		if g.direct { // inPlane = outPlane
			movePlanes(dx[n*g.c*g.inPlane:], g.inPlane, col[n*g.outPlane:], np, g.c, g.outPlane)
			continue
		}
		col2imRowsLd(g, col[n*g.outPlane:], np, dx[n*g.c*g.inPlane:][:g.c*g.inPlane], 0, g.oh)
	}
}

// convGradWBatched is convGradWInto for batchedPlanes: dw = gy·colᵀ +
// beta·dw over the batch, with the forward pass's matrix when sc kept it
// for this x. With beta 0, dw may hold anything: the product writes every
// element (as 0 + Σ: the GEMM's sums start from +0, so they are never −0)
// instead of adding into zeros, which at MTAN's 4×6 planes (a 512×4608
// dW over 96 columns) costs as much as the product.
func convGradWBatched[T float](g *convGeom, sc *scratch, x, gy, dw []T, beta T) tensor.Tensor {
	np := g.n * g.outPlane
	gbuf := getScratch[T](&colScratch, g.m*np)
	defer colScratch.pool.Put(gbuf)
	gyAll := *gbuf
	gatherGrad(g, gy, gyAll)
	col, release := cachedCols(g, sc, x)
	if release != nil {
		defer release()
	} else {
		buf := getScratch[T](&colScratch, g.colRows*np)
		defer colScratch.pool.Put(buf)
		col = *buf
		batchIm2col(g, x, col)
	}
	if oneBlock(g.colRows, g.m, np) { // no closure (oneChunk)
		gemmSerial(false, true, g.m, g.colRows, np, gyAll, np, col, np, beta, dw, g.colRows)
	} else {
		gridFor(g.colRows, g.m, np, func(j0, j1, i0, i1 int) { // dW's columns first, then its rows
			gemmSerial(false, true, i1-i0, j1-j0, np, gyAll[i0*np:], np, col[j0*np:], np, beta, dw[i0*g.colRows+j0:], g.colRows)
		})
	}
	return newTensor(tensor.Shape{g.m, g.cg, g.kh, g.kw}, dw)
}
