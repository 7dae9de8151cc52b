package onnxops

import (
	"math"
	"testing"

	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

func seq(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(i)
	}
	return out
}

// TestDataMovement checks forward values (hand-computed) and gradients of
// the data-movement ops.
func TestDataMovement(t *testing.T) {
	x := onnxtest.Feed("x", []int{2, 3}, seq(6)...)
	cases := []struct {
		name  string
		op    string
		opset int64
		attrs []*onnxpb.AttributeProto
		ins   []onnxtest.In
		shape []int
		want  []float64
	}{
		{"Transpose", "Transpose", 13, nil, []onnxtest.In{x}, []int{3, 2}, []float64{0, 3, 1, 4, 2, 5}},
		{"Reshape -1 and 0", "Reshape", 13, nil, []onnxtest.In{x, onnxtest.InitI("s", []int{3}, 0, -1, 1)}, []int{2, 3, 1}, seq(6)},
		{"Flatten", "Flatten", 13, []*onnxpb.AttributeProto{onnxtest.AInt("axis", 0)}, []onnxtest.In{x}, []int{1, 6}, seq(6)},
		{"Unsqueeze 13", "Unsqueeze", 13, nil, []onnxtest.In{x, onnxtest.InitI("a", []int{2}, 0, -1)}, []int{1, 2, 3, 1}, seq(6)},
		{"Unsqueeze 11", "Unsqueeze", 11, []*onnxpb.AttributeProto{onnxtest.AInts("axes", 1)}, []onnxtest.In{x}, []int{2, 1, 3}, seq(6)},
		{"Concat", "Concat", 13, []*onnxpb.AttributeProto{onnxtest.AInt("axis", 1)}, []onnxtest.In{x, onnxtest.Feed("z", []int{2, 1}, 10, 11)}, []int{2, 4}, []float64{0, 1, 2, 10, 3, 4, 5, 11}},
		{"Concat three, axis 0", "Concat", 13, []*onnxpb.AttributeProto{onnxtest.AInt("axis", 0)}, []onnxtest.In{onnxtest.Feed("z", []int{1, 3}, 7, 8, 9), x, onnxtest.Feed("w", []int{1, 3}, 10, 11, 12)}, []int{4, 3}, []float64{7, 8, 9, 0, 1, 2, 3, 4, 5, 10, 11, 12}},
		{"Slice", "Slice", 13, nil, []onnxtest.In{x, onnxtest.InitI("s", []int{2}, 0, -1), onnxtest.InitI("e", []int{2}, 2, -4), onnxtest.InitI("ax", []int{2}, 0, 1), onnxtest.InitI("st", []int{2}, 1, -2)}, []int{2, 2}, []float64{2, 0, 5, 3}},
		{"Slice 9", "Slice", 9, []*onnxpb.AttributeProto{onnxtest.AInts("starts", 1), onnxtest.AInts("ends", 3), onnxtest.AInts("axes", 1)}, []onnxtest.In{x}, []int{2, 2}, []float64{1, 2, 4, 5}},
		{"Gather", "Gather", 13, []*onnxpb.AttributeProto{onnxtest.AInt("axis", 1)}, []onnxtest.In{x, onnxtest.InitI("i", []int{2}, 2, -3)}, []int{2, 2}, []float64{2, 0, 5, 3}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			onnxtest.AssertClose(t, c.name, runOne(t, c.op, c.opset, c.attrs, c.ins), c.shape, c.want, 0)
			gradCheck(t, onnxtest.OneNode(c.op, c.opset, c.attrs, c.ins, "y"), onnxtest.Feeds(c.ins), "x", 1e-6)
		})
	}
}

func TestSplit(t *testing.T) {
	x := onnxtest.Feed("x", []int{2, 3}, seq(6)...)
	ins := []onnxtest.In{x, onnxtest.InitI("sp", []int{2}, 1, 2)}
	m := onnxtest.OneNode("Split", 13, []*onnxpb.AttributeProto{onnxtest.AInt("axis", 1)}, ins, "y0", "y1")
	out := forward(t, m, onnxtest.Feeds(ins))
	onnxtest.AssertClose(t, "y0", out["y0"], []int{2, 1}, []float64{0, 3}, 0)
	onnxtest.AssertClose(t, "y1", out["y1"], []int{2, 2}, []float64{1, 2, 4, 5}, 0)
	gradCheck(t, m, onnxtest.Feeds(ins), "x", 1e-6)
}

