package ops

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

// convForwardDwDirect writes the depthwise convolution of x by w (bias b,
// nil for none) into out, every element.
func convForwardDwDirect[T float](g *convGeom, x, w, b, out []T) {
	taps := g.kh * g.kw
	parallelFor(g.n*g.c, func(_, lo, hi int) {
		for p := lo; p < hi; p++ {
			c := p % g.c
			xp, wc := x[p*g.inPlane:][:g.inPlane], w[c*taps:][:taps]
			op := out[p*g.outPlane:][:g.outPlane]
			var bc T
			if b != nil {
				bc = b[c]
			}
			for oy := 0; oy < g.oh; oy++ {
				ky0, ky1, iy0 := dwTaps(oy, g.y.s, g.y.d, g.y.pb, g.kh, g.h)
				for ox := 0; ox < g.ow; ox++ {
					kx0, kx1, ix0 := dwTaps(ox, g.x.s, g.x.d, g.x.pb, g.kw, g.w)
					var s T
					for ky := ky0; ky < ky1; ky++ {
						i := (iy0+ky*g.y.d)*g.w + ix0
						wr := wc[ky*g.kw+kx0:][:kx1-kx0]
						if g.x.d == 1 {
							row := xp[i+kx0:][:len(wr)]
							for j, xv := range row {
								s += wr[j] * xv
							}
							continue
						}
						for j, wv := range wr {
							s += wv * xp[i+(kx0+j)*g.x.d]
						}
					}
					op[oy*g.ow+ox] = s + bc
				}
			}
		}
	})
}

// convGradXDwDirect writes the input gradient into dx, every element.
func convGradXDwDirect[T float](g *convGeom, w, gy, dx []T) {
	taps := g.kh * g.kw
	parallelFor(g.n*g.c, func(_, lo, hi int) {
		for p := lo; p < hi; p++ {
			c := p % g.c
			gp, wc := gy[p*g.outPlane:][:g.outPlane], w[c*taps:][:taps]
			dp := dx[p*g.inPlane:][:g.inPlane]
			clear(dp)
			for oy := 0; oy < g.oh; oy++ {
				ky0, ky1, iy0 := dwTaps(oy, g.y.s, g.y.d, g.y.pb, g.kh, g.h)
				for ox := 0; ox < g.ow; ox++ {
					kx0, kx1, ix0 := dwTaps(ox, g.x.s, g.x.d, g.x.pb, g.kw, g.w)
					v := gp[oy*g.ow+ox]
					for ky := ky0; ky < ky1; ky++ {
						i := (iy0+ky*g.y.d)*g.w + ix0
						wr := wc[ky*g.kw+kx0:][:kx1-kx0]
						if g.x.d == 1 {
							row := dp[i+kx0:][:len(wr)]
							for j, wv := range wr {
								row[j] += v * wv
							}
							continue
						}
						for j, wv := range wr {
							dp[i+(kx0+j)*g.x.d] += v * wv
						}
					}
				}
			}
		}
	})
}

// convGradWDwDirect writes the weight gradient into dw (C × kH·kW), every
// element: per channel, the samples' terms added in sample order.
func convGradWDwDirect[T float](g *convGeom, x, gy, dw []T) {
	taps := g.kh * g.kw
	parallelFor(g.c, func(_, lo, hi int) {
		for c := lo; c < hi; c++ {
			dc := dw[c*taps:][:taps]
			clear(dc)
			for n := 0; n < g.n; n++ {
				p := n*g.c + c
				xp, gp := x[p*g.inPlane:][:g.inPlane], gy[p*g.outPlane:][:g.outPlane]
				for oy := 0; oy < g.oh; oy++ {
					ky0, ky1, iy0 := dwTaps(oy, g.y.s, g.y.d, g.y.pb, g.kh, g.h)
					for ox := 0; ox < g.ow; ox++ {
						kx0, kx1, ix0 := dwTaps(ox, g.x.s, g.x.d, g.x.pb, g.kw, g.w)
						v := gp[oy*g.ow+ox]
						for ky := ky0; ky < ky1; ky++ {
							i := (iy0+ky*g.y.d)*g.w + ix0
							dr := dc[ky*g.kw+kx0:][:kx1-kx0]
							if g.x.d == 1 {
								row := xp[i+kx0:][:len(dr)]
								for j, xv := range row {
									dr[j] += v * xv
								}
								continue
							}
							for j := range dr {
								dr[j] += v * xp[i+(kx0+j)*g.x.d]
							}
						}
					}
				}
			}
		}
	})
}
