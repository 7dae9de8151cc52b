package onnxops

import (
	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/parallel"
	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Comparison and logic ops: Equal, Greater, Less, GreaterOrEqual,
// LessOrEqual (numpy broadcasting), And, Or, Xor and Not.
//
// A bool known at build time is a constant of element type BOOL (values
// in I64), computed exactly: integer operands compare as int64. A bool
// computed at run time is a float node of the graph's type holding 0 or 1,
// as every run-time value is a float (Where, Cast, Mul and the logic ops
// read any non-zero value as true). Comparisons and logic have no
// gradient: a loss reaches the compared values only through the branches
// that use them (Where's x and y, a Mul by a mask's other operand).

func init() {
	for _, op := range []string{"Equal", "Greater", "Less", "And", "Or", "Xor"} {
		graph.Register(op, 7, lowerCompare)
	}
	for _, op := range []string{"GreaterOrEqual", "LessOrEqual"} {
		graph.Register(op, 12, lowerCompare)
	}
	graph.Register("Not", 1, lowerNot)
}

// compareOp is one binary bool op on float64 and on int64 operands.
type compareOp struct {
	f  func(a, b float64) bool
	fi func(a, b int64) bool
}

var compareOps = map[string]compareOp{
	"Equal":          {func(a, b float64) bool { return a == b }, func(a, b int64) bool { return a == b }},
	"Greater":        {func(a, b float64) bool { return a > b }, func(a, b int64) bool { return a > b }},
	"Less":           {func(a, b float64) bool { return a < b }, func(a, b int64) bool { return a < b }},
	"GreaterOrEqual": {func(a, b float64) bool { return a >= b }, func(a, b int64) bool { return a >= b }},
	"LessOrEqual":    {func(a, b float64) bool { return a <= b }, func(a, b int64) bool { return a <= b }},
	"And":            {func(a, b float64) bool { return a != 0 && b != 0 }, func(a, b int64) bool { return a != 0 && b != 0 }},
	"Or":             {func(a, b float64) bool { return a != 0 || b != 0 }, func(a, b int64) bool { return a != 0 || b != 0 }},
	"Xor":            {func(a, b float64) bool { return (a != 0) != (b != 0) }, func(a, b int64) bool { return (a != 0) != (b != 0) }},
}

// b2f is a bool as a run-time value (1 or 0).
func b2f(v bool) float64 {
	if v {
		return 1
	}
	return 0
}

// b2f32 is b2f in float32.
func b2f32(v bool) float32 {
	if v {
		return 1
	}
	return 0
}

// boolElem is a bool as a constant's element (1 or 0).
func boolElem(v bool) int64 {
	if v {
		return 1
	}
	return 0
}

// refuseIntNodes errors when an operand is a run-time int64 node (MaxPool
// indices): bools computed from them are not supported.
func refuseIntNodes(n *onnxpb.NodeProto, ins ...*graph.Value) error {
	for i, v := range ins {
		if graph.IsIntNode(v) {
			return graph.NodeErr(n, "input %d (%q) is a run-time int64 tensor (MaxPool indices): %s of run-time integer tensors is not supported", i, n.Input[i], n.GetOpType())
		}
	}
	return nil
}

func lowerCompare(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	op := compareOps[n.GetOpType()]
	x, err := graph.Input(n, in, 0)
	if err != nil {
		return nil, err
	}
	y, err := graph.Input(n, in, 1)
	if err != nil {
		return nil, err
	}
	if err := refuseIntNodes(n, x, y); err != nil {
		return nil, err
	}
	out, err := shape.Broadcast(x.Shape, y.Shape)
	if err != nil {
		return nil, graph.NodeErr(n, "inputs %q and %q: %v", n.Input[0], n.Input[1], err)
	}
	ia, ib := shape.NewBcast(x.Shape, out), shape.NewBcast(y.Shape, out)
	at := atB
	if x.IsConst() && y.IsConst() {
		t := &importer.Tensor{Name: n.Output[0], Type: importer.Bool, Shape: out, I64: make([]int64, shape.Numel(out))}
		if !x.C.IsFloat() && !y.C.IsFloat() {
			a, c := x.C.Int64s(), y.C.Int64s()
			for i := range t.I64 {
				t.I64[i] = boolElem(op.fi(a[at(ia, i)], c[at(ib, i)]))
			}
		} else {
			a, c := x.C.Float64s(), y.C.Float64s()
			for i := range t.I64 {
				t.I64[i] = boolElem(op.f(a[at(ia, i)], c[at(ib, i)]))
			}
		}
		return []*graph.Value{graph.ConstValue(t)}, nil
	}
	fwd := func(dst []float64, in [][]float64) {
		a, c := in[0], in[1]
		for i := range dst {
			dst[i] = b2f(op.f(a[at(ia, i)], c[at(ib, i)]))
		}
	}
	fwd32 := func(dst []float32, in [][]float32) {
		a, c := in[0], in[1]
		parallel.Elems(len(dst), func(lo, hi int) {
			for i := lo; i < hi; i++ {
				dst[i] = b2f32(op.f(float64(a[at(ia, i)]), float64(c[at(ib, i)])))
			}
		})
	}
	r, err := b.FillingKernel32(n.GetName(), n.GetOpType(), []graph.Node{b.Node(x), b.Node(y)}, out, fwd, nil, nil, fwd32, nil)
	if err != nil {
		return nil, err
	}
	return []*graph.Value{graph.NodeValue(r)}, nil
}

func lowerNot(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	x, err := graph.Input(n, in, 0)
	if err != nil {
		return nil, err
	}
	if err := refuseIntNodes(n, x); err != nil {
		return nil, err
	}
	if x.IsConst() {
		t := &importer.Tensor{Name: n.Output[0], Type: importer.Bool, Shape: append([]int{}, x.Shape...), I64: make([]int64, shape.Numel(x.Shape))}
		if x.C.IsFloat() {
			for i, v := range x.C.Float64s() {
				t.I64[i] = boolElem(v == 0)
			}
		} else {
			for i, v := range x.C.Int64s() {
				t.I64[i] = boolElem(v == 0)
			}
		}
		return []*graph.Value{graph.ConstValue(t)}, nil
	}
	r, err := boolOf(b, n, x, func(v float64) bool { return v == 0 })
	if err != nil {
		return nil, err
	}
	return []*graph.Value{r}, nil
}

// boolOf adds a node computing the bool pred(x) of each element of the
// run-time value x (1 or 0, no gradient): Not, Cast to BOOL.
func boolOf(b *graph.Builder, n *onnxpb.NodeProto, x *graph.Value, pred func(float64) bool) (*graph.Value, error) {
	fwd := func(dst []float64, in [][]float64) {
		for i, v := range in[0] {
			dst[i] = b2f(pred(v))
		}
	}
	fwd32 := func(dst []float32, in [][]float32) {
		parallel.Elems(len(dst), func(lo, hi int) {
			for i, v := range in[0][lo:hi] {
				dst[lo+i] = b2f32(pred(float64(v)))
			}
		})
	}
	r, err := b.FillingKernel32(n.GetName(), n.GetOpType(), []graph.Node{b.Node(x)}, x.Shape, fwd, nil, nil, fwd32, nil)
	if err != nil {
		return nil, err
	}
	return graph.NodeValue(r), nil
}
