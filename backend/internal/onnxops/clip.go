package onnxops

import (
	"math"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Clip: bounds are attributes before opset 11, optional inputs from 11 on
// (they must be known when the graph is built).

func init() {
	graph.Register("Clip", 1, lowerClip)
	graph.Register("Clip", 11, lowerClip)
}

func lowerClip(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	lo, hi := math.Inf(-1), math.Inf(1)
	if b.Opset < 11 {
		var err error
		if lo, err = graph.AttrFloat(n, "min", lo); err != nil {
			return nil, err
		}
		if hi, err = graph.AttrFloat(n, "max", hi); err != nil {
			return nil, err
		}
	} else {
		for i, p := range []*float64{&lo, &hi} {
			if graph.OptInput(in, i+1) == nil {
				continue
			}
			t, err := graph.ConstInput(n, in, i+1, []string{"min", "max"}[i])
			if err != nil {
				return nil, err
			}
			if t.Len() != 1 {
				return nil, graph.NodeErr(n, "input %d must be a scalar, has shape %v", i+1, t.Shape)
			}
			*p = t.Float64s()[0]
		}
	}
	// PyTorch's clamp passes the gradient where lo <= x <= hi.
	return b.Unary(n, in[:1], func(x float64) float64 { return math.Min(math.Max(x, lo), hi) },
		func(x, _ float64) float64 {
			if x >= lo && x <= hi {
				return 1
			}
			return 0
		})
}
