package onnxops

import (
	"math"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Element-wise math: Sqrt, Exp, Log, Neg, Abs.

func init() {
	graph.Register("Sqrt", 1, func(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
		return b.Unary(n, in, math.Sqrt, func(_, y float64) float64 { return 0.5 / y })
	})
	graph.Register("Exp", 1, func(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
		return b.Unary(n, in, math.Exp, func(_, y float64) float64 { return y })
	})
	graph.Register("Log", 1, func(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
		return b.Unary(n, in, math.Log, func(x, _ float64) float64 { return 1 / x })
	})
	graph.Register("Neg", 1, lowerNeg)
	graph.Register("Abs", 1, func(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
		return b.Unary(n, in, math.Abs, func(x, _ float64) float64 {
			switch {
			case x > 0:
				return 1
			case x < 0:
				return -1
			}
			return 0
		})
	})
}

// lowerNeg keeps integer constants integers (shape arithmetic).
func lowerNeg(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	if x := graph.OptInput(in, 0); x.IsConst() && !x.C.IsFloat() {
		t := *x.C
		t.I64 = make([]int64, len(x.C.I64))
		for i, v := range x.C.I64 {
			t.I64[i] = -v
		}
		return []*graph.Value{graph.ConstValue(&t)}, nil
	}
	return b.Unary(n, in, func(x float64) float64 { return -x }, func(_, _ float64) float64 { return -1 })
}
