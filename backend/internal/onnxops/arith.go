package onnxops

import (
	"math"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/parallel"
	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Element-wise arithmetic with numpy broadcasting: Add, Sub, Mul, Div, Pow.
// Add, Sub, Mul and Div of run-time int64 tensors (MaxPool indices) with
// integers are computed exactly in int64, without gradient (intnode.go).

func init() {
	for _, op := range []string{"Add", "Sub", "Mul", "Div"} {
		graph.Register(op, 1, lowerArith)
	}
	graph.Register("Pow", 1, lowerArith)
}

// arith describes one binary op: f(a, b) and its partial derivatives
// given a, b and the output y.
type arith struct {
	f      func(a, b float64) float64
	fi     func(a, b int64) int64 // integer version (nil: ints are not supported)
	da, db func(a, b, y float64) float64
}

var ariths = map[string]arith{
	"Add": {func(a, b float64) float64 { return a + b }, func(a, b int64) int64 { return a + b },
		func(_, _, _ float64) float64 { return 1 }, func(_, _, _ float64) float64 { return 1 }},
	"Sub": {func(a, b float64) float64 { return a - b }, func(a, b int64) int64 { return a - b },
		func(_, _, _ float64) float64 { return 1 }, func(_, _, _ float64) float64 { return -1 }},
	"Mul": {func(a, b float64) float64 { return a * b }, func(a, b int64) int64 { return a * b },
		func(_, b, _ float64) float64 { return b }, func(a, _, _ float64) float64 { return a }},
	"Div": {func(a, b float64) float64 { return a / b }, func(a, b int64) int64 {
		if b == 0 {
			return 0
		}
		return a / b
	},
		func(_, b, _ float64) float64 { return 1 / b }, func(_, b, y float64) float64 { return -y / b }},
	"Pow": {math.Pow, nil,
		func(a, b, _ float64) float64 {
			if b == 0 {
				return 0
			}
			return b * math.Pow(a, b-1)
		},
		func(a, _, y float64) float64 {
			if a <= 0 {
				return 0
			}
			return math.Log(a) * y
		}},
}

func lowerArith(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	op := ariths[n.GetOpType()]
	x, err := graph.Input(n, in, 0)
	if err != nil {
		return nil, err
	}
	y, err := graph.Input(n, in, 1)
	if err != nil {
		return nil, err
	}
	out, err := shape.Broadcast(x.Shape, y.Shape)
	if err != nil {
		return nil, graph.NodeErr(n, "inputs %q and %q: %v", n.Input[0], n.Input[1], err)
	}
	ia, ib := shape.NewBcast(x.Shape, out), shape.NewBcast(y.Shape, out)
	at := atB
	if graph.IsIntNode(x) || graph.IsIntNode(y) {
		if op.fi == nil {
			return nil, graph.NodeErr(n, "%s of run-time int64 tensors is not supported", n.GetOpType())
		}
		v, err := b.IntOp(n, n.GetOpType(), []*graph.Value{x, y}, out, func(dst []int64, in [][]int64) {
			for i := range dst {
				dst[i] = op.fi(in[0][at(ia, i)], in[1][at(ib, i)])
			}
		})
		if err != nil {
			return nil, err
		}
		return []*graph.Value{v}, nil
	}
	if x.IsConst() && y.IsConst() {
		t := &importer.Tensor{Name: n.Output[0], Shape: out}
		if !x.C.IsFloat() && !y.C.IsFloat() && op.fi != nil {
			a, c := x.C.Int64s(), y.C.Int64s()
			t.Type, t.I64 = x.C.Type, make([]int64, shape.Numel(out))
			for i := range t.I64 {
				t.I64[i] = op.fi(a[at(ia, i)], c[at(ib, i)])
			}
		} else {
			a, c := x.C.Float64s(), y.C.Float64s()
			t.Type, t.F64 = importer.Float64, make([]float64, shape.Numel(out))
			for i := range t.F64 {
				t.F64[i] = op.f(a[at(ia, i)], c[at(ib, i)])
			}
		}
		return []*graph.Value{graph.ConstValue(t)}, nil
	}
	fwd := func(dst []float64, in [][]float64) {
		a, c := in[0], in[1]
		if ia == nil && ib == nil {
			for i := range dst {
				dst[i] = op.f(a[i], c[i])
			}
			return
		}
		for i := range dst {
			dst[i] = op.f(a[at(ia, i)], c[at(ib, i)])
		}
	}
	bwd := func(k int, dst []float64, in [][]float64, y, g []float64) {
		a, c := in[0], in[1]
		d, idx := op.da, ia
		if k == 1 {
			d, idx = op.db, ib
		}
		for i := range g {
			ai, ci := at(ia, i), at(ib, i)
			dst[at(idx, i)] += g[i] * d(a[ai], c[ci], y[i])
		}
	}
	opType := n.GetOpType()
	fwd32 := func(dst []float32, in [][]float32) {
		a, c := in[0], in[1]
		if ia == nil && ib == nil && arith32(opType, dst, a, c) {
			return
		}
		if ia == nil && ib == nil {
			a, c = a[:len(dst)], c[:len(dst)]
			for i := range dst {
				dst[i] = float32(op.f(float64(a[i]), float64(c[i])))
			}
			return
		}
		if arithBcast32(opType, dst, a, c, ia, ib) {
			return
		}
		parallel.Elems(len(dst), func(lo, hi int) {
			for i := lo; i < hi; i++ {
				dst[i] = float32(op.f(float64(a[at(ia, i)]), float64(c[at(ib, i)])))
			}
		})
	}
	// The float32 gradient of an input that is not broadcast has one term
	// per element; that of a broadcast input sums several terms in float64
	// in the float64 path's order (arithGradReduce32), rounded once.
	bwd32 := func(k int, dst []float32, in [][]float32, y, g []float32) bool {
		a, c := in[0], in[1]
		d, idx, oi := op.da, ia, ib
		if k == 1 {
			d, idx, oi = op.db, ib, ia
		}
		if idx != nil {
			var sc graph.F64Scratch
			defer sc.Release()
			arithGradReduce32(opType, k, dst, sc.Get(len(dst)), a, c, y, g, ia, ib, d)
			return true
		}
		if ia == nil && ib == nil && arithGrad32(opType, k, dst, a, c, g) {
			return true
		}
		if arithGradSpread32(opType, k, dst, a, c, g, oi) {
			return true
		}
		parallel.Elems(len(g), func(lo, hi int) {
			for i := lo; i < hi; i++ {
				ai, ci := at(ia, i), at(ib, i)
				dst[i] = 0 + float32(float64(g[i])*d(float64(a[ai]), float64(c[ci]), float64(y[i])))
			}
		})
		return true
	}
	var diff []bool
	if n.GetOpType() == "Pow" && y.IsConst() {
		diff = []bool{true, false}
	}
	r, err := b.FillingKernel32(n.GetName(), n.GetOpType(), []graph.Node{b.Node(x), b.Node(y)}, out, fwd, bwd, diff, fwd32, bwd32)
	if err != nil {
		return nil, err
	}
	return []*graph.Value{graph.NodeValue(r)}, nil
}
