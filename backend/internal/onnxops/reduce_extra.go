package onnxops

import (
	"math"

	"github.com/paretonav/paretonav/backend/internal/graph"
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
		graph.Register(op, 1, lowerReduceExtra)
		graph.Register(op, 18, lowerReduceExtra)
	}
	for _, op := range []string{"ArgMax", "ArgMin"} {
		graph.Register(op, 1, lowerArgExtreme)
	}
}

// reduceGeometry reads the axes (attribute or, from opset 18 and for
// ReduceSum from 13, input 1), keepdims and noop_with_empty_axes of a
// reduction of x. It returns the output shape (nil for a scalar) and, per
// input element, the output element it reduces into; identity is true
// when empty axes with noop make it the identity.
func reduceGeometry(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value, x *graph.Value) (out []int, oidx []int, identity bool, err error) {
	asInput := (n.GetOpType() == "ReduceSum" && b.Opset >= 13) || b.Opset >= 18
	var axes []int64
	if asInput {
		axes, err = graph.OptConstInts(n, in, 1, "axes")
	} else {
		axes, err = graph.AttrInts(n, "axes", nil)
	}
	if err != nil {
		return nil, nil, false, err
	}
	keep, err := graph.AttrInt(n, "keepdims", 1)
	if err != nil {
		return nil, nil, false, err
	}
	noop, err := graph.AttrInt(n, "noop_with_empty_axes", 0)
	if err != nil {
		return nil, nil, false, err
	}
	r := len(x.Shape)
	red := make([]bool, r)
	if len(axes) == 0 {
		if noop != 0 && asInput {
			return x.Shape, nil, true, nil
		}
		for i := range red {
			red[i] = true
		}
	}
	for _, a := range axes {
		i, err := graph.NormAxis(n, a, r)
		if err != nil {
			return nil, nil, false, err
		}
		red[i] = true
	}
	var full []int // out with the reduced dims kept as 1
	for i, d := range x.Shape {
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
	return out, broadcastIndexInto(full, x.Shape), false, nil
}

func lowerReduceExtra(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	x, err := graph.Input(n, in, 0)
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
		return []*graph.Value{x}, nil
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
	node, err := b.Kernel(n.GetName(), op, []graph.Node{b.Node(x)}, out, fwd, bwd, nil)
	if err != nil {
		return nil, err
	}
	return []*graph.Value{graph.NodeValue(node)}, nil
}

// lowerArgExtreme lowers ArgMax/ArgMin along one axis (first occurrence,
// or the last with select_last_index). The indices are exact in float32
// up to 2^24 and have no gradient.
func lowerArgExtreme(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	x, err := graph.Input(n, in, 0)
	if err != nil {
		return nil, err
	}
	ax, err := graph.AttrInt(n, "axis", 0)
	if err != nil {
		return nil, err
	}
	keep, err := graph.AttrInt(n, "keepdims", 1)
	if err != nil {
		return nil, err
	}
	last, err := graph.AttrInt(n, "select_last_index", 0)
	if err != nil {
		return nil, err
	}
	a, err := graph.NormAxis(n, ax, len(x.Shape))
	if err != nil {
		return nil, err
	}
	outer, d, inner := shape.Numel(x.Shape[:a]), x.Shape[a], shape.Numel(x.Shape[a+1:])
	out := append([]int{}, x.Shape[:a]...)
	if keep != 0 {
		out = append(out, 1)
	}
	out = append(out, x.Shape[a+1:]...)
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
	node, err := b.Kernel(n.GetName(), n.GetOpType(), []graph.Node{b.Node(x)}, out, fwd, nil, nil)
	if err != nil {
		return nil, err
	}
	return []*graph.Value{graph.NodeValue(node)}, nil
}
