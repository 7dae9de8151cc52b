package loss

import (
	"fmt"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/shape"
)

// output: the ONNX value already is the scalar loss (a single element).

func init() {
	register(Kind{
		Name:    "output",
		Summary: "the output itself, a single element: a model that computes its own loss (taken as a batch mean)",
		Target:  "no target: the output already is the scalar loss",
		Build:   outputLoss,
	})
}

func outputLoss(b *graph.Builder, h Head, out, _ graph.Node) (graph.Node, error) {
	if shape.Numel(out.Shape()) != 1 {
		return nil, fmt.Errorf("task %q: output %q has shape %v; loss \"output\" needs a single element", h.Task, h.Output, out.Shape())
	}
	return b.Kernel("loss:"+h.Task, "output", []graph.Node{out}, nil,
		func(dst []float64, in [][]float64) { dst[0] = in[0][0] },
		func(_ int, dst []float64, _ [][]float64, _, g []float64) { dst[0] = g[0] }, nil)
}
