package kernels

import (
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/paretonav/paretonav/backend/internal/vmath"
)

// Depthwise convolutions (one input channel and one filter per group: the
// 3×3, 5×5 and 7×7 layers of MobileNet, EfficientNet and ConvNeXt) run
// directly, per plane, in all three passes, instead of an im2col matrix
// and a one-row product per group.
//
// Each padded input plane is split into s×s phase planes of Hq × Wq
// values (s the stride; one plane, the padded input itself, at stride 1):
// phase (py, px) holds padded rows py, py+s, … and columns px, px+s, ….
// Tap (ky, kx) of output (oy, ox) then reads phase (ky mod s, kx mod s) at
// (oy + ky/s, ox + kx/s), so with outputs laid out in "wide" rows of Wq
// values (the last Wq − oW of each unused) one tap is one long vector
// operation over (oH − 1)·Wq + oW values:
//
//	forward:  O[i]        += w[t]·Q_t[off_t + i]
//	∂x:       ∂Q_t[off_t + i] += w[t]·G[i]      (G: ∂y in wide rows, zeros between)
//	∂w:       ∂w[t]       += Σ_i G[i]·Q_t[off_t + i]
//
// (axpy and dot products: vmath's AVX2 kernels in float32, gonum's in
// float64). The sums run
// tap by tap in float32 in float32 graphs, as the im2col products do:
// the paths agree to round-off (TestConvDepthwiseMatchesIm2col).

// depthwiseOn switches the depthwise path on; tests turn it off to compare.
var depthwiseOn = true

// depthwiseOK reports whether g takes the depthwise path: group = C = M,
// equal strides of 1 or 2, a kernel of at least two taps, and dilation 1
// or an output plane small enough for the direct loops (convdwsmall.go),
// which take any dilation.
func depthwiseOK(g *convGeom) bool {
	return depthwiseOn && g.g > 1 && g.cg == 1 && g.mg == 1 &&
		(g.y.d == 1 && g.x.d == 1 || dwDirect(g)) && g.y.s == g.x.s && g.y.s <= 2 &&
		g.kh*g.kw > 1 && g.oh > 0 && g.ow > 0
}

// dwGeom is the phase-plane layout of one depthwise convolution.
type dwGeom struct {
	s, hq, wq int // stride, phase plane rows and columns
	l         int // values per tap: (oH − 1)·Wq + oW
	offs      []int
}

func newDwGeom(g *convGeom) dwGeom {
	s := g.y.s
	hp, wp := g.h+g.y.pb+g.y.pe, g.w+g.x.pb+g.x.pe
	d := dwGeom{s: s, hq: (hp + s - 1) / s, wq: (wp + s - 1) / s}
	d.l = (g.oh-1)*d.wq + g.ow
	d.offs = make([]int, g.kh*g.kw)
	for ky := 0; ky < g.kh; ky++ {
		for kx := 0; kx < g.kw; kx++ {
			phase := (ky%s)*s + kx%s
			d.offs[ky*g.kw+kx] = phase*d.hq*d.wq + (ky/s)*d.wq + kx/s
		}
	}
	return d
}

// planes is the length of the phase planes of one input plane.
func (d *dwGeom) planes() int { return d.s * d.s * d.hq * d.wq }

// split writes the padded input plane x (H × W) into its phase planes q
// (every value written, zeros in the padding).
//
// Phase rows of at most dwClearWhole values (the deeper layers' small
// planes, a column or two of padding) are cleared with their plane, once,
// and the input's values written over them: a clear per padding run cost
// a call for one or two values. Longer rows clear only their padding, so
// that large planes are not written twice.
func dwSplit[T float](g *convGeom, d *dwGeom, x, q []T) {
	s := d.s
	whole := d.wq <= dwClearWhole
	if whole {
		clear(q[:d.planes()])
	}
	if s == 2 {
		dwSplit2(g, d, x, q, whole)
		return
	}
	// Stride 1: the one phase is the padded plane. Rows r0 … r1−1 hold
	// rows r − pb of x in columns [lo, hi).
	lo, hi := validRange(d.wq, 1, -g.x.pb, g.w)
	r0, r1 := min(g.y.pb, d.hq), min(d.hq, g.h+g.y.pb)
	if !whole {
		for r := 0; r < d.hq; r++ {
			row := q[r*d.wq:][:d.wq]
			if r < r0 || r >= r1 {
				clear(row)
				continue
			}
			clear(row[:lo])
			clear(row[hi:])
		}
	}
	if lo < hi && r0 < r1 {
		// one move for the rows (movePlanes: short rows by a loop, not a
		// copy call each)
		movePlanes(q[r0*d.wq+lo:], d.wq, x[(r0-g.y.pb)*g.w+lo-g.x.pb:], g.w, r1-r0, hi-lo)
	}
}

