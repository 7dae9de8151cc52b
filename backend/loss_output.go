package backend

import (
	"fmt"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/shape"
)

// output: the ONNX value already is the scalar loss (a single element).

func init() {
	lossHeads["output"] = lossHead{build: func(b *graph.Builder, t Task, out, _ graph.Node) (graph.Node, error) {
		if shape.Numel(out.Shape()) != 1 {
			return nil, fmt.Errorf("task %q: output %q has shape %v; loss \"output\" needs a single element", t.Name, t.Output, out.Shape())
		}
		return b.Kernel("loss:"+t.Name, "output", []graph.Node{out}, nil,
			func(dst []float64, in [][]float64) { dst[0] = in[0][0] },
			func(_ int, dst []float64, _ [][]float64, _, g []float64) { dst[0] = g[0] }, nil)
	}}
}
