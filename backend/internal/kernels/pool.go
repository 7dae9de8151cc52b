package kernels

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/chewxy/hm"

	"github.com/paretonav/paretonav/backend/internal/vmath"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// PoolParams are the attributes of ONNX MaxPool, AveragePool and MaxUnpool.
type PoolParams struct {
	// Kernel is kernel_shape, one value per spatial axis (required).
	Kernel []int
	// Strides per spatial axis; nil means all 1.
	Strides []int
	// Pads are [begin..., end...] per spatial axis ([top, left, bottom,
	// right] in 2-D); nil means none. Ignored unless AutoPad is "" or NOTSET.
	Pads []int
	// Dilations per spatial axis; nil means all 1.
	Dilations []int
	// CeilMode rounds the output size up (ONNX ceil_mode = 1). A last window
	// that would start inside the end padding is dropped.
	CeilMode bool
	// AutoPad is ONNX's auto_pad: "", NOTSET, SAME_UPPER, SAME_LOWER or VALID.
	AutoPad string
	// CountIncludePad makes AveragePool divide by the number of window taps
	// inside the padded input rather than inside the input.
	CountIncludePad bool
}

// poolGeom is the resolved geometry of 2-D pooling.
type poolGeom struct {
	n, c, h, w int
	y, x       window
	oh, ow     int
}

func (g poolGeom) String() string {
	return fmt.Sprintf("x[%d,%d,%d,%d] k(%d,%d) s(%d,%d) d(%d,%d) pads(%d,%d,%d,%d)", g.n, g.c, g.h, g.w,
		g.y.k, g.x.k, g.y.s, g.x.s, g.y.d, g.x.d, g.y.pb, g.x.pb, g.y.pe, g.x.pe)
}

func newPoolGeom(xs tensor.Shape, p PoolParams) (poolGeom, error) {
	var g poolGeom
	g.n, g.c, g.h, g.w = xs[0], xs[1], xs[2], xs[3]
	a, err := fillSpatial(2, p.Kernel, p.Strides, p.Dilations, p.Pads)
	if err != nil {
		return g, err
	}
	if g.y, err = resolveWindow(g.h, a.kernel[0], a.strides[0], a.dilations[0], a.pads[0], a.pads[2], p.AutoPad, p.CeilMode); err != nil {
		return g, fmt.Errorf("height: %w", err)
	}
	if g.x, err = resolveWindow(g.w, a.kernel[1], a.strides[1], a.dilations[1], a.pads[1], a.pads[3], p.AutoPad, p.CeilMode); err != nil {
		return g, fmt.Errorf("width: %w", err)
	}
	if g.y.pb >= (g.y.k-1)*g.y.d+1 || g.x.pb >= (g.x.k-1)*g.x.d+1 || g.y.pe >= (g.y.k-1)*g.y.d+1 || g.x.pe >= (g.x.k-1)*g.x.d+1 {
		return g, fmt.Errorf("pads (%d,%d,%d,%d) must be smaller than the kernel extent", g.y.pb, g.x.pb, g.y.pe, g.x.pe)
	}
	g.oh, g.ow = g.y.out, g.x.out
	return g, nil
}

// to4D lifts 3-D NCL pooling to 4-D NC1L: it reshapes x and rewrites p.
func to4D(op string, x *gorgonia.Node, p PoolParams) (*gorgonia.Node, PoolParams, error) {
	s := x.Shape()
	q := p
	if len(p.Kernel) != 1 {
		return nil, p, fmt.Errorf("ops: %s: kernel %v: expected 1 value for a 3-D input", op, p.Kernel)
	}
	q.Kernel = []int{1, p.Kernel[0]}
	lift := func(v []int, name string) ([]int, error) {
		switch len(v) {
		case 0:
			return nil, nil
		case 1:
			return []int{1, v[0]}, nil
		}
		return nil, fmt.Errorf("ops: %s: %s %v: expected 1 value for a 3-D input", op, name, v)
	}
	var err error
	if q.Strides, err = lift(p.Strides, "strides"); err != nil {
		return nil, p, err
	}
	if q.Dilations, err = lift(p.Dilations, "dilations"); err != nil {
		return nil, p, err
	}
	switch len(p.Pads) {
	case 0:
	case 2:
		q.Pads = []int{0, p.Pads[0], 0, p.Pads[1]}
	default:
		return nil, p, fmt.Errorf("ops: %s: pads %v: expected 2 values for a 3-D input", op, p.Pads)
	}
	x4, err := reshape(op, x, tensor.Shape{s[0], s[1], 1, s[2]})
	return x4, q, err
}

// drop3D reshapes a 4-D NC1L result back to NCL.
func drop3D(op string, y *gorgonia.Node) (*gorgonia.Node, error) {
	s := y.Shape()
	return reshape(op, y, tensor.Shape{s[0], s[1], s[3]})
}

