package kernels

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/paretonav/paretonav/internal/hugepages"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	fgemm "github.com/paretonav/paretonav/backend/internal/gemm"
	"github.com/paretonav/paretonav/backend/internal/vmath"
)

// ConvParams are the attributes of ONNX Conv. The zero value means stride 1,
// dilation 1, no padding and one group.
type ConvParams struct {
	// Strides per spatial axis; nil means all 1.
	Strides []int
	// Pads are [begin..., end...] per spatial axis as in ONNX: for 2-D,
	// [top, left, bottom, right]. nil means no padding. Ignored unless AutoPad
	// is "" or NOTSET.
	Pads []int
	// Dilations per spatial axis; nil means all 1.
	Dilations []int
	// Group is the number of groups; 0 means 1. Group = C is depthwise.
	Group int
	// AutoPad is ONNX's auto_pad: "", NOTSET, SAME_UPPER, SAME_LOWER or VALID.
	AutoPad string
	// WholeKernel keeps the taps that read only padding, which Conv
	// otherwise drops (trimConv); tests set it to compare.
	WholeKernel bool
}

// convGeom is the resolved geometry of a 2-D convolution.
type convGeom struct {
	n, c, h, w, m, g  int
	cg, mg            int // channels and filters per group
	kh, kw            int
	y, x              window // vertical, horizontal windows
	oh, ow            int
	direct            bool // 1×1, stride 1, no pad: the input is its own im2col
	wholeKernel       bool // ConvParams.WholeKernel
	colRows, colCols  int  // im2col matrix of one group: (cg·kh·kw) × (oh·ow)
	inPlane, outPlane int
}

func (g convGeom) String() string {
	return fmt.Sprintf("x[%d,%d,%d,%d] w[%d,%d,%d,%d] group %d stride (%d,%d) dil (%d,%d) pads (%d,%d,%d,%d)",
		g.n, g.c, g.h, g.w, g.m, g.cg, g.kh, g.kw, g.g, g.y.s, g.x.s, g.y.d, g.x.d, g.y.pb, g.x.pb, g.y.pe, g.x.pe)
}

// Conv builds ONNX Conv: y = conv(x, w) + b for x [N,C,H,W] (or [N,C,L]),
// w [M, C/group, kH, kW] (or [M, C/group, k]) and an optional bias b [M]
// (nil for none). The node is differentiable with respect to x, w and b.
func Conv(x, w, b *gorgonia.Node, p ConvParams) (*gorgonia.Node, error) {
	const name = "Conv"
	if err := checkFloat(name, "input X", x); err != nil {
		return nil, err
	}
	if err := checkFloat(name, "weights W", w); err != nil {
		return nil, err
	}
	if err := sameDtype(name, x, w, b); err != nil {
		return nil, err
	}
	if x.Dims() == 3 && w.Dims() == 3 {
		return conv1D(x, w, b, p)
	}
	if x.Dims() != 4 || w.Dims() != 4 {
		return nil, fmt.Errorf("ops: Conv: X %v and W %v: expected both 4-D (NCHW) or both 3-D (NCL)", x.Shape(), w.Shape())
	}
	xs, ws := x.Shape(), w.Shape()
	g, err := newConvGeom(xs, ws, p)
	if err != nil {
		return nil, fmt.Errorf("ops: Conv: %w", err)
	}
	if b != nil && (b.Dims() != 1 || b.Shape()[0] != g.m) {
		return nil, fmt.Errorf("ops: Conv: bias B %v: expected shape [%d]", b.Shape(), g.m)
	}
	sc := newConvScratch()
	tr := trimConv(&g)
	op := &fnOp{
		name:     "Conv{" + g.String() + "}",
		inDims:   []int{4, 4},
		outShape: tensor.Shape{g.n, g.m, g.oh, g.ow},
		into: func(buf any, in []tensor.Tensor) (tensor.Tensor, error) {
			var bias tensor.Tensor
			if len(in) == 3 {
				bias = in[2]
			}
			n := g.n * g.m * g.outPlane
			if tr != nil {
				return dispatch(in[0],
					func() (tensor.Tensor, error) {
						return trimmedForward(&g, tr, sc, in[0], in[1], bias, outBufDirty[float32](buf, n)), nil
					},
					func() (tensor.Tensor, error) {
						return trimmedForward(&g, tr, sc, in[0], in[1], bias, outBufDirty[float64](buf, n)), nil
					})
			}
			return dispatch(in[0],
				func() (tensor.Tensor, error) {
					return convForward(&g, sc, in[0], in[1], bias, outBufDirty[float32](buf, n)), nil
				},
				func() (tensor.Tensor, error) {
					return convForward(&g, sc, in[0], in[1], bias, outBufDirty[float64](buf, n)), nil
				})
		},
		grads: []gradSpec{
			{deps: []int{1, depGrad}, into: func(buf any, in []tensor.Tensor) (tensor.Tensor, error) {
				n := g.n * g.c * g.inPlane
				if tr != nil {
					return dispatch(in[0],
						func() (tensor.Tensor, error) {
							return trimmedGradX(&g, tr, sc, in[0], in[1], outBufDirty[float32](buf, n)), nil
						},
						func() (tensor.Tensor, error) {
							return trimmedGradX(&g, tr, sc, in[0], in[1], outBufDirty[float64](buf, n)), nil
						})
				}
				return dispatch(in[0],
					func() (tensor.Tensor, error) {
						return convGradX(&g, sc, in[0], in[1], outBufDirty[float32](buf, n)), nil
					},
					func() (tensor.Tensor, error) {
						return convGradX(&g, sc, in[0], in[1], outBufDirty[float64](buf, n)), nil
					})
			}},
			{deps: []int{0, depGrad}, into: func(buf any, in []tensor.Tensor) (tensor.Tensor, error) {
				n := g.m * g.colRows
				if tr != nil { // writes every element: no zeroing
					return dispatch(in[0],
						func() (tensor.Tensor, error) {
							return trimmedGradW(&g, tr, sc, in[0], in[1], outBufDirty[float32](buf, n)), nil
						},
						func() (tensor.Tensor, error) {
							return trimmedGradW(&g, tr, sc, in[0], in[1], outBufDirty[float64](buf, n)), nil
						})
				}
				if depthwiseOK(&g) || groupedOK(&g) { // writes every element: no zeroing
					return dispatch(in[0],
						func() (tensor.Tensor, error) {
							return convGradWInto(&g, sc, in[0], in[1], outBufDirty[float32](buf, n)), nil
						},
						func() (tensor.Tensor, error) {
							return convGradWInto(&g, sc, in[0], in[1], outBufDirty[float64](buf, n)), nil
						})
				}
				if batchedPlanes(&g) && !winogradGradWOK(&g) { // writes every element: no zeroing
					return dispatch(in[0],
						func() (tensor.Tensor, error) {
							return convGradWBatched(&g, sc, data[float32](in[0]), data[float32](in[1]), outBufDirty[float32](buf, n), 0), nil
						},
						func() (tensor.Tensor, error) {
							return convGradWBatched(&g, sc, data[float64](in[0]), data[float64](in[1]), outBufDirty[float64](buf, n), 0), nil
						})
				}
				return dispatch(in[0],
					func() (tensor.Tensor, error) {
						return convGradWInto(&g, sc, in[0], in[1], outBuf[float32](buf, n)), nil
					},
					func() (tensor.Tensor, error) {
						return convGradWInto(&g, sc, in[0], in[1], outBuf[float64](buf, n)), nil
					})
			}},
		},
	}
	op.flops = convFLOPs(&g, tr)
	run := &g // the geometry convFLOPs runs
	if tr != nil {
		run = &tr.g
	}
	op.wino, op.winoGradW = winogradOK(run), winogradGradWOK(run)
	fwd, gradX, gradW := op.into, op.grads[0].into, op.grads[1].into
	op.fwd = func(in []tensor.Tensor) (tensor.Tensor, error) { return fwd(nil, in) }
	op.grads[0].fn = func(in []tensor.Tensor) (tensor.Tensor, error) { return gradX(nil, in) }
	op.grads[1].fn = func(in []tensor.Tensor) (tensor.Tensor, error) { return gradW(nil, in) }
	children := []*gorgonia.Node{x, w}
	if b != nil {
		op.inDims = append(op.inDims, 1)
		op.name += "+bias"
		op.grads = append(op.grads, biasGrad())
		children = append(children, b)
	}
	return apply(op, children...)
}

