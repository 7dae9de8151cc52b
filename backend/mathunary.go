package backend

import (
	"math"

	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Element-wise math: Sqrt, Exp, Log, Neg, Abs.

func init() {
	register("Sqrt", 1, func(b *builder, n *onnxpb.NodeProto, in []*value) ([]*value, error) {
		return b.unary(n, in, math.Sqrt, func(_, y float64) float64 { return 0.5 / y })
	})
	register("Exp", 1, func(b *builder, n *onnxpb.NodeProto, in []*value) ([]*value, error) {
		return b.unary(n, in, math.Exp, func(_, y float64) float64 { return y })
	})
	register("Log", 1, func(b *builder, n *onnxpb.NodeProto, in []*value) ([]*value, error) {
		return b.unary(n, in, math.Log, func(x, _ float64) float64 { return 1 / x })
	})
	register("Neg", 1, lowerNeg)
	register("Abs", 1, func(b *builder, n *onnxpb.NodeProto, in []*value) ([]*value, error) {
		return b.unary(n, in, math.Abs, func(x, _ float64) float64 {
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
func lowerNeg(b *builder, n *onnxpb.NodeProto, in []*value) ([]*value, error) {
	if x := optInput(in, 0); x.isConst() && !x.c.IsFloat() {
		t := *x.c
		t.I64 = make([]int64, len(x.c.I64))
		for i, v := range x.c.I64 {
			t.I64[i] = -v
		}
		return []*value{constValue(&t)}, nil
	}
	return b.unary(n, in, func(x float64) float64 { return -x }, func(_, _ float64) float64 { return -1 })
}