// dwColumns2 is where a row of x goes at stride 2: x column j is column
// (j + pb)/2 of phase (j + pb) mod 2, so its ne even columns are phase
// pe's columns [ce, ce+ne) and its no odd ones phase po's [co, co+no).
func dwColumns2(g *convGeom) (pe, ce, ne, po, co, no int) {
	pb := g.x.pb
	return pb & 1, pb >> 1, (g.w + 1) / 2, (pb + 1) & 1, (pb + 1) >> 1, g.w / 2
}

// dwSplit2 is dwSplit at stride 2 (q cleared first when whole): each row
// of x is split into its even and odd columns in one pass, the rows of a
// row phase in one call (vmath.Deinterleave32Rows in float32), where a
// strided gather per phase and row went over each row twice, a value at a
// time.
func dwSplit2[T float](g *convGeom, d *dwGeom, x, q []T, whole bool) {
	if q32, ok := any(q).([]float32); ok {
		dwSplit2Rows(g, d, any(x).([]float32), q32, whole, vmath.Deinterleave32Rows)
		return
	}
	dwSplit2Rows(g, d, x, q, whole, deinterleaveRows[T])
}

// dwSplit2Rows is dwSplit2 with split as the rows' move.
func dwSplit2Rows[T float](g *convGeom, d *dwGeom, x, q []T, whole bool, split func(even, odd, src []T, rows, ne, no, es, os, ss int)) {
	plane := d.hq * d.wq
	if !whole { // the padding's zeros, row by row
		var lo, hi [2]int
		for px := 0; px < 2; px++ {
			lo[px], hi[px] = validRange(d.wq, 2, px-g.x.pb, g.w)
		}
		for py := 0; py < 2; py++ {
			for r := 0; r < d.hq; r++ {
				y := r*2 + py - g.y.pb
				for px := 0; px < 2; px++ {
					row := q[(py*2+px)*plane+r*d.wq:][:d.wq]
					if y < 0 || y >= g.h {
						clear(row)
						continue
					}
					clear(row[:lo[px]])
					clear(row[hi[px]:])
				}
			}
		}
	}
	pe, ce, ne, po, co, no := dwColumns2(g)
	for py := 0; py < 2; py++ {
		// Phase rows r0 … r1−1 read rows y = 2r + py − pb of x inside it.
		r0 := max(0, (g.y.pb-py+1)/2)
		r1 := min(d.hq, (g.h-1-py+g.y.pb)/2+1)
		if g.h-1-py+g.y.pb < 0 || r1 <= r0 {
			continue
		}
		at := py*2*plane + r0*d.wq // phase (py, 0)'s row r0; phase (py, 1)'s is plane further
		split(q[at+pe*plane+ce:], q[at+po*plane+co:], x[(2*r0+py-g.y.pb)*g.w:], r1-r0, ne, no, d.wq, d.wq, 2*g.w)
	}
}

// deinterleaveRows is vmath.Deinterleave32Rows's contract in Go, for
// float64: row r of src (stride ss) into even (stride es, ne values) and
// odd (stride os, no values).
func deinterleaveRows[T float](even, odd, src []T, rows, ne, no, es, os, ss int) {
	for r := 0; r < rows; r++ {
		e, o, s := even[r*es:][:ne], odd[r*os:][:no], src[r*ss:][:ne+no]
		for i := range o {
			e[i], o[i] = s[2*i], s[2*i+1]
		}
		if ne > no {
			e[no] = s[2*no]
		}
	}
}

// interleaveRows is vmath.Interleave32Rows's contract in Go, for float64.
func interleaveRows[T float](dst, even, odd []T, rows, ne, no, ds, es, os int) {
	for r := 0; r < rows; r++ {
		d, e, o := dst[r*ds:][:ne+no], even[r*es:][:ne], odd[r*os:][:no]
		for i := range o {
			d[2*i], d[2*i+1] = e[i], o[i]
		}
		if ne > no {
			d[2*no] = e[no]
		}
	}
}

// dwClearWhole is the longest phase row (and wide row, dwWide) that
// dwSplit and dwWide clear with the whole plane rather than by runs.
const dwClearWhole = 16

// dwMerge writes the input gradient plane dx (H × W) from the phase
// planes' gradient dq: a row of dx is its phase rows' valid columns,
// copied at stride 1 and interleaved at stride 2 (dwColumns2), in one
// pass per row (vmath.Interleave32Rows in float32).
func dwMerge[T float](g *convGeom, d *dwGeom, dq, dx []T) {
	if d.s == 1 {
		movePlanes(dx, g.w, dq[g.y.pb*d.wq+g.x.pb:], d.wq, g.h, g.w)
		return
	}
	if dx32, ok := any(dx).([]float32); ok { // depthwiseOK: s ≤ 2
		dwMerge2Rows(g, d, any(dq).([]float32), dx32, vmath.Interleave32Rows)
		return
	}
	dwMerge2Rows(g, d, dq, dx, interleaveRows[T])
}