// conv1D lowers a 1-D convolution to a 2-D one with height 1.
func conv1D(x, w, b *gorgonia.Node, p ConvParams) (*gorgonia.Node, error) {
	xs, ws := x.Shape(), w.Shape()
	q := ConvParams{Group: p.Group, AutoPad: p.AutoPad}
	if len(p.Strides) == 1 {
		q.Strides = []int{1, p.Strides[0]}
	} else if p.Strides != nil {
		return nil, fmt.Errorf("ops: Conv: strides %v: expected 1 value for 1-D", p.Strides)
	}
	if len(p.Dilations) == 1 {
		q.Dilations = []int{1, p.Dilations[0]}
	} else if p.Dilations != nil {
		return nil, fmt.Errorf("ops: Conv: dilations %v: expected 1 value for 1-D", p.Dilations)
	}
	if len(p.Pads) == 2 {
		q.Pads = []int{0, p.Pads[0], 0, p.Pads[1]}
	} else if p.Pads != nil {
		return nil, fmt.Errorf("ops: Conv: pads %v: expected 2 values for 1-D", p.Pads)
	}
	x4, err := reshape("Conv", x, tensor.Shape{xs[0], xs[1], 1, xs[2]})
	if err != nil {
		return nil, err
	}
	w4, err := reshape("Conv", w, tensor.Shape{ws[0], ws[1], 1, ws[2]})
	if err != nil {
		return nil, err
	}
	y, err := Conv(x4, w4, b, q)
	if err != nil {
		return nil, err
	}
	ys := y.Shape()
	return reshape("Conv", y, tensor.Shape{ys[0], ys[1], ys[3]})
}

func newConvGeom(xs, ws tensor.Shape, p ConvParams) (convGeom, error) {
	var g convGeom
	g.n, g.c, g.h, g.w = xs[0], xs[1], xs[2], xs[3]
	g.m, g.cg, g.kh, g.kw = ws[0], ws[1], ws[2], ws[3]
	g.g, g.wholeKernel = p.Group, p.WholeKernel
	if g.g == 0 {
		g.g = 1
	}
	if g.g < 0 || g.c%g.g != 0 || g.m%g.g != 0 {
		return g, fmt.Errorf("group %d must divide input channels %d and filters %d", g.g, g.c, g.m)
	}
	if g.cg != g.c/g.g {
		return g, fmt.Errorf("W %v: expected %d input channels per group (C=%d, group=%d)", ws, g.c/g.g, g.c, g.g)
	}
	g.mg = g.m / g.g
	a, err := fillSpatial(2, []int{g.kh, g.kw}, p.Strides, p.Dilations, p.Pads)
	if err != nil {
		return g, err
	}
	if g.y, err = resolveWindow(g.h, g.kh, a.strides[0], a.dilations[0], a.pads[0], a.pads[2], p.AutoPad, false); err != nil {
		return g, fmt.Errorf("height: %w", err)
	}
	if g.x, err = resolveWindow(g.w, g.kw, a.strides[1], a.dilations[1], a.pads[1], a.pads[3], p.AutoPad, false); err != nil {
		return g, fmt.Errorf("width: %w", err)
	}
	g.oh, g.ow = g.y.out, g.x.out
	g.direct = g.kh == 1 && g.kw == 1 && g.y.s == 1 && g.x.s == 1 && g.y.pb == 0 && g.x.pb == 0 && g.y.pe == 0 && g.x.pe == 0
	g.colRows, g.colCols = g.cg*g.kh*g.kw, g.oh*g.ow
	g.inPlane, g.outPlane = g.h*g.w, g.oh*g.ow
	return g, nil
}

// validRange returns the output positions [lo, hi) of a window of n
// outputs whose input index o·s + off falls inside [0, in).
func validRange(n, s, off, in int) (lo, hi int) {
	lo, hi = 0, n
	if off < 0 {
		lo = (-off + s - 1) / s
	}
	if last := in - 1 - off; last < 0 {
		hi = 0
	} else {
		hi = min(n, last/s+1)
	}
	return lo, max(lo, hi)
}

// im2col writes the patches of one group's input planes xg (cg planes) into
// col, laid out (cg·kh·kw) × (oh·ow).
func im2col[T float](g *convGeom, xg, col []T) { im2colRows(g, xg, col, 0, g.oh) }

// im2colRows writes the patches of output rows [r0, r1) of one group's
// input planes xg into col, laid out (cg·kh·kw) × ((r1−r0)·ow). Rows of
// unit stride are copied; only the padded edges are zeroed.
func im2colRows[T float](g *convGeom, xg, col []T, r0, r1 int) {
	im2colRowsLd(g, xg, col, (r1-r0)*g.ow, r0, r1)
}

// im2colRowsLd is im2colRows into a matrix of row stride ld ≥ (r1−r0)·ow
// (the patches of several samples side by side: convbatch.go).
func im2colRowsLd[T float](g *convGeom, xg, col []T, ld, r0, r1 int) {
	cols := (r1 - r0) * g.ow
	if useIm2colSameWidth && g.x.s == 1 && g.y.s == 1 && g.x.d == 1 && g.y.d == 1 && g.ow == g.w {
		im2colSameWidth(g, xg, col, ld, r0, r1)
		return
	}
	for c := 0; c < g.cg; c++ {
		plane := xg[c*g.inPlane : (c+1)*g.inPlane]
		for ki := 0; ki < g.kh; ki++ {
			for kj := 0; kj < g.kw; kj++ {
				row := col[((c*g.kh+ki)*g.kw+kj)*ld:][:cols]
				off := kj*g.x.d - g.x.pb
				lo, hi := validRange(g.ow, g.x.s, off, g.w)
				for oi := r0; oi < r1; oi++ {
					dst := row[(oi-r0)*g.ow : (oi-r0+1)*g.ow]
					ii := oi*g.y.s - g.y.pb + ki*g.y.d
					if ii < 0 || ii >= g.h || lo >= hi {
						clear(dst)
						continue
					}
					src := plane[ii*g.w : (ii+1)*g.w]
					clear(dst[:lo])
					clear(dst[hi:])
					if g.x.s == 1 {
						copy(dst[lo:hi], src[lo+off:hi+off])
						continue
					}
					gatherStride(dst[lo:hi], src[lo*g.x.s+off:], g.x.s)
				}
			}
		}
	}
}

// useIm2colSameWidth enables im2colSameWidth; tests turn it off to compare.
var useIm2colSameWidth = true

// im2colSameWidth is im2colRowsLd for stride 1, dilation 1 and output
// rows as wide as the input's ("same" padding across, MTAN's 3×3 with pad
// 1): a tap's output rows then read the input plane at a constant offset,
// so the tap's valid rows are one copy, after which the columns that fall
// in the padding (one at each edge for a 3×3) are zeroed, instead of a
// copy and two clears per output row: 64 channels of 64×96 and of 288×384
// in 8-row bands 9–10% faster, 256 channels of 16×24 twice as fast (rows
// of 24 values); the full MTAN's step did not change measurably (im2col
// is bound by writing the matrix). The zeros between one row's last
// valid column and the next row's first are one clear.
func im2colSameWidth[T float](g *convGeom, xg, col []T, ld, r0, r1 int) {
	cols := (r1 - r0) * g.ow
	w := g.w
	for c := 0; c < g.cg; c++ {
		plane := xg[c*g.inPlane : (c+1)*g.inPlane]
		for ki := 0; ki < g.kh; ki++ {
			// output rows [a, b) read input rows a−pb+ki ∈ [0, h)
			a := max(r0, g.y.pb-ki)
			b := min(r1, g.h+g.y.pb-ki)
			for kj := 0; kj < g.kw; kj++ {
				row := col[((c*g.kh+ki)*g.kw+kj)*ld:][:cols]
				off := kj - g.x.pb
				lo, hi := validRange(g.ow, 1, off, w) // valid output columns
				if a >= b || lo >= hi {
					clear(row)
					continue
				}
				// element (oi, oj) reads plane[(oi−pb+ki)·w + oj + off]:
				// one copy from (a, lo) to (b−1, hi−1), both inside the plane.
				t0, t1 := (a-r0)*w+lo, (b-1-r0)*w+hi
				s0 := (a-g.y.pb+ki)*w + lo + off
				copy(row[t0:t1], plane[s0:s0+t1-t0])
				// The zeros: before (a, lo), after (b−1, hi−1), and between
				// one row's hi and the next one's lo, each one clear.
				clear(row[:t0])
				clear(row[t1:])
				if lo > 0 || hi < w {
					// The gaps are the kernel's overhang, one or two values
					// for 3×3 and 5×5: stores, not a clear call each.
					for oi := a; oi+1 < b; oi++ {
						for i, z := (oi-r0)*w+hi, (oi+1-r0)*w+lo; i < z; i++ {
							row[i] = 0
						}
					}
				}
			}
		}
	}
}

