package kernels

// Grouped convolutions that are not depthwise (ResNeXt, RegNet: groups of
// 8–64 channels; ShuffleNet-style grouped 3×3) run per group over the
// whole batch: the im2col matrices of a group's input planes for a range
// of samples side by side, (C/group·kH·kW) × (samples·oH·oW), and one
// product per group and range instead of one per group and sample. A
// group's filter matrix is small (RegNetX's 16 × 144), so per sample the
// products were a few micro-tiles each with the packing and call overhead
// of a full product; side by side the columns of all samples share one
// packing of the filters and fill whole tiles (RegNetX-400MF at 64×64
// ends on 2×2 planes: 4 columns per sample and group). No forward im2col
// is cached for the weight gradient: the gradient forms it again, which
// costs less than keeping and comparing the copy on these planes.
//
// Work is split into (group, range of samples) units, as many as the
// threads can take: groups alone left cores idle on layers with fewer
// groups than threads (RegNetX's first stage has 2). The weight gradient
// is split by group and, when there are fewer groups than threads, each
// group's product runs on the parallel GEMM.

// groupedOn switches the grouped path on; tests turn it off to compare.
var groupedOn = true

// groupedOK reports whether g takes the grouped path: more than one
// group, not depthwise (one channel and one filter per group: convdw.go,
// or im2col per group where that does not apply, such as dilated
// depthwise layers of large planes), not a direct 1×1 product, stride 1,
// at most groupedMaxCols output values per channel over the batch, and
// one group's im2col matrix and products within colBandElems.
func groupedOK(g *convGeom) bool {
	return groupedOn && g.g > 1 && !g.direct && (g.cg > 1 || g.mg > 1) && g.y.s == 1 && g.x.s == 1 &&
		g.n*g.outPlane <= groupedMaxCols && (g.colRows+g.mg)*g.n*g.outPlane <= colBandElems
}

// groupedMaxCols bounds the columns (samples·oH·oW) of the grouped path.
// In CPU time per layer, three passes, one thread
// (BenchmarkConvGrouped, RegNetX-400MF's 16-channel groups at batch 4):
// 4×4 planes (64 columns) took 10% less than per sample and group, 2×2
// the same; on 8×8 planes (256 columns) the per-sample path, which runs
// stride-1 padded layers on wide rows without an im2col matrix
// (convpad.go), took 20% less with 4 groups and 35% less with 32 groups
// of 8 channels, so the grouped path stops at 64 columns.
var groupedMaxCols = 64

// groupUnits splits g's groups and samples into units of work: per
// group, s ranges of samples (s = 1 when there are at least as many
// groups as threads).
func groupUnits(g *convGeom) (units, s int) {
	s = min(g.n, (workers(g.n*g.g)+g.g-1)/g.g)
	return g.g * s, s
}

// forGroupUnits runs do on every (group, range of samples) unit of g
// that holds a sample, in parallel, with the unit's col matrix,
// (cg·kH·kW) × np, and a group-planes matrix, mg × np, from one scratch
// buffer per chunk of units (np = samples in the range · oH·oW).
func forGroupUnits[T float](g *convGeom, do func(gi, lo, hi, np int, col, planes []T)) {
	units, s := groupUnits(g)
	// A unit's products: the group's filters over its samples' pixels.
	parallelProducts(units, g.mg*g.colRows*((g.n+s-1)/s)*g.outPlane, func(_, ulo, uhi int) {
		buf := getScratch[T](&colScratch, (g.colRows+g.mg)*((g.n+s-1)/s)*g.outPlane)
		defer colScratch.pool.Put(buf)
		for u := ulo; u < uhi; u++ {
			lo, hi := sampleRange(g.n, u%s, s)
			if lo == hi {
				continue
			}
			np := (hi - lo) * g.outPlane
			do(u/s, lo, hi, np, (*buf)[:g.colRows*np], (*buf)[g.colRows*np:][:g.mg*np])
		}
	})
}

// sampleRange is the samples [lo, hi) of range r of s.
func sampleRange(n, r, s int) (lo, hi int) {
	chunk := (n + s - 1) / s
	return min(n, r*chunk), min(n, (r+1)*chunk)
}