// dwMerge2Rows is dwMerge at stride 2 with merge as the rows' move: the
// rows of dx of one parity come from one row phase, in one call.
func dwMerge2Rows[T float](g *convGeom, d *dwGeom, dq, dx []T, merge func(dst, even, odd []T, rows, ne, no, ds, es, os int)) {
	pe, ce, ne, po, co, no := dwColumns2(g)
	plane := d.hq * d.wq
	for y0 := 0; y0 < min(2, g.h); y0++ {
		py, r := (y0+g.y.pb)%2, (y0+g.y.pb)/2
		at := py*2*plane + r*d.wq // phase (py, 0)'s row for dx row y0
		merge(dx[y0*g.w:], dq[at+pe*plane+ce:], dq[at+po*plane+co:], (g.h-y0+1)/2, ne, no, 2*g.w, d.wq, d.wq)
	}
}

// dwWide writes the output gradient plane gy (oH × oW) into wide rows of
// Wq values, zeros between.
//
// Rows of at most dwClearWhole values are cleared with the whole buffer,
// once, rather than one call per row for the one or two values past oW.
func dwWide[T float](g *convGeom, d *dwGeom, gy, wide []T) {
	whole := d.wq <= dwClearWhole && d.wq > g.ow
	if whole {
		clear(wide[:g.oh*d.wq])
	}
	movePlanes(wide, d.wq, gy, g.ow, g.oh, g.ow)
	if !whole {
		for oy := 0; oy < g.oh; oy++ {
			clear(wide[oy*d.wq+g.ow:][:d.wq-g.ow])
		}
	}
}

// dwShort is the longest float64 vector that axpy and dot run as Go
// loops: below it gonum's call costs more than the arithmetic (planes of
// 2×2 to 4×4 outputs, as at the end of MobileNet and ConvNeXt at 64×64).
const dwShort = 24

// axpy adds a·x to y (len(y) values): float32 through vmath.Axpy32
// (fused multiply-adds, no call overhead for short planes), float64
// through gonum.
func axpy[T float](a T, x, y []T) {
	if y32, ok := any(y).([]float32); ok {
		vmath.Axpy32(any(a).(float32), any(x).([]float32), y32)
		return
	}
	if len(y) < dwShort {
		x = x[:len(y)]
		for i := range y {
			y[i] += a * x[i]
		}
		return
	}
	yy, n := any(y).([]float64), len(y)
	blas64.Axpy(any(a).(float64), blas64.Vector{N: n, Inc: 1, Data: any(x).([]float64)[:n]}, blas64.Vector{N: n, Inc: 1, Data: yy})
}

// dot is Σ x[i]·y[i] over len(x) values.
func dot[T float](x, y []T) T {
	if x32, ok := any(x).([]float32); ok {
		return any(vmath.Dot32(x32, any(y).([]float32))).(T)
	}
	if len(x) < dwShort {
		y = y[:len(x)]
		var s T
		for i, v := range x {
			s += v * y[i]
		}
		return s
	}
	xx, n := any(x).([]float64), len(x)
	return any(blas64.Dot(blas64.Vector{N: n, Inc: 1, Data: xx}, blas64.Vector{N: n, Inc: 1, Data: any(y).([]float64)[:n]})).(T)
}

// convForwardDepthwise writes the depthwise convolution of x by w (and
// bias b, nil for none) into out, every element.
func convForwardDepthwise[T float](g *convGeom, x, w, b, out []T) {
	if dwDirect(g) {
		convForwardDwDirect(g, x, w, b, out)
		return
	}
	d := newDwGeom(g)
	if oneChunk(g.n*g.c, g.outPlane*g.kh*g.kw) { // no closure (oneChunk)
		forwardDwPhases(g, &d, x, w, b, out, 0, g.n*g.c)
		return
	}
	dd := d // the closure's copy: d itself stays on the stack
	parallelWork(g.n*g.c, g.outPlane*g.kh*g.kw, func(_, lo, hi int) { forwardDwPhases(g, &dd, x, w, b, out, lo, hi) })
}

