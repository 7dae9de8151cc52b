package onnxops

import (
	"math"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Variadic element-wise Sum, Mean, Max, Min with numpy broadcasting (from
// opset 8; before it the inputs must have equal shapes, which is the same
// rule for valid models). Max/Min send the gradient to the inputs holding
// the extremum, shared equally among ties.

func init() {
	for _, op := range []string{"Sum", "Mean", "Max", "Min"} {
		graph.Register(op, 1, lowerVariadic)
	}
}

func lowerVariadic(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	var xs []*graph.Value
	for i := range in {
		x, err := graph.Input(n, in, i)
		if err != nil {
			return nil, err
		}
		xs = append(xs, x)
	}
	if len(xs) == 0 {
		return nil, graph.NodeErr(n, "needs at least one input (opset %d)", b.Opset)
	}
	op := n.GetOpType()
	out := xs[0].Shape
	for i, x := range xs[1:] {
		var err error
		if out, err = shape.Broadcast(out, x.Shape); err != nil {
			return nil, graph.NodeErr(n, "input %d %q (opset %d): %v", i+1, n.Input[i+1], b.Opset, err)
		}
	}
	idx := make([][]int, len(xs))
	nodes := make([]graph.Node, len(xs))
	for i, x := range xs {
		if idx[i] = shape.BroadcastIndex(x.Shape, out); idx[i] == nil {
			idx[i] = shape.Identity(shape.Numel(out))
		}
		nodes[i] = b.Node(x)
	}
	k := float64(len(xs))
	fwd := func(dst []float64, in [][]float64) {
		for j := range dst {
			v := in[0][idx[0][j]]
			for i := 1; i < len(in); i++ {
				w := in[i][idx[i][j]]
				switch op {
				case "Sum", "Mean":
					v += w
				case "Max":
					if w > v || math.IsNaN(w) {
						v = w
					}
				case "Min":
					if w < v || math.IsNaN(w) {
						v = w
					}
				}
			}
			if op == "Mean" {
				v /= k
			}
			dst[j] = v
		}
	}
	bwd := func(i int, dst []float64, in [][]float64, y, g []float64) {
		for j := range g {
			switch op {
			case "Sum":
				dst[idx[i][j]] += g[j]
			case "Mean":
				dst[idx[i][j]] += g[j] / k
			default:
				if in[i][idx[i][j]] != y[j] {
					continue
				}
				ties := 0.0
				for l := range in {
					if in[l][idx[l][j]] == y[j] {
						ties++
					}
				}
				dst[idx[i][j]] += g[j] / ties
			}
		}
	}
	r, err := b.Kernel(n.GetName(), op, nodes, out, fwd, bwd, nil)
	if err != nil {
		return nil, err
	}
	return []*graph.Value{graph.NodeValue(r)}, nil
}