// col2im adds the columns col back into one group's input planes xg.
func col2im[T float](g *convGeom, col, xg []T) { col2imRows(g, col, xg, 0, g.oh) }

// col2imRows adds the columns of output rows [r0, r1), laid out as
// im2colRows writes them, back into one group's input planes xg.
func col2imRows[T float](g *convGeom, col, xg []T, r0, r1 int) {
	col2imRowsLd(g, col, (r1-r0)*g.ow, xg, r0, r1)
}

// col2imRowsLd is col2imRows from a matrix of row stride ld ≥ (r1−r0)·ow.
func col2imRowsLd[T float](g *convGeom, col []T, ld int, xg []T, r0, r1 int) {
	cols := (r1 - r0) * g.ow
	for c := 0; c < g.cg; c++ {
		plane := xg[c*g.inPlane : (c+1)*g.inPlane]
		for ki := 0; ki < g.kh; ki++ {
			for kj := 0; kj < g.kw; kj++ {
				row := col[((c*g.kh+ki)*g.kw+kj)*ld:][:cols]
				off := kj*g.x.d - g.x.pb
				lo, hi := validRange(g.ow, g.x.s, off, g.w)
				if lo >= hi {
					continue
				}
				for oi := r0; oi < r1; oi++ {
					ii := oi*g.y.s - g.y.pb + ki*g.y.d
					if ii < 0 || ii >= g.h {
						continue
					}
					src := row[(oi-r0)*g.ow+lo : (oi-r0)*g.ow+hi]
					dst := plane[ii*g.w : (ii+1)*g.w]
					if g.x.s == 1 {
						addTo(dst[lo+off:hi+off], src)
						continue
					}
					jj := lo*g.x.s + off
					for _, v := range src {
						dst[jj] += v
						jj += g.x.s
					}
				}
			}
		}
	}
}

// colBandElems bounds, in elements, the im2col buffer one worker of a
// convolution fills at a time: a larger im2col matrix (one sample, one
// group) is formed and multiplied in bands of whole output rows, so the
// scratch memory of a convolution does not grow with the image (MTAN's
// first 3×3 layers at 288×384 would need 255 MB per sample).
var colBandElems = 1 << 22

// bandCacheElems is the size, in elements, of the im2col band a worker of
// a forward convolution fills and multiplies at a time when its filters
// take at most as much: 1 MB of float32, so that the band is still in the
// core's L2 cache when the product reads it. With 16 MB bands the forward
// 3×3 convolutions of 64 and 128 channels on MTAN's large planes ran at
// 150–165 GFLOP/s on the 2-core development machine; with 1 MB bands at
// 195–225 (BenchmarkConvLargePlanes). Larger filters (MTAN's 512-channel
// layers: 9.4 MB) keep bands of colBandElems: every band packs the whole
// filter matrix again, and one-row bands of 48 columns ran at 167 GFLOP/s
// against 240 with 16 MB bands. The gradients keep colBandElems.
var bandCacheElems = 1 << 18

// bandRows is the number of output rows per im2col band of g in the
// gradients.
func (g *convGeom) bandRows() int {
	return max(1, min(g.oh, colBandElems/max(1, g.colRows*g.ow)))
}

// fwdBandRows is the number of output rows per im2col band of g in the
// forward pass.
func (g *convGeom) fwdBandRows() int {
	if !g.smallFilters() {
		return g.bandRows()
	}
	return max(1, min(g.oh, bandCacheElems/max(1, g.colRows*g.ow)))
}

// gradWMinCols is the least number of output pixels per im2col band of
// the weight gradient (its product's k): with 1 MB bands, 256 channels of
// 16×24 would multiply over 96 pixels at a time. A variable for tests.
var gradWMinCols = 192

// gradWBandRows is the number of output rows per im2col band of g's
// weight gradient: bands of bandCacheElems (1 MB), so that the band is
// still in the core's L2 cache when the product reads it back, of at
// least gradWMinCols pixels, and at most bandRows. With bands of
// colBandElems (16 MB), which MTAN's 64-channel layers at 64×96 filled
// whole (14 MB a sample), the band went to memory and back, and the
// weight gradient ran at 142–186 GFLOP/s on two cores, against 296–331
// with 1 MB bands; 128 channels of 32×48 285 against 337, 256 of 16×24
// 271 against 298, and none slower (BenchmarkConvGradWBands:
// BenchmarkConvGradW's shapes as before, 142–186 at 64 channels of 64×96
// in the same run, is BenchmarkConvMTAN's dw).
func (g *convGeom) gradWBandRows() int {
	rows := max(bandCacheElems/max(1, g.colRows*g.ow), (gradWMinCols+g.ow-1)/g.ow)
	return max(1, min(rows, g.bandRows()))
}

// smallFilters reports whether a group's filter matrix (mg × colRows)
// takes at most bandCacheElems: then the forward pass's 1 MB bands pay,
// and so does the input gradient as a forward convolution.
func (g *convGeom) smallFilters() bool { return g.mg*g.colRows <= bandCacheElems }

// addTo adds src into dst element-wise (len(dst) = len(src)). float32
// runs through vmath.Axpy32 with a = 1: a fused 1·s + d rounds once, as
// d + s does, so the sums are bit-identical to the loop's; the vector
// kernel adds the 136 values of a LeNet second-layer tap row (250 of them
// per sample in the input gradient's col2im, a tenth of that model's step
// with the loop) in 13–20 ns against the loop's 61–72 ns. Other types add
// four at a time without bounds checks in the loop.
func addTo[T float](dst, src []T) {
	if d32, ok := any(dst).([]float32); ok {
		vmath.Axpy32(1, any(src).([]float32), d32[:len(src)])
		return
	}
	dst = dst[:len(src)]
	i := 0
	for ; i+4 <= len(src); i += 4 {
		d, s := dst[i:i+4:i+4], src[i:i+4:i+4]
		d[0] += s[0]
		d[1] += s[1]
		d[2] += s[2]
		d[3] += s[3]
	}
	for ; i < len(src); i++ {
		dst[i] += src[i]
	}
}

// scratch is a pool of scratch buffers, and, for a Conv op, the cache of
// its forward pass's im2col matrices for the weight gradient. A buffer is
// used by one worker between get and put, and never escapes the kernel, so
// reusing it across runs (and machines) cannot alias any output.
type scratch struct {
	pool  freeList
	cache colCache
}

// colScratch holds the im2col bands of every convolution: ops run one at
// a time (or a few, in backward passes side by side), so all of them
// share one pool of a few band-sized buffers.
var colScratch scratch

// colCacheLimit bounds, in bytes, the im2col matrices one Conv op keeps
// from its forward pass for its weight gradient (every sample and group:
// N·group·(C/group·kH·kW)·(oH·oW) values), and colCacheTotal those all
// Conv ops keep together (the first ops to run take what there is). The
// weight gradient runs once per task after one forward pass, so it reads
// the kept matrices instead of recomputing them m times. Above the limits
// (large inputs such as MTAN's) nothing is kept and the gradient
// recomputes them, band by band. Float32 convolutions of stride 1
// without padding keep nothing: their weight gradient reads the input in
// place (wideRows). Each op that keeps matrices also keeps a
// copy of its input X (N·C·H·W values) to check the cache; both stay
// allocated with the op between steps and are reused.
var (
	colCacheLimit       = 32 << 20
	colCacheTotal int64 = 64 << 20
)