// forwardDwPhases is convForwardDepthwise for planes [lo, hi).
func forwardDwPhases[T float](g *convGeom, d *dwGeom, x, w, b, out []T, lo, hi int) {
	taps := g.kh * g.kw
	buf := getScratch[T](&colScratch, d.planes()+g.oh*d.wq)
	defer colScratch.pool.Put(buf)
	q, wide := (*buf)[:d.planes()], (*buf)[d.planes():][:g.oh*d.wq]
	for p := lo; p < hi; p++ {
		c := p % g.c
		dwSplit(g, d, x[p*g.inPlane:][:g.inPlane], q)
		wc := w[c*taps:][:taps]
		o := wide[:d.l]
		for i := range o {
			o[i] = wc[0] * q[d.offs[0]+i]
		}
		for t := 1; t < taps; t++ {
			axpy(wc[t], q[d.offs[t]:], o)
		}
		og := out[p*g.outPlane:][:g.outPlane]
		var bc T
		if b != nil {
			bc = b[c]
		}
		for oy := 0; oy < g.oh; oy++ {
			src, dst := wide[oy*d.wq:][:g.ow], og[oy*g.ow:][:g.ow]
			for i, v := range src {
				dst[i] = v + bc
			}
		}
	}
}

// convGradXDepthwise writes the input gradient into dx, every element.
func convGradXDepthwise[T float](g *convGeom, w, gy, dx []T) {
	if dwDirect(g) {
		convGradXDwDirect(g, w, gy, dx)
		return
	}
	d := newDwGeom(g)
	if oneChunk(g.n*g.c, g.outPlane*g.kh*g.kw) { // no closure (oneChunk)
		gradXDwPhases(g, &d, w, gy, dx, 0, g.n*g.c)
		return
	}
	dd := d // the closure's copy: d itself stays on the stack
	parallelWork(g.n*g.c, g.outPlane*g.kh*g.kw, func(_, lo, hi int) { gradXDwPhases(g, &dd, w, gy, dx, lo, hi) })
}

// gradXDwPhases is convGradXDepthwise for planes [lo, hi).
func gradXDwPhases[T float](g *convGeom, d *dwGeom, w, gy, dx []T, lo, hi int) {
	taps := g.kh * g.kw
	buf := getScratch[T](&colScratch, d.planes()+g.oh*d.wq)
	defer colScratch.pool.Put(buf)
	dq, wide := (*buf)[:d.planes()], (*buf)[d.planes():][:g.oh*d.wq]
	for p := lo; p < hi; p++ {
		c := p % g.c
		dwWide(g, d, gy[p*g.outPlane:][:g.outPlane], wide)
		clear(dq)
		wc := w[c*taps:][:taps]
		for t := 0; t < taps; t++ {
			axpy(wc[t], wide, dq[d.offs[t]:][:d.l])
		}
		dwMerge(g, d, dq, dx[p*g.inPlane:][:g.inPlane])
	}
}

// convGradWDepthwise writes the weight gradient into dw (C × kH·kW), every
// element: per channel, the samples' sums added in sample order.
func convGradWDepthwise[T float](g *convGeom, x, gy, dw []T) {
	if dwDirect(g) {
		convGradWDwDirect(g, x, gy, dw)
		return
	}
	d := newDwGeom(g)
	if oneChunk(g.c, g.n*g.outPlane*g.kh*g.kw) { // no closure (oneChunk)
		gradWDwPhases(g, &d, x, gy, dw, 0, g.c)
		return
	}
	dd := d // the closure's copy: d itself stays on the stack
	parallelWork(g.c, g.n*g.outPlane*g.kh*g.kw, func(_, lo, hi int) { gradWDwPhases(g, &dd, x, gy, dw, lo, hi) })
}

// gradWDwPhases is convGradWDepthwise for channels [lo, hi).
func gradWDwPhases[T float](g *convGeom, d *dwGeom, x, gy, dw []T, lo, hi int) {
	taps := g.kh * g.kw
	buf := getScratch[T](&colScratch, d.planes()+g.oh*d.wq)
	defer colScratch.pool.Put(buf)
	q, wide := (*buf)[:d.planes()], (*buf)[d.planes():][:g.oh*d.wq]
	for c := lo; c < hi; c++ {
		dc := dw[c*taps:][:taps]
		clear(dc)
		for n := 0; n < g.n; n++ {
			p := n*g.c + c
			dwSplit(g, d, x[p*g.inPlane:][:g.inPlane], q)
			dwWide(g, d, gy[p*g.outPlane:][:g.outPlane], wide)
			for t := range dc {
				dc[t] += dot(wide[:d.l], q[d.offs[t]:])
			}
		}
	}
}

// ConvDepthwise reports whether a convolution of input shape xs and
// filters ws with parameters p runs on the depthwise path.
func ConvDepthwise(xs, ws []int, p ConvParams) bool {
	g, err := newConvGeom(xs, ws, p)
	return err == nil && depthwiseOK(&g)
}
