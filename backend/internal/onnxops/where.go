package onnxops

import (
	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/parallel"
	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Where(condition, X, Y) (opset 9; 16 adds bfloat16): X where the
// condition holds, Y elsewhere, the three broadcast together. All-constant
// operands fold at build time (importer.EvalNode); otherwise the condition
// is a BOOL constant or a run-time bool (a float node, non-zero is true)
// and the gradient reaches X where the condition holds and Y elsewhere,
// never the condition.

func init() { graph.Register("Where", 9, lowerWhere) }

func lowerWhere(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	var ops [3]*graph.Value
	for i := range ops {
		v, err := graph.Input(n, in, i)
		if err != nil {
			return nil, err
		}
		ops[i] = v
	}
	c, x, y := ops[0], ops[1], ops[2]
	if err := refuseIntNodes(n, c, x, y); err != nil {
		return nil, err
	}
	if c.IsConst() && x.IsConst() && y.IsConst() {
		return evalConst(b, n, []*importer.Tensor{c.C, x.C, y.C})
	}
	out, err := shape.Broadcast(c.Shape, x.Shape)
	if err == nil {
		out, err = shape.Broadcast(out, y.Shape)
	}
	if err != nil {
		return nil, graph.NodeErr(n, "inputs %q, %q and %q: %v", n.Input[0], n.Input[1], n.Input[2], err)
	}
	ic, ix, iy := shape.NewBcast(c.Shape, out), shape.NewBcast(x.Shape, out), shape.NewBcast(y.Shape, out)
	at := atB
	fwd := func(dst []float64, in [][]float64) {
		cv, xv, yv := in[0], in[1], in[2]
		for i := range dst {
			if cv[at(ic, i)] != 0 {
				dst[i] = xv[at(ix, i)]
			} else {
				dst[i] = yv[at(iy, i)]
			}
		}
	}
	// d out / d X is the condition, d out / d Y its negation.
	bwd := func(k int, dst []float64, in [][]float64, _, g []float64) {
		cv, idx, want := in[0], ix, true
		if k == 2 {
			idx, want = iy, false
		}
		for i, gi := range g {
			if (cv[at(ic, i)] != 0) == want {
				dst[at(idx, i)] += gi
			}
		}
	}
	fwd32 := func(dst []float32, in [][]float32) {
		cv, xv, yv := in[0], in[1], in[2]
		parallel.Elems(len(dst), func(lo, hi int) {
			for i := lo; i < hi; i++ {
				if cv[at(ic, i)] != 0 {
					dst[i] = xv[at(ix, i)]
				} else {
					dst[i] = yv[at(iy, i)]
				}
			}
		})
	}
	bwd32 := func(k int, dst []float32, in [][]float32, _, g []float32) bool {
		idx, want := ix, true
		if k == 2 {
			idx, want = iy, false
		}
		cv := in[0]
		gradTerms32(dst, idx, len(g), func(i int) float64 {
			if (cv[at(ic, i)] != 0) == want {
				return float64(g[i])
			}
			return 0
		})
		return true
	}
	diff := []bool{false, !x.IsConst(), !y.IsConst()}
	r, err := b.Kernel32(n.GetName(), "Where", []graph.Node{b.Node(c), b.Node(x), b.Node(y)}, out, fwd, bwd, diff, fwd32, bwd32)
	if err != nil {
		return nil, err
	}
	op := r.Op().(*graph.KernelOp)
	op.Fills = true
	return []*graph.Value{graph.NodeValue(r)}, nil
}

// gradTerms32 writes into dst, every element, the float32 gradient of an
// operand read through idx (nil: not broadcast) from the terms term(i)
// of the result's elements i < n: one term per element is rounded once;
// a broadcast operand's terms are summed in float64 in result order (the
// float64 closures' order) and rounded once.
func gradTerms32(dst []float32, idx *shape.Bcast, n int, term func(i int) float64) {
	if idx == nil {
		parallel.Elems(n, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				dst[i] = float32(0 + term(i)) // 0 + : the float64 path adds into zeros (no −0)
			}
		})
		return
	}
	var sc graph.F64Scratch
	defer sc.Release()
	acc := sc.Get(len(dst))
	for i := 0; i < n; i++ {
		acc[idx.At(i)] += term(i)
	}
	for i, v := range acc {
		dst[i] = float32(v)
	}
}