// MaxPool builds ONNX MaxPool on x [N,C,H,W] (or [N,C,L]). It returns the
// pooled values and the ONNX Indices output: an int64 tensor, shaped like the
// values, holding for each output the flat row-major index of its maximum in
// x, counted over the whole N×C×H×W tensor (storage_order 0; padding is not
// counted). Ties keep the first maximum in scan order. PyTorch's
// max_pool2d(return_indices=True) counts within each (n, c) plane instead:
// global = plane index + (n·C + c)·H·W. Only the values are differentiable;
// their gradient routes to the arg-max positions.
func MaxPool(x *gorgonia.Node, p PoolParams) (out, indices *gorgonia.Node, err error) {
	const name = "MaxPool"
	if err := checkFloat(name, "input X", x); err != nil {
		return nil, nil, err
	}
	if x.Dims() == 3 {
		x4, q, err := to4D(name, x, p)
		if err != nil {
			return nil, nil, err
		}
		o, i, err := MaxPool(x4, q)
		if err != nil {
			return nil, nil, err
		}
		if o, err = drop3D(name, o); err != nil {
			return nil, nil, err
		}
		if i, err = drop3D(name, i); err != nil {
			return nil, nil, err
		}
		return o, i, nil
	}
	if x.Dims() != 4 {
		return nil, nil, fmt.Errorf("ops: MaxPool: X %v: expected 4-D (NCHW) or 3-D (NCL)", x.Shape())
	}
	g, err := newPoolGeom(x.Shape(), p)
	if err != nil {
		return nil, nil, fmt.Errorf("ops: MaxPool: %w", err)
	}
	iop := &fnOp{
		name:     "MaxPoolIndices{" + g.String() + "}",
		inDims:   []int{4},
		outShape: tensor.Shape{g.n, g.c, g.oh, g.ow},
		outType:  tensor.Int64,
		into: func(buf any, in []tensor.Tensor) (tensor.Tensor, error) {
			idx := intsIn(buf, g.n*g.c*g.oh*g.ow)
			return dispatch(in[0],
				func() (tensor.Tensor, error) { return maxPoolIndices[float32](g, in[0], idx) },
				func() (tensor.Tensor, error) { return maxPoolIndices[float64](g, in[0], idx) })
		},
		grads: []gradSpec{{}},
	}
	iop.fwd = func(in []tensor.Tensor) (tensor.Tensor, error) { return iop.into(nil, in) }
	if indices, err = apply(iop, x); err != nil {
		return nil, nil, err
	}
	if out, err = gather(name, x, indices); err != nil {
		return nil, nil, err
	}
	return out, indices, nil
}

// gather builds out[i] = x.flat[idx[i]] shaped like idx; differentiable in x.
func gather(name string, x, idx *gorgonia.Node) (*gorgonia.Node, error) {
	xs := x.Shape()
	op := &fnOp{
		name:     name + "Gather",
		inDims:   []int{x.Dims(), idx.Dims()},
		inTypes:  []hm.Type{nil, tensor.Int64},
		outShape: idx.Shape(),
		fwd: func(in []tensor.Tensor) (tensor.Tensor, error) {
			return dispatch(in[0],
				func() (tensor.Tensor, error) { return gatherK[float32](in[0], in[1]) },
				func() (tensor.Tensor, error) { return gatherK[float64](in[0], in[1]) })
		},
		into: func(buf any, in []tensor.Tensor) (tensor.Tensor, error) {
			n := in[1].Shape().TotalSize()
			return dispatch(in[0],
				func() (tensor.Tensor, error) { return gatherInto(in[0], in[1], outBufDirty[float32](buf, n)) },
				func() (tensor.Tensor, error) { return gatherInto(in[0], in[1], outBufDirty[float64](buf, n)) })
		},
		grads: []gradSpec{{deps: []int{1, depGrad}, fn: func(in []tensor.Tensor) (tensor.Tensor, error) {
			return scatterPlanesInto(nil, in[1], in[0], xs)
		}, into: func(buf any, in []tensor.Tensor) (tensor.Tensor, error) {
			return scatterPlanesInto(buf, in[1], in[0], xs)
		}}, {}},
	}
	return apply(op, x, idx)
}