// ColCacheTotal is the most bytes the Conv ops' caches of im2col matrices
// hold together, for the memory estimate.
func ColCacheTotal() int64 { return colCacheTotal }

// colCacheUsed is the bytes the Conv ops' caches hold together.
var colCacheUsed atomic.Int64

// colCache is the im2col matrix of every sample of one forward input x,
// with a copy of x: the weight gradient uses col only when its own x is
// bit-for-bit equal to the copy, so whichever executor ran the forward
// pass, and whatever it did with x's buffer since, a cached matrix is
// exactly the one the gradient would compute. mu is only ever TryLocked:
// a run that finds it held (another goroutine running the same op)
// computes without the cache.
type colCache struct {
	mu    sync.Mutex
	valid bool
	x     any    // []T: copy of the forward input
	col   any    // []T: per sample and group, colRows×colCols
	bytes *int64 // what x and col hold, counted in colCacheUsed
}

// newConvScratch is the scratch of one Conv op; when the op is garbage
// collected, what its cache held is no longer counted against
// colCacheTotal.
func newConvScratch() *scratch {
	sc := &scratch{}
	sc.cache.bytes = cacheBytes(sc)
	return sc
}

// cacheBytes returns the counter of the bytes a cache of owner holds in
// colCacheUsed; once owner is garbage collected, they are no longer
// counted.
func cacheBytes[O any](owner *O) *int64 {
	b := new(int64)
	runtime.AddCleanup(owner, func(b *int64) { colCacheUsed.Add(-*b) }, b)
	return b
}

// reserveCache makes a cache's count, *held bytes, need bytes when all
// the Conv ops' caches then stay within colCacheTotal, and reports
// whether it did; otherwise the cache is to drop what it holds, which is
// no longer counted (*held becomes 0).
func reserveCache(held *int64, need int64) bool {
	if colCacheUsed.Add(need-*held) > colCacheTotal {
		colCacheUsed.Add(-need)
		*held = 0
		return false
	}
	*held = need
	return true
}

// ReserveKept is reserveCache for the values other ops keep from their
// forward passes for their gradients (InstanceNormalization's
// statistics): they share colCacheTotal with the Conv ops' caches, so
// the memory estimate's bound covers both. held is a counter from
// KeptCounter.
func ReserveKept(held *int64, need int64) bool { return reserveCache(held, need) }

// KeptCounter returns the counter of the bytes owner keeps (ReserveKept);
// once owner is garbage collected they are no longer counted.
func KeptCounter[O any](owner *O) *int64 { return cacheBytes(owner) }

// sameBits reports whether a and b hold the same bits.
func sameBits[T float](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	switch x := any(a).(type) {
	case []float32:
		y := any(b).([]float32)
		for i, v := range x {
			if math.Float32bits(v) != math.Float32bits(y[i]) {
				return false
			}
		}
	case []float64:
		y := any(b).([]float64)
		for i, v := range x {
			if math.Float64bits(v) != math.Float64bits(y[i]) {
				return false
			}
		}
	default:
		return false
	}
	return true
}

// cacheSize is the number of values of the cached im2col matrices of g,
// or 0 when g does not cache them (a direct convolution, or above
// colCacheLimit).
func cacheSize[T float](g *convGeom) int {
	var z T
	if g.direct || wideRows[T](g) || groupedOK(g) {
		return 0
	}
	if _, ok := padWide[T](g); ok || wideForward(g) && !batchedPlanes(g) {
		return 0 // the forward pass reads wide rows, forms no im2col matrix
	}
	n := g.n * g.g * g.colRows * g.colCols
	if n*int(unsafe.Sizeof(z)) > colCacheLimit {
		return 0
	}
	return n
}

// forwardCols locks the cache of sc for a forward pass over x and returns
// the buffer to write every sample's im2col matrices into, or nil (no
// caching: the cache is not locked; always for a nil sc). The caller fills it and calls
// sc.cache.store.
func forwardCols[T float](g *convGeom, sc *scratch, x []T) []T {
	n := cacheSize[T](g)
	if n == 0 || sc == nil || !sc.cache.mu.TryLock() {
		return nil
	}
	c := &sc.cache
	c.valid = false
	col, ok1 := c.col.([]T)
	xc, ok2 := c.x.([]T)
	if !ok1 || !ok2 || len(col) != n || len(xc) != len(x) {
		var z T
		need := int64(n+len(x)) * int64(unsafe.Sizeof(z))
		if c.bytes == nil {
			c.bytes = new(int64) // a scratch not from newConvScratch (tests)
		}
		if !reserveCache(c.bytes, need) {
			c.col, c.x = nil, nil
			c.mu.Unlock()
			return nil
		}
		col, xc = make([]T, n), make([]T, len(x))
		c.col, c.x = col, xc
	}
	copy(xc, x)
	return col
}

// cachedCols returns the cached im2col matrices when they were computed
// from an input bit-for-bit equal to x, holding the lock until the
// returned release is called; nil otherwise.
func cachedCols[T float](g *convGeom, sc *scratch, x []T) (col []T, release func()) {
	if cacheSize[T](g) == 0 || !sc.cache.mu.TryLock() {
		return nil, nil
	}
	c := &sc.cache
	xc, ok1 := c.x.([]T)
	col, ok2 := c.col.([]T)
	if !c.valid || !ok1 || !ok2 || !sameBits(xc, x) {
		c.mu.Unlock()
		return nil, nil
	}
	return col, c.mu.Unlock
}

// getScratch returns a buffer of n elements of T from s (contents
// undefined); give it back with s.pool.Put.
func getScratch[T float](s *scratch, n int) *[]T {
	if v := take[T](&s.pool, n); v != nil {
		*v = (*v)[:n]
		return v
	}
	b := make([]T, n)
	hugepages.Advise(b)
	return &b
}

// convForward writes the convolution into out (n·m·oH·oW, any contents:
// every element is written, the products run with beta 0).
//
// The three passes take the geometry by pointer and never write it: an op
// passes its own, kept for its life, where a copy taken by value moved to
// the heap on every call (the loops' closures capture it), one object a
// convolution and pass, a fifth of a ShuffleNet step's allocations.
func convForward[T float](g *convGeom, sc *scratch, xt, wt, bt tensor.Tensor, out []T) tensor.Tensor {
	x, w := data[T](xt), data[T](wt)
	var b []T
	if bt != nil {
		b = data[T](bt)
	}
	if depthwiseOK(g) {
		convForwardDepthwise(g, x, w, b, out)
		return newTensor(tensor.Shape{g.n, g.m, g.oh, g.ow}, out)
	}
	if groupedOK(g) {
		convForwardGrouped(g, x, w, b, out)
		return newTensor(tensor.Shape{g.n, g.m, g.oh, g.ow}, out)
	}
	if winogradOK(g) && winoForward(g.n, g.c, g.m, g.h, g.w, x, w, b, out) {
		return newTensor(tensor.Shape{g.n, g.m, g.oh, g.ow}, out)
	}
	if batchedPlanes(g) {
		convForwardBatched(g, sc, x, w, b, out)
		return newTensor(tensor.Shape{g.n, g.m, g.oh, g.ow}, out)
	}
	if p, ok := padWide[T](g); ok {
		convForwardPadded(g, &p, sc, x, w, bt, out)
		return newTensor(tensor.Shape{g.n, g.m, g.oh, g.ow}, out)
	}
	mul, release := packedFor(g.n, false, g.mg, g.colRows, w, g.colRows) // group 0's filters
	defer release()
	cols := forwardCols(g, sc, x)
	if cols != nil {
		defer sc.cache.mu.Unlock()
	}
	colSize := g.colRows * g.colCols
	band := g.fwdBandRows()
	if cols != nil {
		band = g.oh
	}
	var offs []int // wide rows (wideForward)
	if cols == nil && wideForward(g) {
		offs = g.tapOffsets()
	}
	parallelProducts(g.n, g.sampleWork(), func(_, lo, hi int) {
		var col, wide []T
		switch {
		case offs != nil:
			buf := getScratch[T](&colScratch, (g.colRows+g.mg)*g.wideLd())
			defer colScratch.pool.Put(buf)
			col, wide = wideBufs(g, *buf)
		case !g.direct && cols == nil:
			buf := getScratch[T](&colScratch, g.colRows*band*g.ow)
			defer colScratch.pool.Put(buf)
			col = *buf
		}
		for n := lo; n < hi; n++ {
			for gi := 0; gi < g.g; gi++ {
				xg := x[(n*g.c+gi*g.cg)*g.inPlane:][:g.cg*g.inPlane]
				og := out[(n*g.m+gi*g.mg)*g.outPlane:][:g.mg*g.outPlane]
				wg := w[gi*g.mg*g.colRows:][:g.mg*g.colRows]
				if g.direct {
					mul(false, false, g.mg, g.colCols, g.colRows, wg, g.colRows, xg, g.colCols, 0, og, g.colCols)
					continue
				}
				if offs != nil {
					// The input to its end: room for the wide rows' last
					// partial panel of columns read in place (SgemmRows).
					var bg []T // the group's biases, added as the rows are cropped
					if b != nil && useWideBias {
						bg = b[gi*g.mg : (gi+1)*g.mg]
					}
					convWide(g, mul, offs, x[(n*g.c+gi*g.cg)*g.inPlane:], wg, bg, og, col, wide)
					continue
				}
				if cols != nil {
					c := cols[(n*g.g+gi)*colSize:][:colSize]
					im2col(g, xg, c)
					mul(false, false, g.mg, g.colCols, g.colRows, wg, g.colRows, c, g.colCols, 0, og, g.colCols)
					continue
				}
				for r0 := 0; r0 < g.oh; r0 += band {
					r1 := min(g.oh, r0+band)
					bc := (r1 - r0) * g.ow
					c := col[:g.colRows*bc]
					im2colRows(g, xg, c, r0, r1)
					mul(false, false, g.mg, bc, g.colRows, wg, g.colRows, c, bc, 0, og[r0*g.ow:], g.colCols)
				}
			}
			if b != nil && (offs == nil || !useWideBias) { // else convWide added them
				for m := 0; m < g.m; m++ {
					o := out[(n*g.m+m)*g.outPlane:][:g.outPlane]
					for i := range o {
						o[i] += b[m]
					}
				}
			}
		}
	})
	if cols != nil {
		sc.cache.valid = true
	}
	return newTensor(tensor.Shape{g.n, g.m, g.oh, g.ow}, out)
}

