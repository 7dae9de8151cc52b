package backend

import (
	"math"
	"testing"

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
	x := feed("x", []int{2, 3}, seq(6)...)
	cases := []struct {
		name  string
		op    string
		opset int64
		attrs []*onnxpb.AttributeProto
		ins   []tin
		shape []int
		want  []float64
	}{
		{"Transpose", "Transpose", 13, nil, []tin{x}, []int{3, 2}, []float64{0, 3, 1, 4, 2, 5}},
		{"Reshape -1 and 0", "Reshape", 13, nil, []tin{x, initI("s", []int{3}, 0, -1, 1)}, []int{2, 3, 1}, seq(6)},
		{"Flatten", "Flatten", 13, []*onnxpb.AttributeProto{aInt("axis", 0)}, []tin{x}, []int{1, 6}, seq(6)},
		{"Unsqueeze 13", "Unsqueeze", 13, nil, []tin{x, initI("a", []int{2}, 0, -1)}, []int{1, 2, 3, 1}, seq(6)},
		{"Unsqueeze 11", "Unsqueeze", 11, []*onnxpb.AttributeProto{aInts("axes", 1)}, []tin{x}, []int{2, 1, 3}, seq(6)},
		{"Concat", "Concat", 13, []*onnxpb.AttributeProto{aInt("axis", 1)}, []tin{x, feed("z", []int{2, 1}, 10, 11)}, []int{2, 4}, []float64{0, 1, 2, 10, 3, 4, 5, 11}},
		{"Concat three, axis 0", "Concat", 13, []*onnxpb.AttributeProto{aInt("axis", 0)}, []tin{feed("z", []int{1, 3}, 7, 8, 9), x, feed("w", []int{1, 3}, 10, 11, 12)}, []int{4, 3}, []float64{7, 8, 9, 0, 1, 2, 3, 4, 5, 10, 11, 12}},
		{"Slice", "Slice", 13, nil, []tin{x, initI("s", []int{2}, 0, -1), initI("e", []int{2}, 2, -4), initI("ax", []int{2}, 0, 1), initI("st", []int{2}, 1, -2)}, []int{2, 2}, []float64{2, 0, 5, 3}},
		{"Slice 9", "Slice", 9, []*onnxpb.AttributeProto{aInts("starts", 1), aInts("ends", 3), aInts("axes", 1)}, []tin{x}, []int{2, 2}, []float64{1, 2, 4, 5}},
		{"Gather", "Gather", 13, []*onnxpb.AttributeProto{aInt("axis", 1)}, []tin{x, initI("i", []int{2}, 2, -3)}, []int{2, 2}, []float64{2, 0, 5, 3}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assertClose(t, c.name, runOne(t, c.op, c.opset, c.attrs, c.ins), c.shape, c.want, 0)
			gradCheck(t, oneNode(c.op, c.opset, c.attrs, c.ins, "y"), feedsOf(c.ins), "x", 1e-6)
		})
	}
}

func TestSplit(t *testing.T) {
	x := feed("x", []int{2, 3}, seq(6)...)
	ins := []tin{x, initI("sp", []int{2}, 1, 2)}
	m := oneNode("Split", 13, []*onnxpb.AttributeProto{aInt("axis", 1)}, ins, "y0", "y1")
	out := forward(t, m, feedsOf(ins))
	assertClose(t, "y0", out["y0"], []int{2, 1}, []float64{0, 3}, 0)
	assertClose(t, "y1", out["y1"], []int{2, 2}, []float64{1, 2, 4, 5}, 0)
	gradCheck(t, m, feedsOf(ins), "x", 1e-6)
}

func TestSoftmaxAxisSemantics(t *testing.T) {
	x := randFeed("x", 5, 2, 3, 2)
	d := x.t.F64
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
	ax := []*onnxpb.AttributeProto{aInt("axis", 1)}
	assertClose(t, "Softmax 11", runOne(t, "Softmax", 11, ax, []tin{x}), []int{2, 3, 2}, want11, 1e-12)
	assertClose(t, "Softmax 13", runOne(t, "Softmax", 13, ax, []tin{x}), []int{2, 3, 2}, want13, 1e-12)
	for i := range want13 {
		want13[i] = math.Log(want13[i])
	}
	assertClose(t, "LogSoftmax 13", runOne(t, "LogSoftmax", 13, ax, []tin{x}), []int{2, 3, 2}, want13, 1e-12)
	for _, op := range []string{"Softmax", "LogSoftmax"} {
		for _, opset := range []int64{11, 13} {
			gradCheck(t, oneNode(op, opset, ax, []tin{x}, "y"), feedsOf([]tin{x}), "x", 1e-6)
		}
	}
}

