package ops

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
	mode := p.Mode
	if mode == "" {
		mode = ResizeNearest
	}
	if mode != ResizeNearest && mode != ResizeLinear {
		return nil, fmt.Errorf("ops: Resize: mode %q, expected nearest or linear", p.Mode)
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
		return nil, fmt.Errorf("ops: Resize: expected exactly one of scales and sizes")
	}
	os := make(tensor.Shape, r)
	scales := make([]float64, r)
	for a := 0; a < r; a++ {
		if p.Scales != nil {
			if len(p.Scales) != r {
				return nil, fmt.Errorf("ops: Resize: scales %v: expected %d values", p.Scales, r)
			}
			if p.Scales[a] <= 0 {
				return nil, fmt.Errorf("ops: Resize: scales %v: expected positive values", p.Scales)
			}
			scales[a] = p.Scales[a]
			os[a] = int(math.Floor(float64(xs[a]) * p.Scales[a]))
		} else {
			if len(p.Sizes) != r {
				return nil, fmt.Errorf("ops: Resize: sizes %v: expected %d values", p.Sizes, r)
			}
			os[a] = p.Sizes[a]
			scales[a] = float64(os[a]) / float64(xs[a])
		}
		if os[a] < 1 {
			return nil, fmt.Errorf("ops: Resize: output axis %d would be empty", a)
		}
	}
	if os[0] != xs[0] || os[1] != xs[1] {
		return nil, fmt.Errorf("ops: Resize: output %v: only spatial axes may be resized (input %v)", os, xs)
	}
	// axes[0] resizes rows, axes[1] columns; a 3-D input has one row.
	axes := make([]resizeAxis, 2)
	if r == 3 {
		axes[0] = resizeAxis{i0: []int{0}, i1: []int{0}, w0: []float64{1}, w1: []float64{0}}
	}
	for a := 2; a < r; a++ {
		ax, err := newResizeAxis(xs[a], os[a], scales[a], mode, coord, nearest)
		if err != nil {
			return nil, fmt.Errorf("ops: Resize: %w", err)
		}
		axes[a-(r-2)] = ax
	}
	geo := resizeGeom{n: xs[0], c: xs[1], axes: axes}
	if r == 4 {
		geo.h, geo.w, geo.oh, geo.ow = xs[2], xs[3], os[2], os[3]
	} else {
		geo.h, geo.w, geo.oh, geo.ow = 1, xs[2], 1, os[2]
	}
	op := &fnOp{
		name:     fmt.Sprintf("Resize{%s %s %s scales=%v}", mode, coord, nearest, scales),
		inDims:   []int{r},
		outShape: os,
		fwd: func(in []tensor.Tensor) (tensor.Tensor, error) {
			return dispatch(in[0],
				func() (tensor.Tensor, error) { return resizeFwd[float32](geo, in[0], os), nil },
				func() (tensor.Tensor, error) { return resizeFwd[float64](geo, in[0], os), nil })
		},
		grads: []gradSpec{{deps: []int{depGrad}, fn: func(in []tensor.Tensor) (tensor.Tensor, error) {
			return dispatch(in[0],
				func() (tensor.Tensor, error) { return resizeBwd[float32](geo, in[0], xs), nil },
				func() (tensor.Tensor, error) { return resizeBwd[float64](geo, in[0], xs), nil })
		}}},
	}
	return apply(op, x)
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

func resizeFwd[T float](g resizeGeom, xt tensor.Tensor, os tensor.Shape) tensor.Tensor {
	x := data[T](xt)
	out := make([]T, g.n*g.c*g.oh*g.ow)
	ry, rx := g.axes[0], g.axes[1]
	parallelFor(g.n*g.c, func(_, lo, hi int) {
		for pc := lo; pc < hi; pc++ {
			xp := x[pc*g.h*g.w:]
			op := out[pc*g.oh*g.ow:]
			for oi := 0; oi < g.oh; oi++ {
				r0, r1 := xp[ry.i0[oi]*g.w:], xp[ry.i1[oi]*g.w:]
				a0, a1 := T(ry.w0[oi]), T(ry.w1[oi])
				row := op[oi*g.ow:]
				for oj := 0; oj < g.ow; oj++ {
					j0, j1 := rx.i0[oj], rx.i1[oj]
					b0, b1 := T(rx.w0[oj]), T(rx.w1[oj])
					row[oj] = a0*(b0*r0[j0]+b1*r0[j1]) + a1*(b0*r1[j0]+b1*r1[j1])
				}
			}
		}
	})
	return newTensor(os, out)
}

func resizeBwd[T float](g resizeGeom, gyt tensor.Tensor, xs tensor.Shape) tensor.Tensor {
	gy := data[T](gyt)
	dx := make([]T, g.n*g.c*g.h*g.w)
	ry, rx := g.axes[0], g.axes[1]
	parallelFor(g.n*g.c, func(_, lo, hi int) {
		for pc := lo; pc < hi; pc++ {
			dp := dx[pc*g.h*g.w:]
			gp := gy[pc*g.oh*g.ow:]
			for oi := 0; oi < g.oh; oi++ {
				r0, r1 := dp[ry.i0[oi]*g.w:], dp[ry.i1[oi]*g.w:]
				a0, a1 := T(ry.w0[oi]), T(ry.w1[oi])
				for oj := 0; oj < g.ow; oj++ {
					v := gp[oi*g.ow+oj]
					j0, j1 := rx.i0[oj], rx.i1[oj]
					b0, b1 := T(rx.w0[oj]), T(rx.w1[oj])
					r0[j0] += a0 * b0 * v
					r0[j1] += a0 * b1 * v
					r1[j0] += a1 * b0 * v
					r1[j1] += a1 * b1 * v
				}
			}
		}
	})
	return newTensor(xs, dx)
}