// convGradX writes the input gradient into dx (n·c·H·W, any contents):
// the input gradient as a forward convolution, a 1×1 convolution's
// product (batched or not) and the wide rows (convWideGradX) write every
// element; the other paths add into dx, zeroed first.
func convGradX[T float](g *convGeom, sc *scratch, wt, gyt tensor.Tensor, dx []T) tensor.Tensor {
	w, gy := data[T](wt), data[T](gyt)
	if depthwiseOK(g) {
		convGradXDepthwise(g, w, gy, dx)
		return newTensor(tensor.Shape{g.n, g.c, g.h, g.w}, dx)
	}
	if groupedOK(g) {
		convGradXGrouped(g, w, gy, dx)
		return newTensor(tensor.Shape{g.n, g.c, g.h, g.w}, dx)
	}
	if winogradOK(g) && winoGradX(g, w, gy, dx) {
		return newTensor(tensor.Shape{g.n, g.c, g.h, g.w}, dx)
	}
	if batchedPlanes(g) {
		if !g.direct { // a direct product's planes are copied whole (convGradXBatched)
			ClearPar(dx)
		}
		return convGradXBatched(g, w, gy, dx)
	}
	if p, ok := padWide[T](g); ok { // the crop writes every element of dx
		convGradXPadded(g, &p, sc, w, gy, dx)
		return newTensor(tensor.Shape{g.n, g.c, g.h, g.w}, dx)
	}
	mul, release := packedFor(g.n, true, g.colRows, g.mg, w, g.colRows) // group 0's filters, transposed
	defer release()
	band := g.bandRows()
	finite := allFinite(w)
	var offs []int // wide rows (wideForward; finite weights: see convWideGradX)
	if wideForward(g) && finite {
		offs = g.tapOffsets()
	}
	if offs == nil && finite && convGradXAsForward(g, w, gy, dx) {
		return newTensor(tensor.Shape{g.n, g.c, g.h, g.w}, dx)
	}
	if !g.direct && offs == nil { // a direct product writes dx whole, the wide rows set each plane (convWideGradX)
		ClearPar(dx)
	}
	parallelProducts(g.n, g.sampleWork(), func(_, lo, hi int) {
		var col, pad []T
		switch {
		case offs != nil:
			buf := getScratch[T](&colScratch, (g.colRows+g.mg)*g.wideLd())
			defer colScratch.pool.Put(buf)
			col, pad = wideBufs(g, *buf)
		case !g.direct:
			buf := getScratch[T](&colScratch, g.colRows*band*g.ow)
			defer colScratch.pool.Put(buf)
			col = *buf
		}
		for n := lo; n < hi; n++ {
			for gi := 0; gi < g.g; gi++ {
				wg := w[gi*g.mg*g.colRows:][:g.mg*g.colRows]
				gyg := gy[(n*g.m+gi*g.mg)*g.outPlane:][:g.mg*g.outPlane]
				dxg := dx[(n*g.c+gi*g.cg)*g.inPlane:][:g.cg*g.inPlane]
				if g.direct {
					mul(true, false, g.colRows, g.colCols, g.mg, wg, g.colRows, gyg, g.colCols, 0, dxg, g.colCols)
					continue
				}
				if offs != nil {
					convWideGradX(g, mul, offs, wg, gyg, dxg, col, pad, n == lo && gi == 0)
					continue
				}
				for r0 := 0; r0 < g.oh; r0 += band {
					r1 := min(g.oh, r0+band)
					bc := (r1 - r0) * g.ow
					c := col[:g.colRows*bc]
					mul(true, false, g.colRows, bc, g.mg, wg, g.colRows, gyg[r0*g.ow:], g.colCols, 0, c, bc)
					col2imRows(g, c, dxg, r0, r1)
				}
			}
		}
	})
	return newTensor(tensor.Shape{g.n, g.c, g.h, g.w}, dx)
}

// useGradXAsForward enables convGradXAsForward; tests turn it off to compare
// against the col2im path.
var useGradXAsForward = true

// convGradXAsForward writes the input gradient of g (stride 1, dilation
// 1, one group, pads below the kernel's size) into dx as the forward
// convolution of gy with the transposed, flipped filters
// w'[c, m, a, b] = w[m, c, kH−1−a, kW−1−b] and pads kH−1−pad: the same
// products, but im2col of gy and one product per band instead of a
// product into a band and col2im's scattered additions. With filters of
// at most bandCacheElems (the forward pass's 1 MB bands), MTAN's 64- and
// 128-channel layers of large planes ran at 195–215 GFLOP/s, against
// 125–200 through col2im; with larger filters (256 and 512 channels) it
// was 5–17% slower than col2im (BenchmarkConvLargePlanes), and it reports
// false, doing nothing, for them and for other geometries. The
// weights must be finite: the forward convolution multiplies them by the
// zeros padding gy, where an infinite weight would give NaN for a product
// the gradient does not have.
func convGradXAsForward[T float](g *convGeom, w, gy, dx []T) bool {
	if !useGradXAsForward || !g.smallFilters() || g.direct || g.g != 1 || g.y.s != 1 || g.x.s != 1 || g.y.d != 1 || g.x.d != 1 ||
		g.y.pb >= g.kh || g.y.pe >= g.kh || g.x.pb >= g.kw || g.x.pe >= g.kw {
		return false
	}
	t, err := newConvGeom(tensor.Shape{g.n, g.m, g.oh, g.ow}, tensor.Shape{g.c, g.m, g.kh, g.kw},
		ConvParams{Pads: []int{g.kh - 1 - g.y.pb, g.kw - 1 - g.x.pb, g.kh - 1 - g.y.pe, g.kw - 1 - g.x.pe}})
	if err != nil || t.oh != g.h || t.ow != g.w {
		return false
	}
	buf := getScratch[T](&colScratch, len(w))
	defer colScratch.pool.Put(buf)
	flipTranspose(w, *buf, g.m, g.c, g.kh*g.kw)
	convForward(&t, nil, newTensor(tensor.Shape{g.n, g.m, g.oh, g.ow}, gy), newTensor(tensor.Shape{g.c, g.m, g.kh, g.kw}, *buf), nil, dx)
	return true
}