// MaxUnpool builds ONNX MaxUnpool: a zero tensor of outputShape (or, when
// nil, the ONNX default (in−1)·stride − pad_begin − pad_end + kernel per
// spatial axis) with x's values written at the flat positions in indices
// (int64, shaped like x, as returned by MaxPool). When indices repeat, the
// last write wins and only that element receives gradient. Differentiable in
// x: its gradient gathers the output gradient at the indices.
func MaxUnpool(x, indices *gorgonia.Node, p PoolParams, outputShape []int) (*gorgonia.Node, error) {
	const name = "MaxUnpool"
	if err := checkFloat(name, "input X", x); err != nil {
		return nil, err
	}
	if indices == nil || indices.Dtype() != tensor.Int64 {
		return nil, fmt.Errorf("ops: MaxUnpool: indices must be an int64 tensor")
	}
	xs := x.Shape()
	if !xs.Eq(indices.Shape()) {
		return nil, fmt.Errorf("ops: MaxUnpool: indices %v: expected the shape of X %v", indices.Shape(), xs)
	}
	var os tensor.Shape
	if outputShape != nil {
		if len(outputShape) != len(xs) {
			return nil, fmt.Errorf("ops: MaxUnpool: output_shape %v: expected %d values", outputShape, len(xs))
		}
		os = tensor.Shape(outputShape).Clone()
	} else {
		ns := len(xs) - 2
		a, err := fillSpatial(ns, p.Kernel, p.Strides, nil, p.Pads)
		if err != nil {
			return nil, fmt.Errorf("ops: MaxUnpool: %w", err)
		}
		os = tensor.Shape{xs[0], xs[1]}
		for i := 0; i < ns; i++ {
			os = append(os, (xs[2+i]-1)*a.strides[i]-a.pads[i]-a.pads[ns+i]+a.kernel[i])
		}
	}
	if os[0] != xs[0] || os[1] != xs[1] {
		return nil, fmt.Errorf("ops: MaxUnpool: output shape %v: expected batch and channels of X %v", os, xs)
	}
	op := &fnOp{
		name:     "MaxUnpool",
		inDims:   []int{len(xs), len(xs)},
		inTypes:  []hm.Type{nil, tensor.Int64},
		outShape: os,
		fwd: func(in []tensor.Tensor) (tensor.Tensor, error) {
			return unpoolInto(nil, in[0], in[1], os)
		},
		into: func(buf any, in []tensor.Tensor) (tensor.Tensor, error) {
			return unpoolInto(buf, in[0], in[1], os)
		},
		grads: []gradSpec{{deps: []int{depGrad, 1}, fn: func(in []tensor.Tensor) (tensor.Tensor, error) {
			return dispatch(in[0],
				func() (tensor.Tensor, error) { return gatherK[float32](in[0], in[1]) },
				func() (tensor.Tensor, error) { return gatherK[float64](in[0], in[1]) })
		}, into: func(buf any, in []tensor.Tensor) (tensor.Tensor, error) {
			n := in[1].Shape().TotalSize()
			return dispatch(in[0],
				func() (tensor.Tensor, error) { return gatherInto(in[0], in[1], outBufDirty[float32](buf, n)) },
				func() (tensor.Tensor, error) { return gatherInto(in[0], in[1], outBufDirty[float64](buf, n)) })
		}}, {}},
	}
	return apply(op, x, indices)
}

// unpoolInto is MaxUnpool's forward pass into buf (any contents; nil or
// of another length: a fresh buffer): x's values written at the indices
// of a zero tensor of shape s, plane by plane in parallel when every
// index points into its own (n, c) plane (MaxPool's do), else serially
// (scatterK). Within a plane the writes run in x's order, so a repeated
// index keeps the last value, as scatterK does.
func unpoolInto(buf any, xt, it tensor.Tensor, s tensor.Shape) (tensor.Tensor, error) {
	n := s.TotalSize()
	return dispatch(xt,
		func() (tensor.Tensor, error) { return unpool(xt, it, s, outBufDirty[float32](buf, n)) },
		func() (tensor.Tensor, error) { return unpool(xt, it, s, outBufDirty[float64](buf, n)) })
}

func unpool[T float](xt, it tensor.Tensor, s tensor.Shape, out []T) (tensor.Tensor, error) {
	if t, err := scatterPlanes(xt, it, s, out, false); t != nil || err != nil {
		return t, err
	}
	clear(out)
	return scatterK(xt, it, s, false, out)
}

// maxPoolIndices writes into idx (n·c·oH·oW, any contents) the flat index
// of the maximum of each window of g over x.
func maxPoolIndices[T float](g poolGeom, xt tensor.Tensor, idx []int64) (tensor.Tensor, error) {
	x := data[T](xt)
	plane, oplane := g.h*g.w, g.oh*g.ow
	var (
		mu  sync.Mutex
		bad error
	)
	fast := g.is2x2()
	parallelWork(g.n*g.c, plane, func(_, lo, hi int) {
		for pc := lo; pc < hi; pc++ {
			xp, ip := x[pc*plane:(pc+1)*plane], idx[pc*oplane:(pc+1)*oplane]
			if fast {
				maxPool2x2(xp, ip, g.w, g.oh, g.ow, pc*plane)
				continue
			}
			if err := maxPoolPlane(g, xp, ip, pc*plane); err != nil {
				mu.Lock()
				bad = err
				mu.Unlock()
			}
		}
	})
	if bad != nil {
		return nil, bad
	}
	return newTensor(tensor.Shape{g.n, g.c, g.oh, g.ow}, idx), nil
}

