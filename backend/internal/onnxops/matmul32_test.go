package onnxops

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"gorgonia.org/tensor"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// TestMatMul32 checks the float32 Gemm and MatMul kernels (float32
// accumulation, matmul32.go) against their float64 formulas: the output
// and each input's gradient within 1e-5 of Σ|terms| (float32 round-off
// over the inner dimension), for every transA/transB, alpha and beta, C of
// full and broadcast shape, and MatMul's broadcast batches and 1-D
// operands, and one B shared by every batch of A.
func TestMatMul32(t *testing.T) {
	type tc struct {
		name   string
		op     string
		shapes [][]int
		attrs  []*onnxpb.AttributeProto
	}
	var cases []tc
	for _, ta := range []int64{0, 1} {
		for _, tb := range []int64{0, 1} {
			a, b := []int{7, 33}, []int{33, 9}
			if ta == 1 {
				a = []int{33, 7}
			}
			if tb == 1 {
				b = []int{9, 33}
			}
			at := []*onnxpb.AttributeProto{onnxtest.AInt("transA", ta), onnxtest.AInt("transB", tb), onnxtest.AFloat("alpha", 0.75), onnxtest.AFloat("beta", 1.5)}
			cases = append(cases,
				tc{fmt.Sprintf("gemm_t%d%d_full_c", ta, tb), "Gemm", [][]int{a, b, {7, 9}}, at},
				tc{fmt.Sprintf("gemm_t%d%d_row_c", ta, tb), "Gemm", [][]int{a, b, {9}}, at},
				tc{fmt.Sprintf("gemm_t%d%d_no_c", ta, tb), "Gemm", [][]int{a, b}, at[:2]})
		}
	}
	cases = append(cases,
		tc{"matmul_large", "MatMul", [][]int{{130, 300}, {300, 70}}, nil},
		tc{"matmul_batch_broadcast", "MatMul", [][]int{{3, 1, 5, 6}, {4, 6, 2}}, nil},
		tc{"matmul_1d", "MatMul", [][]int{{6}, {2, 6, 3}}, nil},
		tc{"matmul_shared_b", "MatMul", [][]int{{2, 3, 4, 40}, {40, 9}}, nil})
	r := rand.New(rand.NewSource(9))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := graph.NewBuilder(tensor.Float32, 13)
			var in []*graph.Value
			var names []string
			for i, s := range c.shapes {
				name := fmt.Sprintf("in%d", i)
				names = append(names, name)
				in = append(in, &graph.Value{N: b.InputNode(name, s), Shape: s})
			}
			opType, name := c.op, c.name
			node := &onnxpb.NodeProto{OpType: &opType, Name: &name, Input: names, Output: []string{"y"}, Attribute: c.attrs}
			lower := lowerGemm
			if c.op == "MatMul" {
				lower = lowerMatMul
			}
			out, err := lower(b, node, in)
			if err != nil {
				t.Fatal(err)
			}
			op := out[0].N.Op().(*graph.KernelOp)
			ins32, ins64 := make([][]float32, len(in)), make([][]float64, len(in))
			for i, s := range c.shapes {
				ins32[i], ins64[i] = make([]float32, shape.Numel(s)), make([]float64, shape.Numel(s))
				for j := range ins32[i] {
					ins32[i][j] = float32(r.NormFloat64())
					ins64[i][j] = float64(ins32[i][j])
				}
			}
			n := shape.Numel(op.Out)
			y32, y64, abs := make([]float32, n), make([]float64, n), make([]float64, n)
			op.Fwd32(y32, ins32)
			op.Fwd(y64, ins64)
			// Σ|terms|: the float64 formula on absolute values
			absIn := make([][]float64, len(in))
			for i := range ins64 {
				absIn[i] = make([]float64, len(ins64[i]))
				for j, v := range ins64[i] {
					absIn[i][j] = math.Abs(v)
				}
			}
			op.Fwd(abs, absIn)
			within(t, "output", y32, y64, abs)
			g32, g64, gabs := make([]float32, n), make([]float64, n), make([]float64, n)
			for i := range g32 {
				g32[i] = float32(r.NormFloat64())
				g64[i], gabs[i] = float64(g32[i]), math.Abs(float64(g32[i]))
			}
			for k := range in {
				d32, d64, dabs := make([]float32, len(ins32[k])), make([]float64, len(ins32[k])), make([]float64, len(ins32[k]))
				if !op.Bwd32(k, d32, ins32, y32, g32) {
					t.Fatalf("input %d: the float32 gradient declined", k)
				}
				op.Bwd(k, d64, ins64, y64, g64)
				op.Bwd(k, dabs, absIn, abs, gabs)
				within(t, fmt.Sprintf("gradient of input %d", k), d32, d64, dabs)
			}
		})
	}
}

// within fails unless got is want within 1e-5·abs elementwise.
func within(t *testing.T, what string, got []float32, want, abs []float64) {
	t.Helper()
	for i := range want {
		if d := math.Abs(float64(got[i]) - want[i]); d > 1e-5*abs[i]+1e-30 {
			t.Fatalf("%s[%d] = %v, float64 formula %v (Σ|terms| %v)", what, i, got[i], want[i], abs[i])
		}
	}
}