// flipTranspose writes w' [c][m][k] = w[m][c][k−1−i] for filters w
// [m][c][k], in 16×16 tiles of (m, c) so that reads and writes both run
// along rows, on all cores.
func flipTranspose[T float](w, wt []T, m, c, k int) {
	const tile = 16 // 16×16 blocks of (m, c): a block's rows of both w and wt stay in L1
	parallelWork((c+tile-1)/tile, tile*m*k, func(_, lo, hi int) {
		for c0 := lo * tile; c0 < min(hi*tile, c); c0 += tile {
			for m0 := 0; m0 < m; m0 += tile {
				for ci := c0; ci < min(c0+tile, c); ci++ {
					for mi := m0; mi < min(m0+tile, m); mi++ {
						src := w[(mi*c+ci)*k:][:k]
						dst := wt[(ci*m+mi)*k:][:k]
						for i, v := range src {
							dst[k-1-i] = v
						}
					}
				}
			}
		}
	})
}

// convGradW returns the weight gradient in a fresh tensor.
func convGradW[T float](g convGeom, sc *scratch, xt, gyt tensor.Tensor) tensor.Tensor {
	return convGradWInto(&g, sc, xt, gyt, make([]T, g.m*g.colRows))
}

// convGradWInto writes the weight gradient into dw (zeroed, m·cg·kH·kW).
func convGradWInto[T float](g *convGeom, sc *scratch, xt, gyt tensor.Tensor, dw []T) tensor.Tensor {
	x, gy := data[T](xt), data[T](gyt)
	if depthwiseOK(g) {
		convGradWDepthwise(g, x, gy, dw)
		return newTensor(tensor.Shape{g.m, g.cg, g.kh, g.kw}, dw)
	}
	if groupedOK(g) {
		convGradWGrouped(g, x, gy, dw)
		return newTensor(tensor.Shape{g.m, g.cg, g.kh, g.kw}, dw)
	}
	if winogradGradWOK(g) {
		if winoGradW(g, x, gy, dw) {
			return newTensor(tensor.Shape{g.m, g.cg, g.kh, g.kw}, dw)
		}
		clear(dw)
	}
	if batchedPlanes(g) {
		return convGradWBatched(g, sc, x, gy, dw, 1)
	}
	if p, ok := padWide[T](g); ok && wideRows[T](&p) {
		convGradWPadded(g, &p, sc, x, gy, dw)
		return newTensor(tensor.Shape{g.m, g.cg, g.kh, g.kw}, dw)
	}
	size := g.m * g.colRows
	nw := workers(g.n)
	acc := make([]*[]T, nw)
	mul := gemmFor[T](g.n)
	cols, release := cachedCols(g, sc, x)
	if release != nil {
		defer release()
	}
	colSize := g.colRows * g.colCols
	band := g.gradWBandRows()
	if cacheSize[T](g) > 0 {
		// An op that caches its matrices sums each sample's pixels in one
		// product, as with the cache: whether the cache is there (another
		// task's pass holding it, the total limit reached) then does not
		// change the bits of dW.
		band = g.oh
	}
	var offs []int // the taps' wide rows, when used (see tapOffsets)
	if cols == nil && wideRows[T](g) && allFinite(x) {
		offs = g.tapOffsets()
	}
	swap := g.g == 1 && g.mg <= dwSwapMaxM && offs == nil // the wide rows' dot products have no product to swap
	// Chunk numbers wk are below chunkCount ≤ nw: acc has a slot for each.
	parallelProducts(g.n, g.sampleWork(), func(wk, lo, hi int) {
		d := dw
		if wk > 0 {
			acc[wk] = getScratch[T](&colScratch, size)
			d = *acc[wk]
			clear(d)
		}
		// With few filters, the product runs as dWᵀ = col·gyᵀ into t
		// (colRows × mg), added transposed into d at the end.
		var t []T
		if swap {
			tb := getScratch[T](&colScratch, size)
			defer colScratch.pool.Put(tb)
			t = (*tb)[:size]
			clear(t)
			defer addTransposed(d, t, g.mg, g.colRows)
		}
		if offs != nil && useWideSegments && gradWSegments(g, x, gy, d, offs, lo, hi) {
			return // gy's rows against each tap's rows of the input, in place, no scratch
		}
		// prod adds gy·colᵀ over k pixels (gy's rows ldy apart, col's ldc)
		// into the group's dW.
		prod := func(k int, gyb []T, ldy int, cb []T, ldc int, dwg []T) {
			if swap {
				mul(false, true, g.colRows, g.mg, k, cb, ldc, gyb, ldy, 1, t, g.mg)
				return
			}
			mul(false, true, g.mg, g.colRows, k, gyb, ldy, cb, ldc, 1, dwg, g.colRows)
		}
		var col []T
		switch {
		case offs != nil:
			buf := getScratch[T](&colScratch, g.mg*g.wideLen())
			defer colScratch.pool.Put(buf)
			col = *buf
		case !g.direct && cols == nil:
			buf := getScratch[T](&colScratch, g.colRows*band*g.ow)
			defer colScratch.pool.Put(buf)
			col = *buf
		}
		for n := lo; n < hi; n++ {
			for gi := 0; gi < g.g; gi++ {
				xg := x[(n*g.c+gi*g.cg)*g.inPlane:][:g.cg*g.inPlane]
				gyg := gy[(n*g.m+gi*g.mg)*g.outPlane:][:g.mg*g.outPlane]
				dwg := d[gi*g.mg*g.colRows:][:g.mg*g.colRows]
				switch {
				case g.direct:
					prod(g.colCols, gyg, g.colCols, xg, g.colCols, dwg)
				case cols != nil:
					c := cols[(n*g.g+gi)*colSize:][:colSize]
					prod(g.colCols, gyg, g.colCols, c, g.colCols, dwg)
				case offs != nil:
					l := g.wideLen()
					padRows(g, gyg, col, l, n == lo && gi == 0)
					if !fgemm.SdotRows(g.mg, g.colRows, l, any(col).([]float32), l, any(xg).([]float32), offs, any(dwg).([]float32), g.colRows) {
						panic("ops: Conv weight gradient: no dot kernel") // offs is nil then
					}
				default:
					for r0 := 0; r0 < g.oh; r0 += band {
						r1 := min(g.oh, r0+band)
						bc := (r1 - r0) * g.ow
						c := col[:g.colRows*bc]
						im2colRows(g, xg, c, r0, r1)
						prod(bc, gyg[r0*g.ow:], g.colCols, c, bc, dwg)
					}
				}
			}
		}
	})
	for _, a := range acc[1:] {
		if a == nil {
			continue
		}
		for i, v := range *a {
			dw[i] += v
		}
		colScratch.pool.Put(a)
	}
	return newTensor(tensor.Shape{g.m, g.cg, g.kh, g.kw}, dw)
}

// dwSwapMaxM is the most filters (per group, one group) for which the
// weight gradient's product runs as dWᵀ = col·gyᵀ: with few rows of gy,
// packing col as the A operand (rows of six) and gy as B beat the
// transposing pack of col as B: 64×576 over 6,144–6,912 pixels 112–127 →
// 130–136 GFLOP/s on one core, 128×576×6144 139–142 → 150; from 256
// filters on no gain, and the transposed sum of a large dW costs.
var dwSwapMaxM = 128

// addTransposed adds tᵀ (t: r × m) into d (m × r).
func addTransposed[T float](d, t []T, m, r int) {
	for i := 0; i < m; i++ {
		row := d[i*r : (i+1)*r]
		for j := range row {
			row[j] += t[j*m+i]
		}
	}
}

// useWideFwd enables the forward pass's wide rows (wideForward); tests turn
// it off to compare with the im2col product.
var useWideFwd = true

// wideForward reports whether g's forward pass multiplies wide rows
// (tapOffsets) instead of an im2col matrix: stride 1 without padding, the
// whole plane's wide rows within colBandElems, and at most 3/8 more
// columns than the output has (LeNet's 9×9 on 36×36: 1,000 against 784;
// its 5×5 on 14×14: 136 against 100). One copy of L values per tap
// replaces oH copies of oW values (LeNet's first layer: 81 against 2,268
// per sample).
func wideForward(g *convGeom) bool {
	l := g.wideLen()
	return useWideFwd && g.unitUnpadded() && (g.colRows+g.mg)*g.wideLd() <= colBandElems && 8*l <= 11*g.outPlane
}