// maxPoolPlane writes into ip (oh·ow) the flat index, offset by base, of
// the maximum of each window of g over the plane xp: the first maximum in
// scan order, or a NaN (which ends the scan of its window row;
// maxPoolWindow).
//
// Windows that lie inside the plane (all but a border as wide as the
// padding) take the maximum first, then the first tap equal to it, with
// no bounds to check per tap; 3×3 windows (maxPool3x3) unrolled. The scan
// branched on "greater than the best so far", which on real activations
// went either way: ShuffleNet's and ResNet's 3×3 stride-2 stem pooling ran
// at about 4 ns a tap, a tenth of ShuffleNet's step at 64×64
// (BenchmarkMaxPool3x3, one thread: 0.89–0.92 ms against 0.56–0.57 ms now).
// The index is the scan's: the scan replaces its best only by a greater
// value, so it keeps the first tap equal to the maximum (−0 and +0 compare
// equal: the first of them, as the scan keeps). A window whose maximum is
// NaN holds a NaN and takes the scan itself.
func maxPoolPlane[T float](g poolGeom, xp []T, ip []int64, base int) error {
	var bad error
	i0, i1 := insideWindows(g.oh, g.y, g.h)
	j0, j1 := insideWindows(g.ow, g.x, g.w)
	span := (g.x.k-1)*g.x.d + 1 // values of one window row
	is3x3 := g.y.k == 3 && g.x.k == 3 && g.y.d == 1 && g.x.d == 1
	for oi := 0; oi < g.oh; oi++ {
		row := ip[oi*g.ow:][:g.ow]
		lo, hi := 0, 0 // this row's windows inside the plane
		if oi >= i0 && oi < i1 {
			lo, hi = j0, j1
		}
		p0 := (oi*g.y.s-g.y.pb)*g.w + lo*g.x.s - g.x.pb
		for oj := lo; oj < hi; oj, p0 = oj+1, p0+g.x.s {
			var arg int
			if is3x3 {
				arg = maxPool3x3(xp, p0, g.w)
			} else {
				arg = maxPoolInside(&g, xp, p0, span)
			}
			if arg < 0 { // a NaN: the scan decides
				arg, _ = maxPoolWindow(&g, xp, oi, oj)
			}
			row[oj] = int64(base + arg)
		}
		for _, r := range [2][2]int{{0, lo}, {hi, g.ow}} { // the border
			for oj := r[0]; oj < r[1]; oj++ {
				arg, ok := maxPoolWindow(&g, xp, oi, oj)
				if !ok {
					bad = fmt.Errorf("window (%d,%d) lies entirely in the padding", oi, oj)
				}
				row[oj] = int64(base + arg)
			}
		}
	}
	return bad
}

// maxPoolInside is maxPoolWindow for a window whose first tap is xp[p0]
// and whose taps all lie inside the plane (rows of span values): the
// maximum, then the first tap equal to it; −1 when the maximum is NaN.
func maxPoolInside[T float](g *poolGeom, xp []T, p0, span int) int {
	m := xp[p0]
	for ki := 0; ki < g.y.k; ki++ {
		r := xp[p0+ki*g.y.d*g.w:][:span]
		for kj := 0; kj < span; kj += g.x.d {
			m = max(m, r[kj])
		}
	}
	for ki := 0; ki < g.y.k; ki++ {
		r0 := p0 + ki*g.y.d*g.w
		r := xp[r0:][:span]
		for kj := 0; kj < span; kj += g.x.d {
			if r[kj] == m {
				return r0 + kj
			}
		}
	}
	return -1 // NaN: equal to nothing
}

// maxPool3x3 is maxPoolInside for a 3×3 window without dilation, whose
// first tap is xp[p0], in a plane of width w; −1 when its maximum is NaN.
func maxPool3x3[T float](xp []T, p0, w int) int {
	a, b, c := xp[p0:][:3], xp[p0+w:][:3], xp[p0+2*w:][:3]
	m := max(a[0], a[1], a[2], b[0], b[1], b[2], c[0], c[1], c[2])
	switch m {
	case a[0]:
		return p0
	case a[1]:
		return p0 + 1
	case a[2]:
		return p0 + 2
	case b[0]:
		return p0 + w
	case b[1]:
		return p0 + w + 1
	case b[2]:
		return p0 + w + 2
	case c[0]:
		return p0 + 2*w
	case c[1]:
		return p0 + 2*w + 1
	case c[2]:
		return p0 + 2*w + 2
	}
	return -1 // NaN: equal to nothing
}

// insideWindows is the range [lo, hi) of the o outputs along one axis whose
// window of w lies inside the n inputs.
func insideWindows(o int, w window, n int) (lo, hi int) {
	lo = (w.pb + w.s - 1) / w.s
	last := n - 1 + w.pb - (w.k-1)*w.d // the last tap's position, unpadded, of output hi−1
	if last < 0 {
		return 0, 0
	}
	hi = min(o, last/w.s+1)
	return min(lo, o), max(min(lo, o), hi)
}

// maxPoolWindow returns the flat index in xp of the maximum of the window
// of output (oi, oj): its taps scanned row by row, a greater value or a
// NaN replacing the best, a NaN ending the scan of its row; and false, with
// index 0, when the window lies entirely in the padding.
func maxPoolWindow[T float](g *poolGeom, xp []T, oi, oj int) (int, bool) {
	var best T
	arg := -1
	for ki := 0; ki < g.y.k; ki++ {
		ii := oi*g.y.s - g.y.pb + ki*g.y.d
		if ii < 0 || ii >= g.h {
			continue
		}
		for kj := 0; kj < g.x.k; kj++ {
			jj := oj*g.x.s - g.x.pb + kj*g.x.d
			if jj < 0 || jj >= g.w {
				continue
			}
			if v := xp[ii*g.w+jj]; arg < 0 || v > best || v != v {
				best, arg = v, ii*g.w+jj
				if v != v {
					break
				}
			}
		}
	}
	if arg < 0 {
		return 0, false
	}
	return arg, true
}

// is2x2 reports whether g is a 2×2 window of stride 2, no dilation, whose
// windows all lie inside the input (no padding taps): LeNet's and SegNet's
// pooling, which maxPool2x2 runs.
func (g poolGeom) is2x2() bool {
	return g.y.k == 2 && g.x.k == 2 && g.y.s == 2 && g.x.s == 2 && g.y.d == 1 && g.x.d == 1 &&
		g.y.pb == 0 && g.x.pb == 0 && 2*g.oh <= g.h && 2*g.ow <= g.w
}

