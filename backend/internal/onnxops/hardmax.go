package onnxops

import (
	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Hardmax: 1 at the first maximum, 0 elsewhere. Before opset 13 the input
// is coerced to 2-D at axis (default 1), from 13 on the op works along one
// axis (default -1), as Softmax. Its gradient is zero.

func init() {
	graph.Register("Hardmax", 1, lowerHardmax)
	graph.Register("Hardmax", 13, lowerHardmax)
}

func lowerHardmax(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	x, err := graph.Input(n, in, 0)
	if err != nil {
		return nil, err
	}
	outer, d, inner, err := softmaxSplit(b, n, x)
	if err != nil {
		return nil, err
	}
	fwd := func(dst []float64, in [][]float64) {
		src := in[0]
		for o := 0; o < outer; o++ {
			for j := 0; j < inner; j++ {
				bi := 0
				for k := 1; k < d; k++ {
					if src[(o*d+k)*inner+j] > src[(o*d+bi)*inner+j] {
						bi = k
					}
				}
				if d > 0 {
					dst[(o*d+bi)*inner+j] = 1
				}
			}
		}
	}
	bwd := func(int, []float64, [][]float64, []float64, []float64) {} // zero
	node, err := b.Kernel(n.GetName(), "Hardmax", []graph.Node{b.Node(x)}, x.Shape, fwd, bwd, nil)
	if err != nil {
		return nil, err
	}
	return []*graph.Value{graph.NodeValue(node)}, nil
}