func TestSoftmaxAxisSemantics(t *testing.T) {
	x := onnxtest.RandFeed("x", 5, 2, 3, 2)
	d := x.T.F64
	// opset 11, axis 1: normalise over the 6 trailing values of each row.
	var want11 []float64
	for r := 0; r < 2; r++ {
		s := 0.0
		for k := 0; k < 6; k++ {
			s += math.Exp(d[r*6+k])
		}
		for k := 0; k < 6; k++ {
			want11 = append(want11, math.Exp(d[r*6+k])/s)
		}
	}
	// opset 13, axis 1: normalise over the 3 values along axis 1.
	want13 := make([]float64, 12)
	for r := 0; r < 2; r++ {
		for j := 0; j < 2; j++ {
			s := 0.0
			for k := 0; k < 3; k++ {
				s += math.Exp(d[r*6+k*2+j])
			}
			for k := 0; k < 3; k++ {
				want13[r*6+k*2+j] = math.Exp(d[r*6+k*2+j]) / s
			}
		}
	}
	ax := []*onnxpb.AttributeProto{onnxtest.AInt("axis", 1)}
	onnxtest.AssertClose(t, "Softmax 11", runOne(t, "Softmax", 11, ax, []onnxtest.In{x}), []int{2, 3, 2}, want11, 1e-12)
	onnxtest.AssertClose(t, "Softmax 13", runOne(t, "Softmax", 13, ax, []onnxtest.In{x}), []int{2, 3, 2}, want13, 1e-12)
	for i := range want13 {
		want13[i] = math.Log(want13[i])
	}
	onnxtest.AssertClose(t, "LogSoftmax 13", runOne(t, "LogSoftmax", 13, ax, []onnxtest.In{x}), []int{2, 3, 2}, want13, 1e-12)
	for _, op := range []string{"Softmax", "LogSoftmax"} {
		for _, opset := range []int64{11, 13} {
			gradCheck(t, onnxtest.OneNode(op, opset, ax, []onnxtest.In{x}, "y"), onnxtest.Feeds([]onnxtest.In{x}), "x", 1e-6)
		}
	}
}