// maxPool2x2 writes into ip (oh·ow) the flat index, offset by base, of the
// maximum of each 2×2 window of the plane xp (width w). It picks exactly
// what maxPoolIndices's general loop picks, NaN included: the window is
// scanned row by row, a greater value or a NaN replaces the best, and a
// NaN ends the scan of its row only. Float32 rows without NaN go to the
// vector kernel (vmath.MaxPool2x2Idx32, 16 windows a block), the others
// to maxPool2x2Row.
func maxPool2x2[T float](xp []T, ip []int64, w, oh, ow, base int) {
	x32, _ := any(xp).([]float32)
	for oi := 0; oi < oh; oi++ {
		if x32 != nil {
			if oi += vmath.MaxPool2x2Idx32(x32[2*oi*w:], w, ip[oi*ow:], oh-oi, ow, base+2*oi*w); oi == oh {
				return
			}
		}
		maxPool2x2Row(xp, ip[oi*ow:(oi+1)*ow], w, oi, base)
	}
}

// maxPool2x2Row is maxPool2x2's output row oi, out, in Go.
func maxPool2x2Row[T float](xp []T, out []int64, w, oi, base int) {
	r0 := 2 * oi * w
	r1 := r0 + w
	ow := len(out)
	row0, row1 := xp[r0:r0+2*ow], xp[r1:r1+2*ow]
	for oj := range out {
		j := 2 * oj
		a, b, c, d := row0[j], row0[j+1], row1[j], row1[j+1]
		if a != a || b != b || c != c || d != d {
			out[oj] = int64(base + maxPool2x2NaN(a, b, c, d, r0+j, r1+j))
			continue
		}
		// Without NaN, the pick is the first window value equal to the
		// maximum (±0 compare equal, as > treats them): the values
		// compared as ordered integers (orderKey), the pick chosen by
		// integer selects, no branch on the data.
		ka, kb, kc, kd := orderKey(a), orderKey(b), orderKey(c), orderKey(d)
		k, m := r0+j, ka
		if kb > m {
			k, m = r0+j+1, kb
		}
		if kc > m {
			k, m = r1+j, kc
		}
		if kd > m {
			k = r1 + j + 1
		}
		out[oj] = int64(base + k)
	}
}

// orderKey maps a float that is not NaN to an integer ordered as the
// floats are, with −0 and +0 mapped alike (v+0 is +0 for both).
func orderKey[T float](v T) int64 {
	f := float64(v + 0)
	b := int64(math.Float64bits(f))
	return b ^ (b >> 63 & math.MaxInt64)
}

// maxPool2x2NaN is maxPool2x2's pick for a window holding a NaN (a, b in
// the row at i0, c, d in the row at i1): a NaN, or a greater value,
// replaces the best, and a NaN ends the scan of its row.
func maxPool2x2NaN[T float](a, b, c, d T, i0, i1 int) int {
	best, arg := a, i0
	if best == best {
		if b > best || b != b {
			best, arg = b, i0+1
		}
	}
	if c > best || c != c {
		best, arg = c, i1
		if c != c {
			return arg
		}
	}
	if d > best || d != d {
		arg = i1 + 1
	}
	return arg
}

func gatherK[T float](xt, it tensor.Tensor) (tensor.Tensor, error) {
	x, idx := data[T](xt), data[int64](it)
	out := make([]T, len(idx))
	for i, j := range idx {
		if j < 0 || int(j) >= len(x) {
			return nil, fmt.Errorf("index %d out of range [0, %d)", j, len(x))
		}
		out[i] = x[j]
	}
	return newTensor(it.Shape(), out), nil
}

// gatherInto is gatherK writing every element of out (len(idx) values,
// any contents), in chunks of gatherChunk elements split among
// goroutines.
func gatherInto[T float](xt, it tensor.Tensor, out []T) (tensor.Tensor, error) {
	const gatherChunk = 1 << 14 // 16K indexed reads: microseconds, long next to a worker's wake-up; chunks number len(idx)/gatherChunk, any core count
	x, idx := data[T](xt), data[int64](it)
	var (
		mu  sync.Mutex
		bad error
	)
	parallelWork((len(idx)+gatherChunk-1)/gatherChunk, gatherChunk, func(_, lo, hi int) {
		for i := lo * gatherChunk; i < min(hi*gatherChunk, len(idx)); i++ {
			j := idx[i]
			if j < 0 || int(j) >= len(x) {
				mu.Lock()
				bad = fmt.Errorf("index %d out of range [0, %d)", j, len(x))
				mu.Unlock()
				return
			}
			out[i] = x[j]
		}
	})
	if bad != nil {
		return nil, bad
	}
	return newTensor(it.Shape(), out), nil
}

// scatterInto is scatterK accumulating into buf (see intoFn).
func scatterInto(buf any, vt, it tensor.Tensor, s tensor.Shape) (tensor.Tensor, error) {
	return dispatch(vt,
		func() (tensor.Tensor, error) { return scatterK(vt, it, s, true, outBuf[float32](buf, s.TotalSize())) },
		func() (tensor.Tensor, error) { return scatterK(vt, it, s, true, outBuf[float64](buf, s.TotalSize())) })
}