func TestGemmMatMul(t *testing.T) {
	A := feed("A", []int{2, 3}, 1, 2, 3, 4, 5, 6)
	B := feed("B", []int{2, 3}, 1, 0, -1, 2, 1, 0)
	C := feed("C", []int{2}, 10, 20)
	attrs := []*onnxpb.AttributeProto{aInt("transB", 1), aFloat("alpha", 2), aFloat("beta", 0.5)}
	// A·Bᵀ = [[-2, 4], [-2, 13]]; ·2 + 0.5·C
	got := runOne(t, "Gemm", 13, attrs, []tin{A, B, C})
	assertClose(t, "Gemm", got, []int{2, 2}, []float64{1, 18, 1, 36}, 1e-12)
	for _, wrt := range []string{"A", "B", "C"} {
		gradCheck(t, oneNode("Gemm", 13, attrs, []tin{A, B, C}, "y"), feedsOf([]tin{A, B, C}), wrt, 1e-6)
	}
	ta := []*onnxpb.AttributeProto{aInt("transA", 1)}
	At := feed("A", []int{3, 2}, 1, 4, 2, 5, 3, 6)
	Bn := feed("B", []int{3, 2}, 1, 2, 0, 1, -1, 0)
	assertClose(t, "Gemm transA", runOne(t, "Gemm", 13, ta, []tin{At, Bn}), []int{2, 2}, []float64{-2, 4, -2, 13}, 1e-12)
	gradCheck(t, oneNode("Gemm", 13, ta, []tin{At, Bn}, "y"), feedsOf([]tin{At, Bn}), "A", 1e-6)

	// batched MatMul with broadcast: [2,1,2,3] × [3,3,1] → [2,3,2,1]
	X := randFeed("X", 8, 2, 1, 2, 3)
	Y := randFeed("Y", 9, 3, 3, 1)
	got = runOne(t, "MatMul", 13, nil, []tin{X, Y})
	var want []float64
	for i := 0; i < 2; i++ {
		for j := 0; j < 3; j++ {
			for r := 0; r < 2; r++ {
				s := 0.0
				for k := 0; k < 3; k++ {
					s += X.t.F64[i*6+r*3+k] * Y.t.F64[j*3+k]
				}
				want = append(want, s)
			}
		}
	}
	assertClose(t, "MatMul", got, []int{2, 3, 2, 1}, want, 1e-12)
	for _, wrt := range []string{"X", "Y"} {
		gradCheck(t, oneNode("MatMul", 13, nil, []tin{X, Y}, "y"), feedsOf([]tin{X, Y}), wrt, 1e-6)
	}
	// one B for every batch of A ([N, H, W, C] × [C, D], one product of
	// N·H·W rows): [2,3,4,5] × [5,3] → [2,3,4,3]
	X = randFeed("X", 10, 2, 3, 4, 5)
	Y = randFeed("Y", 11, 5, 3)
	want = want[:0]
	for r := 0; r < 24; r++ {
		for j := 0; j < 3; j++ {
			s := 0.0
			for k := 0; k < 5; k++ {
				s += X.t.F64[r*5+k] * Y.t.F64[k*3+j]
			}
			want = append(want, s)
		}
	}
	assertClose(t, "MatMul shared B", runOne(t, "MatMul", 13, nil, []tin{X, Y}), []int{2, 3, 4, 3}, want, 1e-12)
	for _, wrt := range []string{"X", "Y"} {
		gradCheck(t, oneNode("MatMul", 13, nil, []tin{X, Y}, "y"), feedsOf([]tin{X, Y}), wrt, 1e-6)
	}
	v := feed("v", []int{3}, 1, 2, 3)
	assertClose(t, "MatMul 1-D", runOne(t, "MatMul", 13, nil, []tin{A, v}), []int{2}, []float64{14, 32}, 1e-12)
}

func TestReduce(t *testing.T) {
	x := feed("x", []int{2, 3, 2}, seq(12)...)
	cases := []struct {
		op    string
		opset int64
		attrs []*onnxpb.AttributeProto
		ins   []tin
		shape []int
		want  []float64
	}{
		// middle axis: sums of (0,2,4), (1,3,5), (6,8,10), (7,9,11)
		{"ReduceSum", 13, nil, []tin{x, initI("a", []int{1}, 1)}, []int{2, 1, 2}, []float64{6, 9, 24, 27}},
		{"ReduceMean", 13, []*onnxpb.AttributeProto{aInts("axes", 1), aInt("keepdims", 0)}, []tin{x}, []int{2, 2}, []float64{2, 3, 8, 9}},
		{"ReduceL2", 13, []*onnxpb.AttributeProto{aInts("axes", 0, 2), aInt("keepdims", 0)}, []tin{x}, []int{3},
			[]float64{math.Sqrt(0 + 1 + 36 + 49), math.Sqrt(4 + 9 + 64 + 81), math.Sqrt(16 + 25 + 100 + 121)}},
		{"ReduceMean", 18, nil, []tin{x}, []int{1, 1, 1}, []float64{5.5}},
	}
	for _, c := range cases {
		t.Run(c.op, func(t *testing.T) {
			assertClose(t, c.op, runOne(t, c.op, c.opset, c.attrs, c.ins), c.shape, c.want, 1e-12)
			gradCheck(t, oneNode(c.op, c.opset, c.attrs, c.ins, "y"), feedsOf(c.ins), "x", 1e-6)
		})
	}
}
