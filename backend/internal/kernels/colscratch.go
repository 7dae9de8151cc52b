package kernels

// ColScratchBytes is what a float32 2-D convolution of input shape xs and
// filters ws takes from the shared im2col scratch: band, the largest
// im2col band one worker fills (one sample and group, at most
// colBandElems values; 0 for a direct 1×1 convolution); batch, the whole
// batch's im2col matrix a batched convolution forms in one buffer when it
// fits in colBandElems (0 otherwise); and cache, the im2col matrices and
// input copy the op keeps for its weight gradient (0 when it keeps none,
// see cacheSize) and the smaller kernel's weights a convolution with
// padding-only taps keeps for its input gradients (trimCache). A trimmed
// convolution's are those of its smaller kernel, which it runs. The memory plan takes them from the graph's
// convolutions instead of assuming that every graph fills colBandElems
// per worker and the whole colCacheTotal.
func ColScratchBytes(xs, ws []int, p ConvParams) (band, batch, cache int64) {
	if len(xs) != 4 || len(ws) != 4 {
		return 0, 0, 0
	}
	g, err := newConvGeom(xs, ws, p)
	if err != nil {
		return 0, 0, 0
	}
	if tr := trimConv(&g); tr != nil { // runs with the smaller kernel, kept by its forward pass (trimCache)
		g, cache = tr.g, 4*int64(tr.g.m*tr.g.colRows)
	}
	if g.direct && !batchedPlanes(&g) {
		return 0, 0, cache
	}
	band = 4 * int64(min(colBandElems, g.colRows*g.colCols))
	if groupedOK(&g) { // one group's matrix and product over the batch (convgroup.go)
		return 4 * int64((g.colRows+g.mg)*g.n*g.outPlane), 0, cache
	}
	if all := g.n * g.g * g.colRows * g.colCols; all <= colBandElems {
		batch = 4 * int64(all)
	}
	if n := cacheSize[float32](&g); n > 0 {
		cache += 4 * int64(n+g.n*g.c*g.h*g.w)
	}
	return band, batch, cache
}
