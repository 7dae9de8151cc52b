package kernels

import "sync"

// Depthwise convolutions of small output planes (the last stages of
// MobileNetV3 and EfficientNet at 64×64: 2×2 and 4×4 planes under 3×3 and
// 5×5 kernels; DeepLabV3's dilated 5×5 on 4×4 planes, which the phase
// planes do not take) run as plain loops over each output's taps inside
// the input plane. On such planes most of a kernel's taps fall in the
// padding: a 2×2 output under a 5×5 kernel reads 4 input values per
// output, where the phase-plane path (convdw.go) runs one vector
// operation per tap, 25 calls over 8 values each, for the same plane.
// The sums run over the taps in the same order as that path's (row by
// row), without the padding's zero terms.

// dwDirectMaxPlane is the largest output plane (oH·oW) of the loops
// below; 0 turns them off (tests compare both paths).
var dwDirectMaxPlane = 16

// dwDirect reports whether the depthwise convolution g runs as loops.
func dwDirect(g *convGeom) bool { return g.outPlane <= dwDirectMaxPlane }

// dwTaps is the range [k0, k1) of taps of a kernel of k taps, stride s,
// dilation d and leading pad pb, that output o reads inside an input of n
// values (tap t reads i0 + t·d), and the input index i0 of tap 0.
func dwTaps(o, s, d, pb, k, n int) (k0, k1, i0 int) {
	i0 = o*s - pb
	if i0 < 0 {
		k0 = (-i0 + d - 1) / d
	}
	if n-1-i0 < 0 {
		return k0, k0, i0
	}
	return k0, max(k0, min(k, (n-1-i0)/d+1)), i0
}

// dwRun is a run of terms of a small depthwise convolution: output o of
// a plane reads inputs i, i+1, … of its plane through taps t, t+1, … (n
// of them: the taps of one kernel row inside the input; one tap per run
// under a horizontal dilation).
type dwRun struct{ o, i, t, n int32 }

// dwRunsKey is what dwRuns reads of a geometry: its planes, kernel,
// strides, dilations and leading pads.
type dwRunsKey struct{ oh, ow, h, w, kh, kw, sy, sx, dy, dx, py, px int }

// dwRunsCache keeps each geometry's runs (read-only once made): the
// three passes of every small depthwise convolution of a step asked for
// them again, a few hundred appends per call, tens of kilobytes of
// garbage a step of ShuffleNet. dwRunsCacheMax bounds it for a process
// that builds many models; it is emptied when full.
var dwRunsCache struct {
	sync.Mutex
	m map[dwRunsKey][]dwRun
}

const dwRunsCacheMax = 256

// dwRunsOf is dwRuns(g), made once per geometry (dwRunsCache). The
// caller must not modify the runs.
func dwRunsOf(g *convGeom) []dwRun {
	k := dwRunsKey{g.oh, g.ow, g.h, g.w, g.kh, g.kw, g.y.s, g.x.s, g.y.d, g.x.d, g.y.pb, g.x.pb}
	c := &dwRunsCache
	c.Lock()
	rs, ok := c.m[k]
	c.Unlock()
	if ok {
		return rs
	}
	rs = dwRuns(g)
	c.Lock()
	if c.m == nil || len(c.m) >= dwRunsCacheMax {
		c.m = make(map[dwRunsKey][]dwRun)
	}
	c.m[k] = rs
	c.Unlock()
	return rs
}

// dwRuns lists the terms of g's planes as runs, by output and, per output,
// by tap (row by row): the order of the sums below.
func dwRuns(g *convGeom) []dwRun {
	var rs []dwRun
	for oy := 0; oy < g.oh; oy++ {
		ky0, ky1, iy0 := dwTaps(oy, g.y.s, g.y.d, g.y.pb, g.kh, g.h)
		for ox := 0; ox < g.ow; ox++ {
			kx0, kx1, ix0 := dwTaps(ox, g.x.s, g.x.d, g.x.pb, g.kw, g.w)
			o := int32(oy*g.ow + ox)
			for ky := ky0; ky < ky1; ky++ {
				i, t := (iy0+ky*g.y.d)*g.w+ix0, ky*g.kw
				if g.x.d == 1 {
					if kx1 > kx0 {
						rs = append(rs, dwRun{o, int32(i + kx0), int32(t + kx0), int32(kx1 - kx0)})
					}
					continue
				}
				for kx := kx0; kx < kx1; kx++ {
					rs = append(rs, dwRun{o, int32(i + kx*g.x.d), int32(t + kx), 1})
				}
			}
		}
	}
	return rs
}

