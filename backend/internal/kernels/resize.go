package kernels

import (
	"fmt"
	"math"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Resize interpolation modes, coordinate transformations and nearest-pixel
// rounding modes (ONNX Resize attribute values).
const (
	ResizeNearest = "nearest"
	ResizeLinear  = "linear"

	CoordHalfPixel        = "half_pixel"
	CoordPytorchHalfPixel = "pytorch_half_pixel"
	CoordAlignCorners     = "align_corners"
	CoordAsymmetric       = "asymmetric"
	CoordTFHalfPixelForNN = "tf_half_pixel_for_nn"
	// CoordHalfPixelSymmetric (ONNX opset 19) is half_pixel shifted so
	// that the output stays centred when the output size is rounded.
	CoordHalfPixelSymmetric = "half_pixel_symmetric"

	NearestRoundPreferFloor = "round_prefer_floor"
	NearestRoundPreferCeil  = "round_prefer_ceil"
	NearestFloor            = "floor"
	NearestCeil             = "ceil"
	// NearestSimple is ONNX Runtime's rule for Upsample and Resize-10:
	// floor when an axis is enlarged, ceil when it is shrunk.
	NearestSimple = "simple"
)

// ResizeParams are the attributes and constant inputs of ONNX Resize (and
// Upsample). Exactly one of Scales and Sizes is set; both have one entry per
// axis of the input, and the entries of the batch and channel axes must leave
// them unchanged.
type ResizeParams struct {
	// Mode is nearest (also "") or linear (bilinear over H, W).
	Mode string
	// CoordMode is coordinate_transformation_mode; "" means half_pixel.
	CoordMode string
	// NearestMode is nearest_mode; "" means round_prefer_floor.
	NearestMode string
	// Scales per axis; output length = floor(input length · scale).
	Scales []float64
	// Sizes per axis: the output shape.
	Sizes []int
}

// resizeAxis holds, per output position, two input taps and their weights.
type resizeAxis struct {
	i0, i1 []int
	w0, w1 []float64
}

// Resize builds ONNX Resize on x [N,C,H,W] (or [N,C,L]) for nearest and
// linear modes. The result is linear in x, so it is differentiable in x: the
// gradient scatter-adds the output gradient back through the same taps.
func Resize(x *gorgonia.Node, p ResizeParams) (*gorgonia.Node, error) {
	const name = "Resize"
	if err := checkFloat(name, "input X", x); err != nil {
		return nil, err
	}
	xs := x.Shape()
	r := len(xs)
	if r != 3 && r != 4 {
		return nil, fmt.Errorf("ops: Resize: X %v: expected 3-D or 4-D (NC + spatial)", xs)
	}
	geo, os, desc, err := newResizeGeom(xs, p)
	if err != nil {
		return nil, err
	}
	op := &fnOp{
		name:     desc,
		inDims:   []int{r},
		outShape: os,
		into: func(buf any, in []tensor.Tensor) (tensor.Tensor, error) {
			n := os.TotalSize()
			return dispatch(in[0],
				func() (tensor.Tensor, error) { return resizeFwd(geo, in[0], os, outBufDirty[float32](buf, n)), nil },
				func() (tensor.Tensor, error) { return resizeFwd(geo, in[0], os, outBufDirty[float64](buf, n)), nil })
		},
		grads: []gradSpec{{deps: []int{depGrad}, into: func(buf any, in []tensor.Tensor) (tensor.Tensor, error) {
			n := xs.TotalSize()
			return dispatch(in[0],
				func() (tensor.Tensor, error) { return resizeBwd(geo, in[0], xs, outBufDirty[float32](buf, n)), nil },
				func() (tensor.Tensor, error) { return resizeBwd(geo, in[0], xs, outBufDirty[float64](buf, n)), nil })
		}}},
	}
	fwd, grad := op.into, op.grads[0].into
	op.fwd = func(in []tensor.Tensor) (tensor.Tensor, error) { return fwd(nil, in) }
	op.grads[0].fn = func(in []tensor.Tensor) (tensor.Tensor, error) { return grad(nil, in) }
	return apply(op, x)
}

// newResizeGeom resolves Resize's attributes p for an input of shape xs:
// the geometry, the output shape and the op's description.
func newResizeGeom(xs tensor.Shape, p ResizeParams) (resizeGeom, tensor.Shape, string, error) {
	r := len(xs)
	mode := p.Mode
	if mode == "" {
		mode = ResizeNearest
	}
	if mode != ResizeNearest && mode != ResizeLinear {
		return resizeGeom{}, nil, "", fmt.Errorf("ops: Resize: mode %q, expected nearest or linear", p.Mode)
	}
	coord := p.CoordMode
	if coord == "" {
		coord = CoordHalfPixel
	}
	nearest := p.NearestMode
	if nearest == "" {
		nearest = NearestRoundPreferFloor
	}
	if (p.Scales == nil) == (p.Sizes == nil) {
		return resizeGeom{}, nil, "", fmt.Errorf("ops: Resize: expected exactly one of scales and sizes")
	}
	os := make(tensor.Shape, r)
	scales := make([]float64, r)
	for a := 0; a < r; a++ {
		if p.Scales != nil {
			if len(p.Scales) != r {
				return resizeGeom{}, nil, "", fmt.Errorf("ops: Resize: scales %v: expected %d values", p.Scales, r)
			}
			if p.Scales[a] <= 0 {
				return resizeGeom{}, nil, "", fmt.Errorf("ops: Resize: scales %v: expected positive values", p.Scales)
			}
			scales[a] = p.Scales[a]
			os[a] = int(math.Floor(float64(xs[a]) * p.Scales[a]))
		} else {
			if len(p.Sizes) != r {
				return resizeGeom{}, nil, "", fmt.Errorf("ops: Resize: sizes %v: expected %d values", p.Sizes, r)
			}
			os[a] = p.Sizes[a]
			scales[a] = float64(os[a]) / float64(xs[a])
		}
		if os[a] < 1 {
			return resizeGeom{}, nil, "", fmt.Errorf("ops: Resize: output axis %d would be empty", a)
		}
	}
	if os[0] != xs[0] || os[1] != xs[1] {
		return resizeGeom{}, nil, "", fmt.Errorf("ops: Resize: output %v: only spatial axes may be resized (input %v)", os, xs)
	}
	// axes[0] resizes rows, axes[1] columns; a 3-D input has one row.
	axes := make([]resizeAxis, 2)
	if r == 3 {
		axes[0] = resizeAxis{i0: []int{0}, i1: []int{0}, w0: []float64{1}, w1: []float64{0}}
	}
	for a := 2; a < r; a++ {
		ax, err := newResizeAxis(xs[a], os[a], scales[a], mode, coord, nearest)
		if err != nil {
			return resizeGeom{}, nil, "", fmt.Errorf("ops: Resize: %w", err)
		}
		axes[a-(r-2)] = ax
	}
	geo := resizeGeom{n: xs[0], c: xs[1], axes: axes}
	if r == 4 {
		geo.h, geo.w, geo.oh, geo.ow = xs[2], xs[3], os[2], os[3]
	} else {
		geo.h, geo.w, geo.oh, geo.ow = 1, xs[2], 1, os[2]
	}
	return geo, os, fmt.Sprintf("Resize{%s %s %s scales=%v}", mode, coord, nearest, scales), nil
}

// resizeCoord maps output coordinate o to the input coordinate.
func resizeCoord(o, in, out int, scale float64, coord string) (float64, error) {
	x := float64(o)
	switch coord {
	case CoordHalfPixel:
		return (x+0.5)/scale - 0.5, nil
	case CoordPytorchHalfPixel:
		if out > 1 {
			return (x+0.5)/scale - 0.5, nil
		}
		return 0, nil
	case CoordAlignCorners:
		if out == 1 {
			return 0, nil
		}
		return x * float64(in-1) / float64(out-1), nil
	case CoordAsymmetric:
		return x / scale, nil
	case CoordTFHalfPixelForNN:
		return (x + 0.5) / scale, nil
	case CoordHalfPixelSymmetric:
		adj := float64(out) / (scale * float64(in))
		return float64(in)/2*(1-adj) + (x+0.5)/scale - 0.5, nil
	}
	return 0, fmt.Errorf("coordinate_transformation_mode %q, expected half_pixel, half_pixel_symmetric, pytorch_half_pixel, align_corners, asymmetric or tf_half_pixel_for_nn", coord)
}

func newResizeAxis(in, out int, scale float64, mode, coord, nearest string) (resizeAxis, error) {
	ax := resizeAxis{i0: make([]int, out), i1: make([]int, out), w0: make([]float64, out), w1: make([]float64, out)}
	for o := 0; o < out; o++ {
		x, err := resizeCoord(o, in, out, scale, coord)
		if err != nil {
			return ax, err
		}
		if mode == ResizeNearest {
			var i float64
			switch nearest {
			case NearestRoundPreferFloor:
				if x-math.Floor(x) == 0.5 {
					i = math.Floor(x)
				} else {
					i = math.Round(x)
				}
			case NearestRoundPreferCeil:
				if x-math.Floor(x) == 0.5 {
					i = math.Ceil(x)
				} else {
					i = math.Round(x)
				}
			case NearestFloor:
				i = math.Floor(x)
			case NearestCeil:
				i = math.Ceil(x)
			case NearestSimple:
				if scale < 1 {
					i = math.Ceil(x)
				} else {
					i = math.Floor(x)
				}
			default:
				return ax, fmt.Errorf("nearest_mode %q, expected round_prefer_floor, round_prefer_ceil, floor, ceil or simple", nearest)
			}
			k := min(max(int(i), 0), in-1)
			ax.i0[o], ax.i1[o], ax.w0[o], ax.w1[o] = k, k, 1, 0
			continue
		}
		x = min(max(x, 0), float64(in-1))
		i0 := int(math.Floor(x))
		i1 := min(i0+1, in-1)
		f := x - float64(i0)
		ax.i0[o], ax.i1[o], ax.w0[o], ax.w1[o] = i0, i1, 1-f, f
	}
	return ax, nil
}

// resizeGeom is a resize of N·C planes of h×w into oh×ow.
type resizeGeom struct {
	n, c, h, w, oh, ow int
	axes               []resizeAxis // rows, columns
}

// resizeFwd writes the resize of x into out (any contents; every element
// written), plane by plane in parallel, separably: each input row is
// interpolated across once into rows of ow values (b0·x[j0] + b1·x[j1]),
// and each output row is a0·h[i0] + a1·h[i1] of two of them. These are
// the operations of interpolating each output element from its four
// inputs, a0·(b0·x00 + b1·x01) + a1·(b0·x10 + b1·x11), in that order
// (the same values), with each input row's interpolation done once
// instead of once per output row reading it.
func resizeFwd[T float](g resizeGeom, xt tensor.Tensor, os tensor.Shape, out []T) tensor.Tensor {
	x := data[T](xt)
	ry, rx := g.axes[0], g.axes[1]
	parallelWork(g.n*g.c, 4*g.oh*g.ow, func(_, lo, hi int) {
		hbuf := make([]T, g.h*g.ow)
		done := make([]bool, g.h)
		across := func(xp []T, i int) []T {
			hr := hbuf[i*g.ow : (i+1)*g.ow]
			if done[i] {
				return hr
			}
			done[i] = true
			r := xp[i*g.w : (i+1)*g.w]
			for oj := range hr {
				hr[oj] = T(rx.w0[oj])*r[rx.i0[oj]] + T(rx.w1[oj])*r[rx.i1[oj]]
			}
			return hr
		}
		for pc := lo; pc < hi; pc++ {
			xp := x[pc*g.h*g.w:]
			op := out[pc*g.oh*g.ow:]
			clear(done)
			for oi := 0; oi < g.oh; oi++ {
				h0, h1 := across(xp, ry.i0[oi]), across(xp, ry.i1[oi])
				a0, a1 := T(ry.w0[oi]), T(ry.w1[oi])
				row := op[oi*g.ow : (oi+1)*g.ow]
				h0, h1 = h0[:len(row)], h1[:len(row)]
				for oj := range row {
					row[oj] = a0*h0[oj] + a1*h1[oj]
				}
			}
		}
	})
	return newTensor(os, out)
}

// resizeBwd writes the gradient of resizeFwd's input into dx (any
// contents), plane by plane in parallel, separably: the output rows are
// first summed into the input rows they read (t[i0] += a0·gy, t[i1] +=
// a1·gy, rows of ow values), and each of those is then spread across into
// its input row (dx[j0] += b0·t, dx[j1] += b1·t). The sums run in another
// order than per output element (not the same bits).
func resizeBwd[T float](g resizeGeom, gyt tensor.Tensor, xs tensor.Shape, dx []T) tensor.Tensor {
	gy := data[T](gyt)
	ry, rx := g.axes[0], g.axes[1]
	parallelWork(g.n*g.c, 4*g.oh*g.ow, func(_, lo, hi int) {
		t := make([]T, g.h*g.ow)
		for pc := lo; pc < hi; pc++ {
			dp := dx[pc*g.h*g.w : (pc+1)*g.h*g.w]
			gp := gy[pc*g.oh*g.ow:]
			clear(t)
			for oi := 0; oi < g.oh; oi++ {
				row := gp[oi*g.ow : (oi+1)*g.ow]
				t0, t1 := t[ry.i0[oi]*g.ow:][:len(row)], t[ry.i1[oi]*g.ow:][:len(row)]
				a0, a1 := T(ry.w0[oi]), T(ry.w1[oi])
				for oj, v := range row {
					t0[oj] += a0 * v
					t1[oj] += a1 * v
				}
			}
			clear(dp)
			for i := 0; i < g.h; i++ {
				tr, r := t[i*g.ow:(i+1)*g.ow], dp[i*g.w:(i+1)*g.w]
				for oj, v := range tr {
					r[rx.i0[oj]] += T(rx.w0[oj]) * v
					r[rx.i1[oj]] += T(rx.w1[oj]) * v
				}
			}
		}
	})
	return newTensor(xs, dx)
}