// scatterPlanesInto is scatterInto for MaxPool's gradient: vt and it are
// [N, C, ...] and each (n, c) plane's indices point into the same plane of
// the [N, C, ...] output s (as maxPoolIndices's do), so the planes are
// scattered in parallel, each worker zeroing its own. Indices outside
// their plane (impossible from maxPoolIndices) fall back to scatterInto.
func scatterPlanesInto(buf any, vt, it tensor.Tensor, s tensor.Shape) (tensor.Tensor, error) {
	vs := vt.Shape()
	if len(s) < 2 || len(vs) < 2 || vs[0] != s[0] || vs[1] != s[1] {
		return scatterInto(buf, vt, it, s)
	}
	t, err := dispatch(vt,
		func() (tensor.Tensor, error) {
			return scatterPlanes(vt, it, s, outBufDirty[float32](buf, s.TotalSize()), true)
		},
		func() (tensor.Tensor, error) {
			return scatterPlanes(vt, it, s, outBufDirty[float64](buf, s.TotalSize()), true)
		})
	if t == nil && err == nil {
		return scatterInto(buf, vt, it, s)
	}
	return t, err
}

// outBufDirty is buf when it is a []T of n values (contents undefined),
// else a fresh []T: for kernels that write every element (Conv's forward
// pass, BatchNorm's affine maps, MaxPool's gather).
func outBufDirty[T float](buf any, n int) []T {
	if b, ok := bufOf[T](buf); ok && len(b) == n {
		return b
	}
	return make([]T, n)
}

// scatterPlanes writes (add=false) or accumulates (add=true) v at the
// flat positions idx of out (any contents; every plane is zeroed first)
// plane by plane in parallel, as scatterK does serially. It returns nil,
// nil when an index lies outside its own plane (out is then partly
// written).
func scatterPlanes[T float](vt, it tensor.Tensor, s tensor.Shape, out []T, add bool) (tensor.Tensor, error) {
	v, idx := data[T](vt), data[int64](it)
	planes := s[0] * s[1]
	plane, vplane := len(out)/planes, len(idx)/planes
	var outside atomic.Bool
	parallelWork(planes, plane, func(_, lo, hi int) { // a plane: its values cleared and scattered
		for p := lo; p < hi; p++ {
			o := out[p*plane : (p+1)*plane]
			clear(o)
			base := int64(p * plane)
			vp := v[p*vplane : (p+1)*vplane]
			for i, j := range idx[p*vplane : (p+1)*vplane] {
				j -= base
				if j < 0 || j >= int64(plane) {
					outside.Store(true)
					return
				}
				if add {
					o[j] += vp[i]
				} else {
					o[j] = vp[i]
				}
			}
		}
	})
	if outside.Load() {
		return nil, nil
	}
	return newTensor(s, out), nil
}

// scatterK writes (add=false) or accumulates (add=true) vals at the flat
// positions idx of out (zeroed, of shape s; nil: a fresh one).
func scatterK[T float](vt, it tensor.Tensor, s tensor.Shape, add bool, out []T) (tensor.Tensor, error) {
	v, idx := data[T](vt), data[int64](it)
	if out == nil {
		out = make([]T, s.TotalSize())
	}
	for i, j := range idx {
		if j < 0 || int(j) >= len(out) {
			return nil, fmt.Errorf("index %d out of range [0, %d)", j, len(out))
		}
		if add {
			out[j] += v[i]
		} else {
			out[j] = v[i]
		}
	}
	return newTensor(s, out), nil
}

// AveragePool builds ONNX AveragePool on x [N,C,H,W] (or [N,C,L]). Each
// output is the mean of the window taps inside the input; with
// CountIncludePad the divisor counts the taps inside the padded input
// (never the extra taps added by ceil mode), as PyTorch and ONNX Runtime do.
// Differentiable in x.
func AveragePool(x *gorgonia.Node, p PoolParams) (*gorgonia.Node, error) {
	const name = "AveragePool"
	if err := checkFloat(name, "input X", x); err != nil {
		return nil, err
	}
	if x.Dims() == 3 {
		x4, q, err := to4D(name, x, p)
		if err != nil {
			return nil, err
		}
		y, err := AveragePool(x4, q)
		if err != nil {
			return nil, err
		}
		return drop3D(name, y)
	}
	if x.Dims() != 4 {
		return nil, fmt.Errorf("ops: AveragePool: X %v: expected 4-D (NCHW) or 3-D (NCL)", x.Shape())
	}
	g, err := newPoolGeom(x.Shape(), p)
	if err != nil {
		return nil, fmt.Errorf("ops: AveragePool: %w", err)
	}
	ap := newAvgPlan(g, p.CountIncludePad)
	op := &fnOp{
		name:     fmt.Sprintf("AveragePool{%v include_pad=%v}", g, p.CountIncludePad),
		inDims:   []int{4},
		outShape: tensor.Shape{g.n, g.c, g.oh, g.ow},
		fwd: func(in []tensor.Tensor) (tensor.Tensor, error) {
			return dispatch(in[0],
				func() (tensor.Tensor, error) { return avgPoolFwd[float32](ap, in[0]), nil },
				func() (tensor.Tensor, error) { return avgPoolFwd[float64](ap, in[0]), nil })
		},
		grads: []gradSpec{{deps: []int{depGrad}, fn: func(in []tensor.Tensor) (tensor.Tensor, error) {
			return dispatch(in[0],
				func() (tensor.Tensor, error) { return avgPoolBwd[float32](ap, in[0]), nil },
				func() (tensor.Tensor, error) { return avgPoolBwd[float64](ap, in[0]), nil })
		}}},
	}
	return apply(op, x)
}

