package onnxops

import (
	"math"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/parallel"
	"github.com/paretonav/paretonav/backend/internal/vmath"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Element-wise math: Sqrt, Exp, Log, Neg, Abs, Reciprocal, Floor, Ceil,
// Sign, Round (zero gradient where piecewise constant), the
// trigonometric and hyperbolic functions and their inverses, and Erf.

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
	type fn struct {
		op    string
		since int64
		f     func(float64) float64
		df    func(x, y float64) float64
	}
	zero := func(_, _ float64) float64 { return 0 }
	for _, u := range []fn{
		{"Reciprocal", 1, func(x float64) float64 { return 1 / x }, func(_, y float64) float64 { return -y * y }},
		{"Floor", 1, math.Floor, zero},
		{"Ceil", 1, math.Ceil, zero},
		{"Round", 11, math.RoundToEven, zero},
		{"Sign", 9, sign, zero},
		{"Sin", 7, math.Sin, func(x, _ float64) float64 { return math.Cos(x) }},
		{"Cos", 7, math.Cos, func(x, _ float64) float64 { return -math.Sin(x) }},
		{"Tan", 7, math.Tan, func(_, y float64) float64 { return 1 + y*y }},
		{"Asin", 7, math.Asin, func(x, _ float64) float64 { return 1 / math.Sqrt(1-x*x) }},
		{"Acos", 7, math.Acos, func(x, _ float64) float64 { return -1 / math.Sqrt(1-x*x) }},
		{"Atan", 7, math.Atan, func(x, _ float64) float64 { return 1 / (1 + x*x) }},
		{"Sinh", 9, math.Sinh, func(x, _ float64) float64 { return math.Cosh(x) }},
		{"Cosh", 9, math.Cosh, func(x, _ float64) float64 { return math.Sinh(x) }},
		{"Asinh", 9, math.Asinh, func(x, _ float64) float64 { return 1 / math.Sqrt(x*x+1) }},
		{"Acosh", 9, math.Acosh, func(x, _ float64) float64 { return 1 / math.Sqrt(x*x-1) }},
		{"Atanh", 9, math.Atanh, func(x, _ float64) float64 { return 1 / (1 - x*x) }},
		{"Erf", 9, math.Erf, erfDeriv},
	} {
		u := u
		graph.Register(u.op, u.since, func(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
			v, err := b.Unary(n, in, u.f, u.df)
			if err == nil && u.op == "Erf" && !v[0].IsConst() {
				v[0].N.Op().(*graph.KernelOp).Bwd32 = erfGrad32
			}
			return v, err
		})
	}
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

// erfDeriv is Erf's derivative 2/√π·exp(−x²).
func erfDeriv(x, _ float64) float64 { return 2 / math.SqrtPi * math.Exp(-x*x) }

// erfGrad32 is Erf's float32 gradient, erfDeriv's arithmetic with the
// exponentials by vmath.Exp64 (math.Exp's bits, several at once): GELU
// exported as Erf (ConvNeXt, ViT) spends most of its backward pass there.
func erfGrad32(_ int, dst []float32, in [][]float32, _, g []float32) bool {
	x := in[0][:len(dst)]
	g = g[:len(dst)]
	parallel.Elems(len(dst), func(lo, hi int) {
		var t [256]float64
		for a := lo; a < hi; a += len(t) {
			b := min(a+len(t), hi)
			e := t[:b-a]
			for i, v := range x[a:b] {
				f := float64(v)
				e[i] = -f * f
			}
			vmath.Exp64(e, e)
			for i, v := range e {
				dst[a+i] = float32(float64(g[a+i]) * (2 / math.SqrtPi * v))
			}
		}
	})
	return true
}

// sign is -1, 0 or 1 (NaN stays NaN).
func sign(x float64) float64 {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return x
}