func TestGemmMatMul(t *testing.T) {
	A := onnxtest.Feed("A", []int{2, 3}, 1, 2, 3, 4, 5, 6)
	B := onnxtest.Feed("B", []int{2, 3}, 1, 0, -1, 2, 1, 0)
	C := onnxtest.Feed("C", []int{2}, 10, 20)
	attrs := []*onnxpb.AttributeProto{onnxtest.AInt("transB", 1), onnxtest.AFloat("alpha", 2), onnxtest.AFloat("beta", 0.5)}
	// A·Bᵀ = [[-2, 4], [-2, 13]]; ·2 + 0.5·C
	got := runOne(t, "Gemm", 13, attrs, []onnxtest.In{A, B, C})
	onnxtest.AssertClose(t, "Gemm", got, []int{2, 2}, []float64{1, 18, 1, 36}, 1e-12)
	for _, wrt := range []string{"A", "B", "C"} {
		gradCheck(t, onnxtest.OneNode("Gemm", 13, attrs, []onnxtest.In{A, B, C}, "y"), onnxtest.Feeds([]onnxtest.In{A, B, C}), wrt, 1e-6)
	}
	ta := []*onnxpb.AttributeProto{onnxtest.AInt("transA", 1)}
	At := onnxtest.Feed("A", []int{3, 2}, 1, 4, 2, 5, 3, 6)
	Bn := onnxtest.Feed("B", []int{3, 2}, 1, 2, 0, 1, -1, 0)
	onnxtest.AssertClose(t, "Gemm transA", runOne(t, "Gemm", 13, ta, []onnxtest.In{At, Bn}), []int{2, 2}, []float64{-2, 4, -2, 13}, 1e-12)
	gradCheck(t, onnxtest.OneNode("Gemm", 13, ta, []onnxtest.In{At, Bn}, "y"), onnxtest.Feeds([]onnxtest.In{At, Bn}), "A", 1e-6)

	// batched MatMul with broadcast: [2,1,2,3] × [3,3,1] → [2,3,2,1]
	X := onnxtest.RandFeed("X", 8, 2, 1, 2, 3)
	Y := onnxtest.RandFeed("Y", 9, 3, 3, 1)
	got = runOne(t, "MatMul", 13, nil, []onnxtest.In{X, Y})
	var want []float64
	for i := 0; i < 2; i++ {
		for j := 0; j < 3; j++ {
			for r := 0; r < 2; r++ {
				s := 0.0
				for k := 0; k < 3; k++ {
					s += X.T.F64[i*6+r*3+k] * Y.T.F64[j*3+k]
				}
				want = append(want, s)
			}
		}
	}
	onnxtest.AssertClose(t, "MatMul", got, []int{2, 3, 2, 1}, want, 1e-12)
	for _, wrt := range []string{"X", "Y"} {
		gradCheck(t, onnxtest.OneNode("MatMul", 13, nil, []onnxtest.In{X, Y}, "y"), onnxtest.Feeds([]onnxtest.In{X, Y}), wrt, 1e-6)
	}
	// one B for every batch of A ([N, H, W, C] × [C, D], one product of
	// N·H·W rows): [2,3,4,5] × [5,3] → [2,3,4,3]
	X = onnxtest.RandFeed("X", 10, 2, 3, 4, 5)
	Y = onnxtest.RandFeed("Y", 11, 5, 3)
	want = want[:0]
	for r := 0; r < 24; r++ {
		for j := 0; j < 3; j++ {
			s := 0.0
			for k := 0; k < 5; k++ {
				s += X.T.F64[r*5+k] * Y.T.F64[k*3+j]
			}
			want = append(want, s)
		}
	}
	onnxtest.AssertClose(t, "MatMul shared B", runOne(t, "MatMul", 13, nil, []onnxtest.In{X, Y}), []int{2, 3, 4, 3}, want, 1e-12)
	for _, wrt := range []string{"X", "Y"} {
		gradCheck(t, onnxtest.OneNode("MatMul", 13, nil, []onnxtest.In{X, Y}, "y"), onnxtest.Feeds([]onnxtest.In{X, Y}), wrt, 1e-6)
	}
	v := onnxtest.Feed("v", []int{3}, 1, 2, 3)
	onnxtest.AssertClose(t, "MatMul 1-D", runOne(t, "MatMul", 13, nil, []onnxtest.In{A, v}), []int{2}, []float64{14, 32}, 1e-12)
}

func TestReduce(t *testing.T) {
	x := onnxtest.Feed("x", []int{2, 3, 2}, seq(12)...)
	cases := []struct {
		op    string
		opset int64
		attrs []*onnxpb.AttributeProto
		ins   []onnxtest.In
		shape []int
		want  []float64
	}{
		// middle axis: sums of (0,2,4), (1,3,5), (6,8,10), (7,9,11)
		{"ReduceSum", 13, nil, []onnxtest.In{x, onnxtest.InitI("a", []int{1}, 1)}, []int{2, 1, 2}, []float64{6, 9, 24, 27}},
		{"ReduceMean", 13, []*onnxpb.AttributeProto{onnxtest.AInts("axes", 1), onnxtest.AInt("keepdims", 0)}, []onnxtest.In{x}, []int{2, 2}, []float64{2, 3, 8, 9}},
		{"ReduceL2", 13, []*onnxpb.AttributeProto{onnxtest.AInts("axes", 0, 2), onnxtest.AInt("keepdims", 0)}, []onnxtest.In{x}, []int{3},
			[]float64{math.Sqrt(0 + 1 + 36 + 49), math.Sqrt(4 + 9 + 64 + 81), math.Sqrt(16 + 25 + 100 + 121)}},
		{"ReduceMean", 18, nil, []onnxtest.In{x}, []int{1, 1, 1}, []float64{5.5}},
	}
	for _, c := range cases {
		t.Run(c.op, func(t *testing.T) {
			onnxtest.AssertClose(t, c.op, runOne(t, c.op, c.opset, c.attrs, c.ins), c.shape, c.want, 1e-12)
			gradCheck(t, onnxtest.OneNode(c.op, c.opset, c.attrs, c.ins, "y"), onnxtest.Feeds(c.ins), "x", 1e-6)
		})
	}
}
