package backend

import (
	"math"

	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// ReduceMax, ReduceMin, ReduceL1, ReduceSumSquare, ReduceLogSum,
// ReduceLogSumExp (axes an attribute, an optional input from opset 18;
// keepdims default 1; noop_with_empty_axes in the input form) and
// ArgMax/ArgMin (int64 indices, computed as floats; select_last_index
// from opset 12). ReduceMax/ReduceMin share the gradient equally among
// tied extrema, as PyTorch's amax/amin do.

func init() {
	for _, op := range []string{"ReduceMax", "ReduceMin", "ReduceL1", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"} {
		register(op, 1, lowerReduceExtra)
		register(op, 18, lowerReduceExtra)
	}
	for _, op := range []string{"ArgMax", "ArgMin"} {
		register(op, 1, lowerArgExtreme)
	}
}

// reduceGeometry reads the axes (attribute or, from opset 18 and for
// ReduceSum from 13, input 1), keepdims and noop_with_empty_axes of a
// reduction of x. It returns the output shape (nil for a scalar) and, per
// input element, the output element it reduces into; identity is true
// when empty axes with noop make it the identity.
func reduceGeometry(b *builder, n *onnxpb.NodeProto, in []*value, x *value) (out []int, oidx []int, identity bool, err error) {
	asInput := (n.GetOpType() == "ReduceSum" && b.opset >= 13) || b.opset >= 18
	var axes []int64
	if asInput {
		axes, err = optConstInts(n, in, 1, "axes")
	} else {
		axes, err = attrInts(n, "axes", nil)
	}
	if err != nil {
		return nil, nil, false, err
	}
	keep, err := attrInt(n, "keepdims", 1)
	if err != nil {
		return nil, nil, false, err
	}
	noop, err := attrInt(n, "noop_with_empty_axes", 0)
	if err != nil {
		return nil, nil, false, err
	}
	r := len(x.shape)
	red := make([]bool, r)
	if len(axes) == 0 {
		if noop != 0 && asInput {
			return x.shape, nil, true, nil
		}
		for i := range red {
			red[i] = true
		}
	}
	for _, a := range axes {
		i, err := normAxis(n, a, r)
		if err != nil {
			return nil, nil, false, err
		}
		red[i] = true
	}
	var full []int // out with the reduced dims kept as 1
	for i, d := range x.shape {
		if red[i] {
			full = append(full, 1)
			if keep != 0 {
				out = append(out, 1)
			}
		} else {
			full = append(full, d)
			out = append(out, d)
		}
	}
	return out, broadcastIndexInto(full, x.shape), false, nil
}

func lowerReduceExtra(b *builder, n *onnxpb.NodeProto, in []*value) ([]*value, error) {
	x, err := input(n, in, 0)
	if err != nil {
		return nil, err
	}
	out, oidx, identity, err := reduceGeometry(b, n, in, x)
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []int{}
	}
	op := n.GetOpType()
	if identity {
		return []*value{x}, nil
	}
	nout := shape.Numel(out)
	fwd := func(dst []float64, in [][]float64) {
		src := in[0]
		switch op {
		case "ReduceMax", "ReduceMin", "ReduceLogSumExp":
			inf := math.Inf(-1)
			if op == "ReduceMin" {
				inf = math.Inf(1)
			}
			for o := range dst {
				dst[o] = inf
			}
			for i, v := range src {
				o := oidx[i]
				if (op == "ReduceMin" && v < dst[o]) || (op != "ReduceMin" && v > dst[o]) || math.IsNaN(v) {
					dst[o] = v
				}
			}
			if op != "ReduceLogSumExp" {
				return
			}
			s := make([]float64, nout)
			for i, v := range src {
				if m := dst[oidx[i]]; !math.IsInf(m, 0) {
					s[oidx[i]] += math.Exp(v - m)
				}
			}
			for o, m := range dst {
				if !math.IsInf(m, 0) {
					dst[o] = m + math.Log(s[o])
				}
			}
		case "ReduceL1":
			for i, v := range src {
				dst[oidx[i]] += math.Abs(v)
			}
		case "ReduceSumSquare":
			for i, v := range src {
				dst[oidx[i]] += v * v
			}
		case "ReduceLogSum":
			for i, v := range src {
				dst[oidx[i]] += v
			}
			for o, v := range dst {
				dst[o] = math.Log(v)
			}
		}
	}
	bwd := func(_ int, dst []float64, in [][]float64, y, g []float64) {
		src := in[0]
		switch op {
		case "ReduceMax", "ReduceMin":
			ties := make([]float64, nout)
			for i, v := range src {
				if v == y[oidx[i]] {
					ties[oidx[i]]++
				}
			}
			for i, v := range src {
				if o := oidx[i]; v == y[o] {
					dst[i] = g[o] / ties[o]
				}
			}
		case "ReduceLogSumExp":
			for i, v := range src {
				o := oidx[i]
				dst[i] = g[o] * math.Exp(v-y[o])
			}
		case "ReduceL1":
			for i, v := range src {
				dst[i] = g[oidx[i]] * sign(v)
			}
		case "ReduceSumSquare":
			for i, v := range src {
				dst[i] = 2 * v * g[oidx[i]]
			}
		case "ReduceLogSum":
			for i := range src {
				o := oidx[i]
				dst[i] = g[o] * math.Exp(-y[o])
			}
		}
	}
	node, err := b.kernel(n.GetName(), op, []gnode{b.node(x)}, out, fwd, bwd, nil)
	if err != nil {
		return nil, err
	}
	return []*value{nodeValue(node)}, nil
}

// lowerArgExtreme lowers ArgMax/ArgMin along one axis (first occurrence,
// or the last with select_last_index). The indices are exact in float32
// up to 2^24 and have no gradient.
func lowerArgExtreme(b *builder, n *onnxpb.NodeProto, in []*value) ([]*value, error) {
	x, err := input(n, in, 0)
	if err != nil {
		return nil, err
	}
	ax, err := attrInt(n, "axis", 0)
	if err != nil {
		return nil, err
	}
	keep, err := attrInt(n, "keepdims", 1)
	if err != nil {
		return nil, err
	}
	last, err := attrInt(n, "select_last_index", 0)
	if err != nil {
		return nil, err
	}
	a, err := normAxis(n, ax, len(x.shape))
	if err != nil {
		return nil, err
	}
	outer, d, inner := shape.Numel(x.shape[:a]), x.shape[a], shape.Numel(x.shape[a+1:])
	out := append([]int{}, x.shape[:a]...)
	if keep != 0 {
		out = append(out, 1)
	}
	out = append(out, x.shape[a+1:]...)
	isMax := n.GetOpType() == "ArgMax"
	fwd := func(dst []float64, in [][]float64) {
		src := in[0]
		for o := 0; o < outer; o++ {
			for j := 0; j < inner; j++ {
				best, bi := src[o*d*inner+j], 0
				for k := 1; k < d; k++ {
					v := src[(o*d+k)*inner+j]
					better := v > best
					if !isMax {
						better = v < best
					}
					if better || (last != 0 && v == best) {
						best, bi = v, k
					}
				}
				dst[o*inner+j] = float64(bi)
			}
		}
	}
	node, err := b.kernel(n.GetName(), n.GetOpType(), []gnode{b.node(x)}, out, fwd, nil, nil)
	if err != nil {
		return nil, err
	}
	return []*value{nodeValue(node)}, nil
}