// avgPlan lists, per output row and column, the valid input positions and
// the divisor factor (the divisor is separable: rows × columns).
type avgPlan struct {
	g          poolGeom
	rows, cols [][]int
	rcnt, ccnt []int
}

func newAvgPlan(g poolGeom, includePad bool) *avgPlan {
	axis := func(w window) ([][]int, []int) {
		taps := make([][]int, w.out)
		cnt := make([]int, w.out)
		for o := 0; o < w.out; o++ {
			for k := 0; k < w.k; k++ {
				i := o*w.s - w.pb + k*w.d
				if i >= 0 && i < w.in {
					taps[o] = append(taps[o], i)
				}
				if includePad {
					if i >= -w.pb && i < w.in+w.pe {
						cnt[o]++
					}
				} else if i >= 0 && i < w.in {
					cnt[o]++
				}
			}
		}
		return taps, cnt
	}
	p := &avgPlan{g: g}
	p.rows, p.rcnt = axis(g.y)
	p.cols, p.ccnt = axis(g.x)
	return p
}

func avgPoolFwd[T float](p *avgPlan, xt tensor.Tensor) tensor.Tensor {
	g := p.g
	x := data[T](xt)
	out := make([]T, g.n*g.c*g.oh*g.ow)
	plane, oplane := g.h*g.w, g.oh*g.ow
	parallelWork(g.n*g.c, plane, func(_, lo, hi int) {
		for pc := lo; pc < hi; pc++ {
			xp := x[pc*plane:]
			op := out[pc*oplane:]
			for oi, rs := range p.rows {
				for oj, cs := range p.cols {
					var s T
					for _, i := range rs {
						r := xp[i*g.w:]
						for _, j := range cs {
							s += r[j]
						}
					}
					op[oi*g.ow+oj] = s / T(p.rcnt[oi]*p.ccnt[oj])
				}
			}
		}
	})
	return newTensor(tensor.Shape{g.n, g.c, g.oh, g.ow}, out)
}

func avgPoolBwd[T float](p *avgPlan, gyt tensor.Tensor) tensor.Tensor {
	g := p.g
	gy := data[T](gyt)
	dx := make([]T, g.n*g.c*g.h*g.w)
	plane, oplane := g.h*g.w, g.oh*g.ow
	parallelWork(g.n*g.c, plane, func(_, lo, hi int) {
		for pc := lo; pc < hi; pc++ {
			dp := dx[pc*plane:]
			gp := gy[pc*oplane:]
			for oi, rs := range p.rows {
				for oj, cs := range p.cols {
					v := gp[oi*g.ow+oj] / T(p.rcnt[oi]*p.ccnt[oj])
					for _, i := range rs {
						r := dp[i*g.w:]
						for _, j := range cs {
							r[j] += v
						}
					}
				}
			}
		}
	})
	return newTensor(tensor.Shape{g.n, g.c, g.h, g.w}, dx)
}

// globalShape returns [N, C, 1, ...] for x of shape [N, C, ...].
func globalShape(s tensor.Shape) (tensor.Shape, int) {
	out := tensor.Shape{s[0], s[1]}
	inner := 1
	for _, v := range s[2:] {
		out = append(out, 1)
		inner *= v
	}
	return out, inner
}

// GlobalAveragePool builds ONNX GlobalAveragePool: the mean over every
// spatial axis of x [N, C, ...], shaped [N, C, 1, ...]. Differentiable in x.
func GlobalAveragePool(x *gorgonia.Node) (*gorgonia.Node, error) {
	return globalPool("GlobalAveragePool", x, false)
}

// GlobalMaxPool builds ONNX GlobalMaxPool: the maximum over every spatial
// axis of x [N, C, ...], shaped [N, C, 1, ...]. Differentiable in x (the
// gradient goes to the first maximum).
func GlobalMaxPool(x *gorgonia.Node) (*gorgonia.Node, error) {
	return globalPool("GlobalMaxPool", x, true)
}

