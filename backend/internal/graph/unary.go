package graph

import (
	"github.com/paretonav/paretonav/backend/internal/parallel"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Unary lowers an element-wise op y = f(x) with derivative df(x, y). A
// constant input gives a constant (float64) result.
func (b *Builder) Unary(n *onnxpb.NodeProto, in []*Value, f func(x float64) float64, df func(x, y float64) float64) ([]*Value, error) {
	x, err := Input(n, in, 0)
	if err != nil {
		return nil, err
	}
	if x.IsConst() {
		src := x.C.Float64s()
		out := make([]float64, len(src))
		for i, v := range src {
			out[i] = f(v)
		}
		return []*Value{ConstValue(&importer.Tensor{Name: n.Output[0], Type: importer.Float64, Shape: append([]int{}, x.Shape...), F64: out})}, nil
	}
	fwd := func(dst []float64, in [][]float64) {
		for i, v := range in[0] {
			dst[i] = f(v)
		}
	}
	bwd := func(_ int, dst []float64, in [][]float64, out, g []float64) {
		for i := range dst {
			var v float64
			if in[0] != nil {
				v = in[0][i]
			}
			dst[i] = g[i] * df(v, out[i])
		}
	}
	fwd32 := func(dst []float32, in [][]float32) {
		parallel.Elems(len(dst), func(lo, hi int) {
			for i, v := range in[0][lo:hi] {
				dst[lo+i] = float32(f(float64(v)))
			}
		})
	}
	bwd32 := func(_ int, dst []float32, in [][]float32, out, g []float32) bool {
		out = out[:len(dst)]
		g = g[:len(dst)]
		x := in[0]
		if x == nil { // unaryOut: df reads y only
			parallel.Elems(len(dst), func(lo, hi int) {
				for i, y := range out[lo:hi] {
					dst[lo+i] = float32(float64(g[lo+i]) * df(0, float64(y)))
				}
			})
			return true
		}
		x = x[:len(dst)]
		parallel.Elems(len(dst), func(lo, hi int) {
			for i, v := range x[lo:hi] {
				dst[lo+i] = float32(float64(g[lo+i]) * df(float64(v), float64(out[lo+i])))
			}
		})
		return true
	}
	r, err := b.FillingKernel32(n.GetName(), n.GetOpType(), []Node{b.Node(x)}, x.Shape, fwd, bwd, nil, fwd32, bwd32)
	if err != nil {
		return nil, err
	}
	return []*Value{NodeValue(r)}, nil
}

// UnaryOut is unary for an op whose derivative is a function of its output
// alone (dfy(y)): its gradient reads only y and the incoming gradient, so
// the executor need not keep the input x for the backward passes.
func (b *Builder) UnaryOut(n *onnxpb.NodeProto, in []*Value, f func(x float64) float64, dfy func(y float64) float64) ([]*Value, error) {
	v, err := b.Unary(n, in, f, func(_, y float64) float64 { return dfy(y) })
	if err != nil || v[0].IsConst() {
		return v, err
	}
	if op, ok := v[0].N.Op().(*KernelOp); ok {
		op.GradReads = []bool{false, true, true}
	}
	return v, nil
}
