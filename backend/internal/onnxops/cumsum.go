package onnxops

import (
	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/parallel"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// CumSum (opset 11; 14 adds bfloat16 and float16): running sums of x along
// axis (an input, a constant scalar or one-element tensor), exclusive
// (each sum leaves out its own element) and reverse (summing from the
// end) as the attributes say. A constant x is summed at build time
// (exactly, in int64, for integers: positions counted from a mask). The
// gradient of a running sum is the running sum of the output gradient in
// the other direction, with the same exclusive.

func init() { graph.Register("CumSum", 11, lowerCumSum) }

func lowerCumSum(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	x, err := graph.Input(n, in, 0)
	if err != nil {
		return nil, err
	}
	if err := refuseIntNodes(n, x); err != nil {
		return nil, err
	}
	at, err := graph.ConstInput(n, in, 1, "axis")
	if err != nil {
		return nil, err
	}
	if at.Len() != 1 || len(at.Shape) > 1 {
		return nil, graph.NodeErr(n, "axis %q has shape %v, expected a scalar", n.Input[1], at.Shape)
	}
	exclusive, err := graph.AttrInt(n, "exclusive", 0)
	if err != nil {
		return nil, err
	}
	reverse, err := graph.AttrInt(n, "reverse", 0)
	if err != nil {
		return nil, err
	}
	axis, err := graph.NormAxis(n, at.Int64s()[0], len(x.Shape))
	if err != nil {
		return nil, err
	}
	outer, d, inner := 1, x.Shape[axis], 1
	for _, s := range x.Shape[:axis] {
		outer *= s
	}
	for _, s := range x.Shape[axis+1:] {
		inner *= s
	}
	excl, rev := exclusive != 0, reverse != 0
	if x.IsConst() {
		t := &importer.Tensor{Name: n.Output[0], Type: x.C.Type, Shape: append([]int{}, x.Shape...)}
		if x.C.IsFloat() {
			t.Type, t.F64 = importer.Float64, make([]float64, x.C.Len())
			cumSum(t.F64, x.C.Float64s(), outer, d, inner, excl, rev)
		} else {
			t.I64 = make([]int64, x.C.Len())
			cumSum(t.I64, x.C.Int64s(), outer, d, inner, excl, rev)
		}
		return []*graph.Value{graph.ConstValue(t)}, nil
	}
	fwd := func(dst []float64, in [][]float64) { cumSum(dst, in[0], outer, d, inner, excl, rev) }
	bwd := func(_ int, dst []float64, _ [][]float64, _, g []float64) { cumSum(dst, g, outer, d, inner, excl, !rev) }
	fwd32 := func(dst []float32, in [][]float32) { cumSum32(dst, in[0], outer, d, inner, excl, rev) }
	bwd32 := func(_ int, dst []float32, _ [][]float32, _, g []float32) bool {
		cumSum32(dst, g, outer, d, inner, excl, !rev)
		return true
	}
	r, err := b.FillingKernel32(n.GetName(), "CumSum", []graph.Node{b.Node(x)}, x.Shape, fwd, bwd, nil, fwd32, bwd32)
	if err != nil {
		return nil, err
	}
	// The gradient reads only the output gradient.
	r.Op().(*graph.KernelOp).GradReads = []bool{false, false, true}
	return []*graph.Value{graph.NodeValue(r)}, nil
}

// cumSum writes into dst the running sums of src ([outer, d, inner]
// row-major) along its middle axis, every element.
func cumSum[T int64 | float64](dst, src []T, outer, d, inner int, exclusive, reverse bool) {
	for o := 0; o < outer; o++ {
		for j := 0; j < inner; j++ {
			var s T
			for k := 0; k < d; k++ {
				kk := k
				if reverse {
					kk = d - 1 - k
				}
				i := (o*d+kk)*inner + j
				if exclusive {
					dst[i] = s
					s += src[i]
				} else {
					s += src[i]
					dst[i] = s
				}
			}
		}
	}
}

// cumSum32 is cumSum on float32 data summing in float64, each result
// rounded once (the float64 path's values).
func cumSum32(dst, src []float32, outer, d, inner int, exclusive, reverse bool) {
	parallel.Items(outer, d*inner, func(lo, hi int) {
		for o := lo; o < hi; o++ {
			for j := 0; j < inner; j++ {
				var s float64
				for k := 0; k < d; k++ {
					kk := k
					if reverse {
						kk = d - 1 - k
					}
					i := (o*d+kk)*inner + j
					if exclusive {
						dst[i] = float32(s)
						s += float64(src[i])
					} else {
						s += float64(src[i])
						dst[i] = float32(s)
					}
				}
			}
		}
	})
}