// convForwardDwDirect writes the depthwise convolution of x by w (bias b,
// nil for none) into out, every element.
func convForwardDwDirect[T float](g *convGeom, x, w, b, out []T) {
	rs := dwRunsOf(g)
	if oneChunk(g.n*g.c, g.outPlane*g.kh*g.kw) { // no closure (oneChunk)
		forwardDwPlanes(g, rs, x, w, b, out, 0, g.n*g.c)
		return
	}
	parallelWork(g.n*g.c, g.outPlane*g.kh*g.kw, func(_, lo, hi int) { forwardDwPlanes(g, rs, x, w, b, out, lo, hi) })
}

// forwardDwPlanes is convForwardDwDirect for planes [lo, hi).
func forwardDwPlanes[T float](g *convGeom, rs []dwRun, x, w, b, out []T, lo, hi int) {
	taps := g.kh * g.kw
	for p := lo; p < hi; p++ {
		c := p % g.c
		xp, wc := x[p*g.inPlane:][:g.inPlane], w[c*taps:][:taps]
		op := out[p*g.outPlane:][:g.outPlane]
		clear(op)
		for _, r := range rs {
			xs, ws := xp[r.i:][:r.n], wc[r.t:][:r.n]
			s := op[r.o]
			for j, v := range xs {
				s += ws[j] * v
			}
			op[r.o] = s
		}
		if b != nil {
			bc := b[c]
			for i := range op {
				op[i] += bc
			}
		}
	}
}

// convGradXDwDirect writes the input gradient into dx, every element.
func convGradXDwDirect[T float](g *convGeom, w, gy, dx []T) {
	rs := dwRunsOf(g)
	if oneChunk(g.n*g.c, g.outPlane*g.kh*g.kw) { // no closure (oneChunk)
		gradXDwPlanes(g, rs, w, gy, dx, 0, g.n*g.c)
		return
	}
	parallelWork(g.n*g.c, g.outPlane*g.kh*g.kw, func(_, lo, hi int) { gradXDwPlanes(g, rs, w, gy, dx, lo, hi) })
}

// gradXDwPlanes is convGradXDwDirect for planes [lo, hi).
func gradXDwPlanes[T float](g *convGeom, rs []dwRun, w, gy, dx []T, lo, hi int) {
	taps := g.kh * g.kw
	for p := lo; p < hi; p++ {
		c := p % g.c
		gp, wc := gy[p*g.outPlane:][:g.outPlane], w[c*taps:][:taps]
		dp := dx[p*g.inPlane:][:g.inPlane]
		clear(dp)
		for _, r := range rs {
			v := gp[r.o]
			ds, ws := dp[r.i:][:r.n], wc[r.t:][:r.n]
			for j, wv := range ws {
				ds[j] += v * wv
			}
		}
	}
}

// convGradWDwDirect writes the weight gradient into dw (C × kH·kW), every
// element: per channel, the samples' terms added in sample order.
func convGradWDwDirect[T float](g *convGeom, x, gy, dw []T) {
	rs := dwRunsOf(g)
	if oneChunk(g.c, g.n*g.outPlane*g.kh*g.kw) { // no closure (oneChunk)
		gradWDwChannels(g, rs, x, gy, dw, 0, g.c)
		return
	}
	parallelWork(g.c, g.n*g.outPlane*g.kh*g.kw, func(_, lo, hi int) { gradWDwChannels(g, rs, x, gy, dw, lo, hi) })
}

// gradWDwChannels is convGradWDwDirect for channels [lo, hi).
func gradWDwChannels[T float](g *convGeom, rs []dwRun, x, gy, dw []T, lo, hi int) {
	taps := g.kh * g.kw
	for c := lo; c < hi; c++ {
		dc := dw[c*taps:][:taps]
		clear(dc)
		for n := 0; n < g.n; n++ {
			p := n*g.c + c
			xp, gp := x[p*g.inPlane:][:g.inPlane], gy[p*g.outPlane:][:g.outPlane]
			for _, r := range rs {
				v := gp[r.o]
				xs, ds := xp[r.i:][:r.n], dc[r.t:][:r.n]
				for j, xv := range xs {
					ds[j] += v * xv
				}
			}
		}
	}
}
