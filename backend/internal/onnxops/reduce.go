package onnxops

import (
	"math"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// The reductions. ReduceMean, ReduceSum, ReduceL2 and ReduceProd
// (lowerReduce, float32 kernels of their own); ReduceMax, ReduceMin,
// ReduceL1, ReduceSumSquare, ReduceLogSum and ReduceLogSumExp
// (lowerReduceOther), ReduceMax/ReduceMin sharing the gradient equally
// among tied extrema, as PyTorch's amax/amin do. Axes are an attribute
// until they become an optional input (ReduceSum at opset 13, the others
// at 18); keepdims defaults to 1; noop_with_empty_axes (input form) makes
// empty axes the identity instead of a full reduction. ArgMax and ArgMin
// give int64 indices, computed as floats (select_last_index from opset
// 12).

func init() {
	for _, op := range []string{"ReduceMean", "ReduceSum", "ReduceL2", "ReduceProd"} {
		graph.Register(op, 1, lowerReduce)
	}
	graph.Register("ReduceSum", 13, lowerReduce)
	for _, op := range []string{"ReduceMean", "ReduceL2", "ReduceProd"} {
		graph.Register(op, 18, lowerReduce)
	}
	for _, op := range []string{"ReduceMax", "ReduceMin", "ReduceL1", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"} {
		graph.Register(op, 1, lowerReduceOther)
		graph.Register(op, 18, lowerReduceOther)
	}
	for _, op := range []string{"ArgMax", "ArgMin"} {
		graph.Register(op, 1, lowerArgExtreme)
	}
}

func lowerReduce(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	x, err := graph.Input(n, in, 0)
	if err != nil {
		return nil, err
	}
	op := n.GetOpType()
	// oidx[i]: the output element input element i contributes to.
	out, oidx, identity, err := reduceGeometry(b, n, in, x)
	if err != nil {
		return nil, err
	}
	if identity {
		return []*graph.Value{x}, nil
	}
	cnt := float64(shape.Numel(x.Shape)) / float64(max(1, shape.Numel(out)))
	if x.IsConst() && (op == "ReduceSum" || op == "ReduceProd") {
		// Shape arithmetic (PyTorch's MaxUnpool export multiplies dims):
		// fold, keeping integers integers.
		t := &importer.Tensor{Name: n.Output[0], Type: x.C.Type, Shape: out}
		if x.C.IsFloat() {
			t.Type, t.F64 = importer.Float64, make([]float64, shape.Numel(out))
			for i := range t.F64 {
				if op == "ReduceProd" {
					t.F64[i] = 1
				}
			}
			for i, v := range x.C.Float64s() {
				if op == "ReduceProd" {
					t.F64[oidx[i]] *= v
				} else {
					t.F64[oidx[i]] += v
				}
			}
		} else {
			t.I64 = make([]int64, shape.Numel(out))
			for i := range t.I64 {
				if op == "ReduceProd" {
					t.I64[i] = 1
				}
			}
			for i, v := range x.C.Int64s() {
				if op == "ReduceProd" {
					t.I64[oidx[i]] *= v
				} else {
					t.I64[oidx[i]] += v
				}
			}
		}
		return []*graph.Value{graph.ConstValue(t)}, nil
	}
	if op == "ReduceProd" {
		return lowerReduceProd(b, n, x, out, oidx)
	}
	fwd, fwd32 := reduceFwd[float64](op, oidx, cnt), reduceFwd[float32](op, oidx, cnt)
	bwd64, bwd32g := reduceBwd[float64](op, oidx, cnt), reduceBwd[float32](op, oidx, cnt)
	bwd := func(_ int, dst []float64, in [][]float64, y, g []float64) { bwd64(dst, in[0], y, g) }
	bwd32 := func(_ int, dst []float32, in [][]float32, y, g []float32) bool { bwd32g(dst, in[0], y, g); return true }
	node, err := b.FillingKernel32(n.GetName(), op, []graph.Node{b.Node(x)}, out, fwd, bwd, nil, fwd32, bwd32)
	if err != nil {
		return nil, err
	}
	return []*graph.Value{graph.NodeValue(node)}, nil
}

// reduceFwd is ReduceSum's, ReduceMean's or ReduceL2's forward pass on
// data of type T, writing every element of dst: the sums run in float64
// over the inputs in order (into dst itself for float64, into pooled
// scratch for float32) and each result is rounded once, so float32 data
// gives the float64 path's values rounded (the graph.Forward32Func rule).
func reduceFwd[T graph.Float](op string, oidx []int, cnt float64) func(dst []T, in [][]T) {
	return func(dst []T, in [][]T) {
		acc, ok := any(dst).([]float64)
		if ok {
			clear(acc)
		} else {
			var sc graph.F64Scratch
			defer sc.Release()
			acc = sc.Get(len(dst))
		}
		for i, v := range in[0] {
			if op == "ReduceL2" {
				acc[oidx[i]] += float64(v) * float64(v)
			} else {
				acc[oidx[i]] += float64(v)
			}
		}
		for o, a := range acc {
			switch op {
			case "ReduceMean":
				a /= cnt
			case "ReduceL2":
				a = math.Sqrt(a)
			}
			dst[o] = T(a)
		}
	}
}

// reduceBwd is the gradient of reduceFwd's op with respect to its input x,
// given the output y and its gradient g, writing every element of dst
// (zero where ReduceL2's output is zero), each in float64 rounded once.
func reduceBwd[T graph.Float](op string, oidx []int, cnt float64) func(dst, x, y, g []T) {
	return func(dst, x, y, g []T) {
		for i, v := range x {
			o := oidx[i]
			switch op {
			case "ReduceSum":
				dst[i] = g[o]
			case "ReduceMean":
				dst[i] = T(float64(g[o]) / cnt)
			case "ReduceL2":
				dst[i] = 0
				if y[o] != 0 {
					dst[i] = T(float64(g[o]) * float64(v) / float64(y[o]))
				}
			}
		}
	}
}

// broadcastIndexInto returns, for each element of a tensor of shape big,
// the flat index of the element of shape small (same rank, dims 1 or
// equal) that it broadcasts from.
func broadcastIndexInto(small, big []int) []int {
	idx := shape.BroadcastIndex(small, big)
	if idx == nil {
		return shape.Identity(shape.Numel(big))
	}
	return idx
}

// lowerReduceProd multiplies the elements of x that map to the same output
// element (oidx). The gradient of a product with respect to one factor is
// the product of the others, computed without dividing by zero factors.
func lowerReduceProd(b *graph.Builder, n *onnxpb.NodeProto, x *graph.Value, out []int, oidx []int) ([]*graph.Value, error) {
	fwd := func(dst []float64, in [][]float64) {
		for o := range dst {
			dst[o] = 1
		}
		for i, v := range in[0] {
			dst[oidx[i]] *= v
		}
	}
	bwd := func(_ int, dst []float64, in [][]float64, y, g []float64) {
		zeros := make([]int, len(y))
		nz := make([]float64, len(y)) // product of the non-zero factors
		for o := range nz {
			nz[o] = 1
		}
		for i, v := range in[0] {
			if v == 0 {
				zeros[oidx[i]]++
			} else {
				nz[oidx[i]] *= v
			}
		}
		for i, v := range in[0] {
			o := oidx[i]
			switch {
			case zeros[o] == 0:
				dst[i] = g[o] * nz[o] / v
			case zeros[o] == 1 && v == 0:
				dst[i] = g[o] * nz[o]
			}
		}
	}
	node, err := b.Kernel(n.GetName(), "ReduceProd", []graph.Node{b.Node(x)}, out, fwd, bwd, nil)
	if err != nil {
		return nil, err
	}
	return []*graph.Value{graph.NodeValue(node)}, nil
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

func lowerReduceOther(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
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