// wideBufs splits a buffer of (colRows+mg)·wideLd values into the wide
// rows' matrix (colRows rows) and the filters' one (mg rows).
func wideBufs[T float](g *convGeom, buf []T) (col, out []T) {
	n := g.colRows * g.wideLd()
	return buf[:n], buf[n:]
}

// wideLd is the row stride of the wide-row matrices of the forward pass
// and the input gradient: wideLen rounded up to 16 values, so that every
// row starts on a 64-byte line (the GEMM reads their panels in place; at
// MTAN's 64×96, rows of 6,270 values straddling lines ran the forward
// product at 50 against 65 GFLOP/s on one core).
func (g *convGeom) wideLd() int { return (g.wideLen() + 15) &^ 15 }

// convWide is one group of one sample of wideForward: col (colRows × L,
// rows wideLd apart) takes each tap's wide row of xg (the group's input
// planes, and any values after them), or the product reads those rows in
// place (wideInPlace), wide (mg × L) the product W·col, and og the output
// columns of wide (t = oi·W + oj with oj < oW), plus the group's biases
// bg when not nil. Each output is the sum the im2col
// product forms, over the same taps in the same order (and then its bias).
func convWide[T float](g *convGeom, mul func(tA, tB bool, m, n, k int, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int), offs []int, xg, wg, bg, og, col, wide []T) {
	l, ld := g.wideLen(), g.wideLd()
	if !wideInPlace[T](g) || !fgemm.SgemmRows(g.mg, l, g.colRows, any(wg).([]float32), g.colRows, any(xg).([]float32), offs, any(wide).([]float32), ld) {
		for r, off := range offs {
			copy(col[r*ld:r*ld+l], xg[off:off+l])
		}
		mul(false, false, g.mg, l, g.colRows, wg, g.colRows, col, ld, 0, wide, ld)
	}
	for m := 0; m < g.mg; m++ {
		if bg != nil {
			addBiasRows(og[m*g.outPlane:][:g.outPlane], wide[m*ld:], g.w, g.ow, bg[m])
			continue
		}
		for oi := 0; oi < g.oh; oi++ {
			copy(og[m*g.outPlane+oi*g.ow:][:g.ow], wide[m*ld+oi*g.w:][:g.ow])
		}
	}
}

// useWideBias enables adding the biases as convWide crops its rows, instead
// of in a pass of its own over the outputs; tests turn it off to compare.
var useWideBias = true

// addBiasRows sets o's rows of ow values to the rows of src (lds apart)
// plus b: the crop of one filter's wide rows and its bias in one pass,
// each output src + b as the bias pass after a product gives it (float32
// through vmath.AffineRelu32 with factor 1: 1·v is v).
func addBiasRows[T float](o, src []T, lds, ow int, b T) {
	if o32, ok := any(o).([]float32); ok {
		s32, b32 := any(src).([]float32), any(b).(float32)
		for r := 0; r*ow < len(o32); r++ {
			vmath.AffineRelu32(o32[r*ow:(r+1)*ow], s32[r*lds:], 1, b32, false)
		}
		return
	}
	for r := 0; r*ow < len(o); r++ {
		for j, v := range src[r*lds : r*lds+ow] {
			o[r*ow+j] = v + b
		}
	}
}

// useWideInPlace enables the forward wide rows' product reading each tap's
// row in place in the input (fgemm.SgemmRows) instead of from a copy in
// col; tests turn it off to compare.
var useWideInPlace = true

// wideInPlace reports whether convWide multiplies the tap rows in place:
// float32, and the product not split among the threads (parallelProduct:
// each worker then runs whole samples on the calling goroutine). The
// results are the same bits as the product over the copied rows.
func wideInPlace[T float](g *convGeom) bool {
	var z T
	_, f32 := any(z).(float32)
	return f32 && useWideInPlace && !parallelProduct(g.n)
}

// convWideGradX is one group of one sample of the input gradient of a
// wideForward convolution: pad (mg × L, rows wideLd apart) takes gy spread
// to rows of width W (padRows), col = Wᵀ·pad (colRows × L, rows wideLd
// apart), and each tap's row of col is added
// to dxg at the tap's offset: one addition of L values per tap instead of
// oH of oW. Each input gets its taps' terms in the order col2im adds them;
// the spread's zero columns add Wᵀ·0 = 0 (the weights are finite).
// dxg may hold anything: a channel's first tap (ki = kj = 0, at the
// plane's start) sets the plane's first L values to 0 + its row (setSum:
// the bits of adding it into zeros) and clears the rest, which no clear of
// the whole of dx before the taps needs.
// gaps says whether pad is new to the caller's loop (padRows).
func convWideGradX[T float](g *convGeom, mul func(tA, tB bool, m, n, k int, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int), offs []int, wg, gyg, dxg, col, pad []T, gaps bool) {
	l, ld := g.wideLen(), g.wideLd()
	padRows(g, gyg, pad, ld, gaps)
	mul(true, false, g.colRows, l, g.mg, wg, g.colRows, pad, ld, 0, col, ld)
	taps := g.kh * g.kw
	for r, off := range offs {
		if r%taps == 0 { // tap (c, 0, 0): offset c·H·W (tapOffsets)
			setSum(dxg[off:off+l], col[r*ld:r*ld+l])
			clear(dxg[off+l : off+g.inPlane])
			continue
		}
		addTo(dxg[off:off+l], col[r*ld:r*ld+l])
	}
}

// setSum sets dst to 0 + src, the bits addTo gives into a zeroed dst (a
// −0 becomes +0): float32 through vmath.PlusZero32.
func setSum[T float](dst, src []T) {
	if d32, ok := any(dst).([]float32); ok {
		vmath.PlusZero32(d32, any(src).([]float32))
		return
	}
	for i, v := range src[:len(dst)] {
		dst[i] = 0 + v
	}
}

// gradWSegments adds samples [lo, hi) of g's weight gradient into d as
// segmented dot products (fgemm.SdotRowsSeg): gy's rows against each
// tap's rows of the input, offs[j] values into a sample's group, both in
// place, segItems samples a product. It reports false, doing nothing, for
// float64 or when the CPU has no segmented dot kernel.
func gradWSegments[T float](g *convGeom, x, gy, d []T, offs []int, lo, hi int) bool {
	x32, ok := any(x).([]float32)
	if !ok {
		return false
	}
	gy32, d32 := any(gy).([]float32), any(d).([]float32)
	per := segItems(g)
	for n := lo; n < hi; n += per {
		items := min(per, hi-n)
		for gi := 0; gi < g.g; gi++ {
			if !fgemm.SdotRowsSeg(g.mg, g.colRows, g.sampleSegs(g.ow, g.oh, items), gy32[(n*g.m+gi*g.mg)*g.outPlane:], g.outPlane,
				x32[(n*g.c+gi*g.cg)*g.inPlane:], offs, d32[gi*g.mg*g.colRows:], g.colRows) {
				return false // the same answer for every call: the kernel is the CPU's
			}
		}
	}
	return true
}

// sampleSegs is the layout (fgemm.Segs) of a weight-gradient product over
// items samples, each of nseg rows of k outputs: gy's rows ow values
// apart, the input's w, samples g.m planes of gy and g.c of the input
// apart.
func (g *convGeom) sampleSegs(k, nseg, items int) fgemm.Segs {
	return fgemm.Segs{K: k, N: nseg, Items: items, SA: g.ow, SB: g.w, IA: g.m * g.outPlane, IB: g.c * g.inPlane}
}

// segItemBytes bounds the data one block of a segmented weight-gradient
// product reads over its samples (segItems).
const segItemBytes = 24 << 10

// segItems is how many samples one segmented weight-gradient product
// (fgemm.SdotRowsSeg) sums: the kernel reduces its lanes once per block of
// 3 filters × 4 taps, so that on small planes (LeNet's second layer: 10
// rows of 10) summing one sample a call spends much of the block on its
// reduction; but a block's rows of gy, read again for every block of taps,
// and the four taps' planes of the input should stay in L1 (32–48 KB a
// core on current x86), hence at most segItemBytes of those a product.
func segItems(g *convGeom) int {
	return max(1, segItemBytes/((3*g.outPlane+4*g.inPlane)*4))
}

