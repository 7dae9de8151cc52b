package backend

import (
	"fmt"

	"github.com/paretonav/paretonav/backend/internal/graph"
)

// lossHead appends the loss of one task to the graph: out is the model's
// value, target the node holding the target array (nil for "output"). It
// returns a scalar node.
type lossHead struct {
	// targetShape gives the shape of the target array for an output of
	// shape out (checked against the data before each build).
	targetShape func(out []int) ([]int, error)
	// integer reports whether targets are class indices.
	integer bool
	build   func(b *graph.Builder, t Task, out, target graph.Node) (graph.Node, error)
}

// lossHeads maps a loss kind to its head; loss family files fill it in
// init.
var lossHeads = map[string]lossHead{}

func sameShape(out []int) ([]int, error) { return append([]int{}, out...), nil }

// classTargetShape: [N, C, d...] → [N, d...].
func classTargetShape(out []int) ([]int, error) {
	if len(out) < 2 {
		return nil, fmt.Errorf("class scores must have shape [N, C, ...], have %v", out)
	}
	return append(append([]int{}, out[0]), out[2:]...), nil
}

// IntegerTarget reports whether the targets of loss kind loss are class
// indices (nll, ce) rather than values in the output's units.
func IntegerTarget(loss string) bool { return lossHeads[loss].integer }
