package onnxops

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// TestMatMulFillsDirtyBuffers checks the outputs that Gemm's and MatMul's
// float32 kernels declare they write in full (graph.KernelOp.FwdFills,
// gradFills: the executor then hands them pool buffers without zeroing
// them): run into buffers of garbage (NaN and large values), they must
// give the bits they give into zeroed ones. It covers products with and
// without C, C broadcast, batched and broadcast MatMul operands, and one
// declaration at least per case.
func TestMatMulFillsDirtyBuffers(t *testing.T) {
	cases := []struct {
		name   string
		op     string
		shapes [][]int
		attrs  []*onnxpb.AttributeProto
	}{
		{"gemm_full_c", "Gemm", [][]int{{7, 33}, {33, 9}, {7, 9}}, []*onnxpb.AttributeProto{onnxtest.AFloat("beta", 1.5)}},
		{"gemm_row_c_transposed", "Gemm", [][]int{{33, 7}, {9, 33}, {9}}, []*onnxpb.AttributeProto{onnxtest.AInt("transA", 1), onnxtest.AInt("transB", 1)}},
		{"gemm_no_c", "Gemm", [][]int{{7, 33}, {33, 9}}, nil},
		{"gemm_c_beta0", "Gemm", [][]int{{7, 33}, {33, 9}, {9}}, []*onnxpb.AttributeProto{onnxtest.AFloat("beta", 0)}},
		{"matmul_2d", "MatMul", [][]int{{130, 30}, {30, 70}}, nil},
		{"matmul_batched", "MatMul", [][]int{{3, 5, 6}, {3, 6, 2}}, nil},
		{"matmul_broadcast_a", "MatMul", [][]int{{1, 5, 6}, {4, 6, 2}}, nil},
		{"matmul_batch_broadcast", "MatMul", [][]int{{3, 1, 5, 6}, {4, 6, 2}}, nil},
		{"matmul_shared_b", "MatMul", [][]int{{2, 3, 4, 40}, {40, 9}}, nil},
		{"matmul_empty_inner", "MatMul", [][]int{{4, 0}, {0, 3}}, nil},
	}
	r := rand.New(rand.NewSource(3))
	lowers := map[string]func(*graph.Builder, *onnxpb.NodeProto, []*graph.Value) ([]*graph.Value, error){"Gemm": lowerGemm, "MatMul": lowerMatMul}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			names := make([]string, len(c.shapes))
			for i := range names {
				names[i] = fmt.Sprintf("in%d", i)
			}
			n := &onnxpb.NodeProto{Name: proto.String(c.name), OpType: proto.String(c.op), Input: names, Output: []string{"y"}, Attribute: c.attrs}
			op := lowerKernel(t, lowers[c.op], n, c.shapes...)
			in := make([][]float32, len(op.Ins))
			for i, s := range op.Ins {
				in[i] = make([]float32, shape.Numel(s))
				for j := range in[i] {
					in[i][j] = float32(r.NormFloat64())
					if j%11 == 0 {
						in[i][j] = 0 // zero products: signed zeros must match too
					}
				}
			}
			garbage := func(n int) []float32 {
				d := make([]float32, n)
				for i := range d {
					d[i] = float32(math.NaN())
					if i%3 == 1 {
						d[i] = -3e38
					}
				}
				return d
			}
			same := func(what string, got, want []float32) {
				t.Helper()
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s [%d]: %v into a dirty buffer, %v into a zeroed one", what, i, got[i], want[i])
					}
				}
			}
			declared := 0
			if op.Fills || op.FwdFills {
				declared++
				zero, dirty := make([]float32, shape.Numel(op.Out)), garbage(shape.Numel(op.Out))
				op.Fwd32(zero, in)
				op.Fwd32(dirty, in)
				same("output", dirty, zero)
			}
			y := make([]float32, shape.Numel(op.Out))
			op.Fwd32(y, in)
			g := make([]float32, len(y))
			for i := range g {
				g[i] = float32(r.NormFloat64())
			}
			for k, s := range op.Ins {
				if !op.Fills && (k >= len(op.GradFills) || !op.GradFills[k]) {
					continue
				}
				declared++
				zero, dirty := make([]float32, shape.Numel(s)), garbage(shape.Numel(s))
				if !op.Bwd32(k, zero, in, y, g) || !op.Bwd32(k, dirty, in, y, g) {
					t.Fatalf("the float32 gradient of input %d declined", k)
				}
				same(fmt.Sprintf("gradient of input %d", k), dirty, zero)
			}
			if declared == 0 {
				t.Fatal("no output declared as written in full")
			}
		})
	}
}