func globalPool(name string, x *gorgonia.Node, isMax bool) (*gorgonia.Node, error) {
	if err := checkFloat(name, "input X", x); err != nil {
		return nil, err
	}
	xs := x.Shape()
	if len(xs) < 3 {
		return nil, fmt.Errorf("ops: %s: X %v: expected at least 3-D [N, C, spatial...]", name, xs)
	}
	os, _ := globalShape(xs)
	op := &fnOp{name: name, inDims: []int{len(xs)}, outShape: os}
	// the forward pass writes every element of the buffer it is handed
	n := os.TotalSize()
	if isMax {
		op.into = func(buf any, in []tensor.Tensor) (tensor.Tensor, error) {
			return dispatch(in[0],
				func() (tensor.Tensor, error) { return globalMaxFwd(in[0], outBufDirty[float32](buf, n)), nil },
				func() (tensor.Tensor, error) { return globalMaxFwd(in[0], outBufDirty[float64](buf, n)), nil })
		}
		// the gradient writes one element per plane: outBuf zeroes the rest
		gradInto := func(buf any, in []tensor.Tensor) (tensor.Tensor, error) {
			return dispatch(in[0],
				func() (tensor.Tensor, error) {
					return globalMaxBwd(in[0], in[1], outBuf[float32](buf, xs.TotalSize())), nil
				},
				func() (tensor.Tensor, error) {
					return globalMaxBwd(in[0], in[1], outBuf[float64](buf, xs.TotalSize())), nil
				})
		}
		op.grads = []gradSpec{{deps: []int{0, depGrad}, into: gradInto,
			fn: func(in []tensor.Tensor) (tensor.Tensor, error) { return gradInto(nil, in) }}}
	} else {
		op.into = func(buf any, in []tensor.Tensor) (tensor.Tensor, error) {
			return dispatch(in[0],
				func() (tensor.Tensor, error) { return globalAvgFwd(in[0], outBufDirty[float32](buf, n)), nil },
				func() (tensor.Tensor, error) { return globalAvgFwd(in[0], outBufDirty[float64](buf, n)), nil })
		}
		// the gradient writes every element of the buffer it is handed
		// (squeeze-and-excitation blocks run one per block per task)
		into := func(buf any, in []tensor.Tensor) (tensor.Tensor, error) {
			return dispatch(in[0],
				func() (tensor.Tensor, error) {
					return globalAvgBwd(in[0], xs, outBufDirty[float32](buf, xs.TotalSize())), nil
				},
				func() (tensor.Tensor, error) {
					return globalAvgBwd(in[0], xs, outBufDirty[float64](buf, xs.TotalSize())), nil
				})
		}
		op.grads = []gradSpec{{deps: []int{depGrad}, into: into,
			fn: func(in []tensor.Tensor) (tensor.Tensor, error) { return into(nil, in) }}}
	}
	into := op.into
	op.fwd = func(in []tensor.Tensor) (tensor.Tensor, error) { return into(nil, in) }
	return apply(op, x)
}

// globalAvgFwd writes the mean of each plane of xt into out (any
// contents: every element is written).
func globalAvgFwd[T float](xt tensor.Tensor, out []T) tensor.Tensor {
	os, inner := globalShape(xt.Shape())
	x := data[T](xt)
	for i := range out {
		var s T
		for _, v := range x[i*inner : (i+1)*inner] {
			s += v
		}
		out[i] = s / T(inner)
	}
	return newTensor(os, out)
}

// globalAvgBwd writes the gradient into dx (any contents: every element
// is written).
func globalAvgBwd[T float](gyt tensor.Tensor, xs tensor.Shape, dx []T) tensor.Tensor {
	_, inner := globalShape(xs)
	gy := data[T](gyt)
	for i, g := range gy {
		v := g / T(inner)
		d := dx[i*inner : (i+1)*inner]
		for j := range d {
			d[j] = v
		}
	}
	return newTensor(xs, dx)
}

func globalArgMax[T float](x []T) int {
	arg := 0
	for j, v := range x {
		if v > x[arg] {
			arg = j
		}
	}
	return arg
}

// globalMaxFwd writes the maximum of each plane of xt into out (any
// contents: every element is written).
func globalMaxFwd[T float](xt tensor.Tensor, out []T) tensor.Tensor {
	os, inner := globalShape(xt.Shape())
	x := data[T](xt)
	for i := range out {
		p := x[i*inner : (i+1)*inner]
		out[i] = p[globalArgMax(p)]
	}
	return newTensor(os, out)
}

// globalMaxBwd writes gyt at each plane's maximum of xt into dx, which
// must be zero.
func globalMaxBwd[T float](xt, gyt tensor.Tensor, dx []T) tensor.Tensor {
	_, inner := globalShape(xt.Shape())
	x, gy := data[T](xt), data[T](gyt)
	for i, g := range gy {
		dx[i*inner+globalArgMax(x[i*inner:(i+1)*inner])] = g
	}
	return newTensor(xt.Shape(), dx)
}

// AsIndices returns indices as an int64 node: unchanged when it already is
// one, otherwise a non-differentiable cast of a float node (rounded to the
// nearest integer), for indices that went through float arithmetic.
func AsIndices(indices *gorgonia.Node) (*gorgonia.Node, error) {
	if indices == nil {
		return nil, fmt.Errorf("ops: AsIndices: indices is nil")
	}
	if indices.Dtype() == tensor.Int64 {
		return indices, nil
	}
	if err := checkFloat("AsIndices", "indices", indices); err != nil {
		return nil, err
	}
	op := &fnOp{
		name:     "AsIndices",
		inDims:   []int{indices.Dims()},
		outShape: indices.Shape(),
		outType:  tensor.Int64,
		fwd: func(in []tensor.Tensor) (tensor.Tensor, error) {
			return dispatch(in[0],
				func() (tensor.Tensor, error) { return roundToInt64[float32](in[0]), nil },
				func() (tensor.Tensor, error) { return roundToInt64[float64](in[0]), nil })
		},
		grads: []gradSpec{{}},
	}
	return apply(op, indices)
}

func roundToInt64[T float](t tensor.Tensor) tensor.Tensor {
	d := data[T](t)
	out := make([]int64, len(d))
	for i, v := range d {
		out[i] = int64(math.Round(float64(v)))
	}
	return newTensor(t.Shape(), out)
}