// groupIm2col writes the im2col matrix of group gi of samples [lo, hi)
// of x into col, (cg·kH·kW) × ((hi−lo)·oH·oW).
func groupIm2col[T float](g *convGeom, x, col []T, gi, lo, hi int) {
	ld := (hi - lo) * g.outPlane
	for n := lo; n < hi; n++ {
		xg := x[(n*g.c+gi*g.cg)*g.inPlane:][:g.cg*g.inPlane]
		im2colRowsLd(g, xg, col[(n-lo)*g.outPlane:], ld, 0, g.oh)
	}
}

// convForwardGrouped writes the grouped convolution of x by w (and bias
// b, nil for none) into out, every element.
func convForwardGrouped[T float](g *convGeom, x, w, b, out []T) {
	forGroupUnits(g, func(gi, lo, hi, np int, col, c []T) {
		groupIm2col(g, x, col, gi, lo, hi)
		gemmSerial(false, false, g.mg, np, g.colRows, w[gi*g.mg*g.colRows:], g.colRows, col, np, 0, c, np)
		for n := lo; n < hi; n++ {
			for j := 0; j < g.mg; j++ {
				m := gi*g.mg + j
				o := out[(n*g.m+m)*g.outPlane:][:g.outPlane]
				src := c[j*np+(n-lo)*g.outPlane:][:g.outPlane]
				if b == nil {
					copy(o, src)
					continue
				}
				bm := b[m]
				for i, v := range src {
					o[i] = v + bm
				}
			}
		}
	})
}

// gatherGroupGrad copies group gi's planes of gy [N, M, oH·oW] for
// samples [lo, hi) into dst, mg × ((hi−lo)·oH·oW).
func gatherGroupGrad[T float](g *convGeom, gy, dst []T, gi, lo, hi int) {
	np := (hi - lo) * g.outPlane
	for n := lo; n < hi; n++ {
		for j := 0; j < g.mg; j++ {
			copy(dst[j*np+(n-lo)*g.outPlane:][:g.outPlane], gy[(n*g.m+gi*g.mg+j)*g.outPlane:][:g.outPlane])
		}
	}
}

// convGradXGrouped writes the input gradient into dx, every element:
// per unit, col = W_gᵀ·gy_g, added back into the group's planes of dx,
// which the unit zeroes first (every plane of dx belongs to one unit).
func convGradXGrouped[T float](g *convGeom, w, gy, dx []T) {
	forGroupUnits(g, func(gi, lo, hi, np int, col, gyg []T) {
		gatherGroupGrad(g, gy, gyg, gi, lo, hi)
		gemmSerial(true, false, g.colRows, np, g.mg, w[gi*g.mg*g.colRows:], g.colRows, gyg, np, 0, col, np)
		for n := lo; n < hi; n++ {
			dxg := dx[(n*g.c+gi*g.cg)*g.inPlane:][:g.cg*g.inPlane]
			clear(dxg)
			col2imRowsLd(g, col[(n-lo)*g.outPlane:], np, dxg, 0, g.oh)
		}
	})
}

// convGradWGrouped writes the weight gradient into dw, every element: per
// group, dW_g = gy_g·col_gᵀ over the whole batch (the product's sums
// start from +0, as convGradWBatched's).
func convGradWGrouped[T float](g *convGeom, x, gy, dw []T) {
	np := g.n * g.outPlane
	mul := gemmSerial[T]
	if g.g < workers(g.g*g.mg) {
		mul = gemm[T] // fewer groups than threads: each product on all of them
	}
	parallelProducts(g.g, g.mg*g.colRows*np, func(_, lo, hi int) { // a group: dW_g = gy_g·col_gᵀ
		buf := getScratch[T](&colScratch, (g.colRows+g.mg)*np)
		defer colScratch.pool.Put(buf)
		col, gyg := (*buf)[:g.colRows*np], (*buf)[g.colRows*np:][:g.mg*np]
		for gi := lo; gi < hi; gi++ {
			groupIm2col(g, x, col, gi, 0, g.n)
			gatherGroupGrad(g, gy, gyg, gi, 0, g.n)
			mul(false, true, g.mg, g.colRows, np, gyg, np, col, np, 0, dw[gi*g.mg*g.colRows:], g.colRows)
		}
	})
}

// ConvGrouped reports whether a convolution of input shape xs and filters
// ws with parameters p runs on the grouped path.
func ConvGrouped(xs, ws []int, p ConvParams) bool {
	g, err := newConvGeom(xs, ws, p)
	return err == nil && groupedOK(&g)
}
