package kernels

import (
	"fmt"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Padding modes of ONNX Pad.
const (
	PadConstant = "constant"
	PadReflect  = "reflect"
	PadEdge     = "edge"
	PadWrap     = "wrap" // ONNX opset 19: the axis repeats periodically
)

// PadParams are the attributes (opset ≤ 10) or constant inputs (opset ≥ 11)
// of ONNX Pad.
type PadParams struct {
	// Mode is constant (also ""), reflect, edge or wrap.
	Mode string
	// Pads are [begin..., end...] per axis, as in ONNX; negative values crop.
	Pads []int
	// Value fills constant padding.
	Value float64
}

// Pad builds ONNX Pad on x of any rank. Reflect mirrors without repeating the
// border (PyTorch's reflect); pads wider than the axis keep reflecting; wrap
// repeats the axis periodically. The
// node is differentiable in x: padded positions scatter their gradient back
// to the elements they copy.
func Pad(x *gorgonia.Node, p PadParams) (*gorgonia.Node, error) {
	const name = "Pad"
	if err := checkFloat(name, "input X", x); err != nil {
		return nil, err
	}
	xs := x.Shape()
	r := len(xs)
	if len(p.Pads) != 2*r {
		return nil, fmt.Errorf("ops: Pad: pads %v: expected %d values for a %d-D input", p.Pads, 2*r, r)
	}
	mode := p.Mode
	if mode == "" {
		mode = PadConstant
	}
	if mode != PadConstant && mode != PadReflect && mode != PadEdge && mode != PadWrap {
		return nil, fmt.Errorf("ops: Pad: mode %q, expected constant, reflect, edge or wrap", p.Mode)
	}
	os := make(tensor.Shape, r)
	maps := make([][]int, r)
	for a := 0; a < r; a++ {
		b, e := p.Pads[a], p.Pads[r+a]
		os[a] = xs[a] + b + e
		if os[a] < 0 {
			return nil, fmt.Errorf("ops: Pad: axis %d of size %d with pads %d, %d gives a negative size", a, xs[a], b, e)
		}
		if os[a] > 0 && xs[a] == 0 || (mode == PadReflect && xs[a] < 2 && (b > 0 || e > 0)) {
			return nil, fmt.Errorf("ops: Pad: cannot %s-pad axis %d of size %d", mode, a, xs[a])
		}
		m := make([]int, os[a])
		for o := range m {
			m[o] = padSource(o-b, xs[a], mode)
		}
		maps[a] = m
	}
	val := p.Value
	op := &fnOp{
		name:     fmt.Sprintf("Pad{%s %v value=%g}", mode, p.Pads, val),
		inDims:   []int{r},
		outShape: os,
		fwd: func(in []tensor.Tensor) (tensor.Tensor, error) {
			return dispatch(in[0],
				func() (tensor.Tensor, error) { return padFwd[float32](in[0], os, maps, float32(val)), nil },
				func() (tensor.Tensor, error) { return padFwd[float64](in[0], os, maps, val), nil })
		},
		grads: []gradSpec{{deps: []int{depGrad}, fn: func(in []tensor.Tensor) (tensor.Tensor, error) {
			return dispatch(in[0],
				func() (tensor.Tensor, error) { return padBwd[float32](in[0], xs, maps), nil },
				func() (tensor.Tensor, error) { return padBwd[float64](in[0], xs, maps), nil })
		}}},
	}
	return apply(op, x)
}

// padSource maps a (possibly out-of-range) source coordinate i on an axis of
// n elements to the element it copies, or −1 for constant padding.
func padSource(i, n int, mode string) int {
	if i >= 0 && i < n {
		return i
	}
	switch mode {
	case PadEdge:
		return min(max(i, 0), n-1)
	case PadWrap:
		i %= n
		if i < 0 {
			i += n
		}
		return i
	case PadReflect:
		period := 2 * (n - 1)
		i %= period
		if i < 0 {
			i += period
		}
		if i >= n {
			i = period - i
		}
		return i
	}
	return -1
}

// padWalk calls f(outFlat, inFlat) for every output element; inFlat is −1
// for constant padding.
func padWalk(xs, os tensor.Shape, maps [][]int, f func(o, i int)) {
	r := len(os)
	if os.TotalSize() == 0 {
		return
	}
	istr := make([]int, r)
	s := 1
	for a := r - 1; a >= 0; a-- {
		istr[a] = s
		s *= xs[a]
	}
	idx := make([]int, r)
	for o := 0; ; o++ {
		src := 0
		for a := 0; a < r; a++ {
			m := maps[a][idx[a]]
			if m < 0 {
				src = -1
				break
			}
			src += m * istr[a]
		}
		f(o, src)
		a := r - 1
		for ; a >= 0; a-- {
			idx[a]++
			if idx[a] < os[a] {
				break
			}
			idx[a] = 0
		}
		if a < 0 {
			return
		}
	}
}

func padFwd[T float](xt tensor.Tensor, os tensor.Shape, maps [][]int, val T) tensor.Tensor {
	x := data[T](xt)
	out := make([]T, os.TotalSize())
	padWalk(xt.Shape(), os, maps, func(o, i int) {
		if i < 0 {
			out[o] = val
		} else {
			out[o] = x[i]
		}
	})
	return newTensor(os, out)
}

func padBwd[T float](gyt tensor.Tensor, xs tensor.Shape, maps [][]int) tensor.Tensor {
	gy := data[T](gyt)
	dx := make([]T, xs.TotalSize())
	padWalk(xs, gyt.Shape(), maps, func(o, i int) {
		if i >= 0 {
			dx[i] += gy[o]
		}
	})
	return newTensor(xs, dx)
}
