package graph

import (
	"github.com/paretonav/paretonav/backend/internal/shape"
	G "gorgonia.org/gorgonia"
)

// ConcatSink adds a kernel copying the flat values of ns into one vector.
// It has no gradient.
func ConcatSink(b *Builder, name string, ns G.Nodes) (Node, error) {
	total := 0
	for _, n := range ns {
		total += shape.Numel(n.Shape())
	}
	return b.Kernel(name, "sink", ns, []int{total}, func(dst []float64, in [][]float64) {
		off := 0
		for _, d := range in {
			off += copy(dst[off:], d)
		}
	}, nil, nil)
}

// IntSink adds a node copying the flat values of the int64 nodes ns into
// one int64 vector.
func IntSink(ns G.Nodes) (Node, error) {
	op := &IntKernelOp{name: "outputs", kind: "sink", id: kernelIDs.Add(1), consts: make([][]int64, len(ns))}
	total := 0
	for _, n := range ns {
		op.ins = append(op.ins, append([]int{}, n.Shape()...))
		total += shape.Numel(n.Shape())
	}
	op.out = []int{total}
	op.fwd = func(dst []int64, in [][]int64) {
		off := 0
		for _, d := range in {
			off += copy(dst[off:], d)
		}
	}
	return G.ApplyOp(op, ns...)
}