// useWideSegments enables the weight gradient's wide rows as segmented dot
// products (fgemm.SdotRowsSeg: each tap's oH rows of oW inputs against
// gy's rows, both in place) instead of dot products of whole wide rows
// against gy spread to rows of width W (padRows); tests turn it off to
// compare.
var useWideSegments = true

// useWideGradW enables the weight gradient's wide rows (tapOffsets, see
// wideRows); tests turn it off to compare with the banded im2col.
var useWideGradW = true

// wideMaxPlanes bounds, in values, one group's input planes that the
// wide rows' dot products read again for every three filters: they
// should stay in L2 (as gemm's dotMaxB).
const wideMaxPlanes = 1 << 18

// wideRows reports whether the weight gradient of g reads wide rows
// (tapOffsets) instead of im2col matrices, which the forward pass then
// does not cache: float32 with a dot kernel, stride 1, no padding, one
// group's input planes within wideMaxPlanes and its spread output
// gradient (padRows) within colBandElems.
func wideRows[T float](g *convGeom) bool {
	var z T
	_, f32 := any(z).(float32)
	return f32 && useWideGradW && fgemm.Accelerated() && g.unitUnpadded() &&
		g.cg*g.inPlane <= wideMaxPlanes && g.mg*g.wideLen() <= colBandElems
}

// unitUnpadded reports whether g has stride 1, no padding and is not
// direct: what tapOffsets needs.
func (g *convGeom) unitUnpadded() bool {
	return !g.direct && g.y.s == 1 && g.x.s == 1 && g.y.pb == 0 && g.x.pb == 0 && g.y.pe == 0 && g.x.pe == 0
}

// sampleWork is the multiply-adds of one sample's product in any of the
// three passes, m·(cg·kH·kW)·oH·oW: the per-item work parallelProducts
// splits a loop over samples by.
func (g *convGeom) sampleWork() int { return g.m * g.colRows * g.outPlane }

// wideLen is L = (oH−1)·W + oW, the length of g's wide rows.
func (g *convGeom) wideLen() int { return (g.oh-1)*g.w + g.ow }

// tapOffsets returns, for a convolution of stride 1 without padding, the
// offset in one group's input planes of each tap's wide row, nil for
// other g (and a direct one). With t = oi·W + oj, output (oi, oj) reads
// tap (c, ki, kj) at c·H·W + ki·dH·W + kj·dW + t, so the tap's im2col row
// is the contiguous wide row of wideLen values from that offset, read at
// the t with t mod W < oW. The weight gradient Σ_t gy[m, t]·row[t] is
// then one dot product per (filter, tap) over the input planes in place,
// with gy spread to width W and zeros at the other t (padRows): no
// im2col copies, which dominate LeNet's first layer (81 taps × 28 rows
// of 28 values per sample).
func (g *convGeom) tapOffsets() []int {
	if !g.unitUnpadded() {
		return nil
	}
	offs := make([]int, 0, g.colRows)
	for c := 0; c < g.cg; c++ {
		for ki := 0; ki < g.kh; ki++ {
			for kj := 0; kj < g.kw; kj++ {
				offs = append(offs, c*g.inPlane+ki*g.y.d*g.w+kj*g.x.d)
			}
		}
	}
	return offs
}

// padRows spreads one group's output gradient gy (mg × oH·oW) to rows of
// width W in pad (mg rows l apart, l ≥ wideLen): gy[m, oi, oj] at
// oi·W + oj, zero elsewhere, so that the wide rows' extra values (finite:
// allFinite) add exact zeros. The zeros lie at the same places for every
// sample and group, so a caller that spreads one after another into the
// same pad clears them with its first (gaps) only: of the spread's copies
// and clears (LeNet's 5×5 over 14×14: ten of each per filter), half go.
func padRows[T float](g *convGeom, gy, pad []T, l int, gaps bool) {
	for m := 0; m < g.mg; m++ {
		row := pad[m*l:][:g.wideLen()]
		src := gy[m*g.outPlane : (m+1)*g.outPlane]
		for oi := 0; oi < g.oh; oi++ {
			copy(row[oi*g.w:oi*g.w+g.ow], src[oi*g.ow:(oi+1)*g.ow])
			if gaps && oi+1 < g.oh {
				clear(row[oi*g.w+g.ow : (oi+1)*g.w])
			}
		}
	}
}

// allFinite reports whether x holds no NaN or infinity (a wide row's
// extra values times zero would otherwise add NaN). v−v is 0 for a finite
// v and NaN otherwise; four running sums of it, checked at the end, keep
// the loop free of branches.
func allFinite[T float](x []T) bool {
	var s0, s1, s2, s3 T
	i := 0
	for ; i+4 <= len(x); i += 4 {
		v := x[i : i+4 : i+4]
		s0 += v[0] - v[0]
		s1 += v[1] - v[1]
		s2 += v[2] - v[2]
		s3 += v[3] - v[3]
	}
	for ; i < len(x); i++ {
		s0 += x[i] - x[i]
	}
	return s0+s1+s2+s3 == 0
}

// gemmFor picks the matrix product for a convolution over n samples:
// the parallel gemm (backend/internal/gemm's SgemmParallel, gonum's Dgemm)
// when there are fewer samples than threads (the product is then the only
// parallelism), gemmSerial inside the parallelFor workers otherwise.
func gemmFor[T float](n int) func(tA, tB bool, m, n, k int, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	if parallelProduct(n) {
		return gemm[T]
	}
	return gemmSerial[T]
}

// parallelProduct reports whether a convolution over n samples splits
// each product among the threads (gemmFor's choice).
func parallelProduct(n int) bool { return splitsProducts(runtime.GOMAXPROCS(0), n) }

// splitsProducts reports whether a convolution over n samples on w
// workers splits each product among them: when the samples do not share
// out evenly (fewer samples than workers, or a remainder: 4 samples on 3
// workers run as chunks of 2 and 2, leaving one worker idle), the
// products' blocks keep every worker busy; otherwise each worker runs
// whole samples, their products unsplit.
func splitsProducts(w, n int) bool { return w > 1 && (n < w || n%w != 0) }

// channelSum sums a [N, C, ...] tensor over every axis but C, into buf as
// outBuf gives it. Channels are split among goroutines (parallelWork's
// chunks of at least minChunkWork values); each channel is summed in the
// same order whatever the split.
func channelSum[T float](t tensor.Tensor, buf any) tensor.Tensor {
	s := t.Shape()
	d := data[T](t)
	n, c := s[0], s[1]
	inner := 1
	for _, v := range s[2:] {
		inner *= v
	}
	out := outBuf[T](buf, c)
	// A channel: n·inner additions. Each worker sums whole channels, so
	// the split never has more chunks than channels whatever the core count.
	if oneChunk(c, n*inner) { // no closure (oneChunk)
		channelSums(d, out, n, c, inner, 0, c)
	} else {
		parallelWork(c, n*inner, func(_, lo, hi int) { channelSums(d, out, n, c, inner, lo, hi) })
	}
	return newTensor(tensor.Shape{c}, out)
}

// channelSums adds channels [lo, hi) of d [n, c, inner] into out.
func channelSums[T float](d, out []T, n, c, inner, lo, hi int) {
	for i := 0; i < n; i++ {
		for j := lo; j < hi; j++ {
			out[j] += sum4(d[(i*c+j)*inner:][:inner])
		}
	}
}

// sum4 is the sum of x with four partial sums (x[i] into partial i mod 4,
// added as (s0+s1)+(s2+s3), then the tail in order): four chains of
// additions instead of one.
func sum4[T float](x []T) T {
	var s0, s1, s2, s3 T
	i := 0
	for ; i+4 <= len(x); i += 4 {
		v := x[i : i+4 : i+4]
		s0 += v[0]
		s1 += v[1]
		s2 += v[2]
		s3 += v[3]
	}
	s := (s0 + s1) + (s2 + s3)
	for ; i < len(x); i++ {
		s += x[i]
	}
	return s
}
