package backend

import (
	"math/rand"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// TestStepFLOPs checks StepFLOPs against counts made by hand on small
// graphs: a convolution (2·N·M·C·kH·kW·oH·oW a pass), two in a row (the
// second's input gradient is run, the first's is not: x is no parameter),
// with two tasks (the backward passes counted once each), a pointwise
// convolution of a concatenation (fused into one op whose parts'
// gradients add up to the convolution's), ConvTranspose, a 3×3
// convolution that runs as Winograd (16 products of M×C by C×tiles a
// pass; one of 16 channels whose weight gradient does not), Gemm (2·m·n·k; C's gradient is a sum) and batched MatMul (2·m·n·k
// per product, also with one B for every batch).
func TestStepFLOPs(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	pad1 := onnxtest.AInts("pads", 1, 1, 1, 1)
	for _, tc := range []struct {
		name  string
		nodes []*onnxpb.NodeProto
		inits []*importer.Tensor
		x     []int // the input's shape
		out   []int // y's shape (the tasks' targets)
		tasks []string
		want  StepFLOPs
		op    string // an op the step must run (the fusion the case is about), or ""
	}{
		{
			name:  "conv",
			nodes: []*onnxpb.NodeProto{onnxtest.Node("Conv", "c", []string{"x", "W", "B"}, []string{"y"}, pad1)},
			inits: []*importer.Tensor{onnxtest.RandF32(r, "W", 4, 3, 3, 3), onnxtest.RandF32(r, "B", 4)},
			x:     []int{2, 3, 8, 8}, out: []int{2, 4, 8, 8}, tasks: []string{"a:mse:y:t"},
			// a pass 2·2·4·3·9·64 = 27648: forward, W's gradient
			want: StepFLOPs{Direct: 2 * 27648, Executed: 2 * 27648, Forward: 27648},
		},
		{
			name: "two convs, two tasks",
			nodes: []*onnxpb.NodeProto{onnxtest.Node("Conv", "c1", []string{"x", "W1"}, []string{"h"}, pad1),
				onnxtest.Node("Conv", "c2", []string{"h", "W2"}, []string{"y"})},
			inits: []*importer.Tensor{onnxtest.RandF32(r, "W1", 4, 3, 3, 3), onnxtest.RandF32(r, "W2", 2, 4, 1, 1)},
			x:     []int{2, 3, 8, 8}, out: []int{2, 2, 8, 8}, tasks: []string{"a:mse:y:t", "b:l1:y:t"},
			// c1 27648 a pass (forward, W1's gradient), c2 2·2·2·4·64 = 2048
			// (forward, h's and W2's gradients); each task's pass runs
			// 27648 + 2·2048
			want: StepFLOPs{Direct: 27648 + 2048 + 2*(27648+2*2048), Executed: 27648 + 2048 + 2*(27648+2*2048), Forward: 27648 + 2048},
		},
		{
			name:  "winograd conv",
			nodes: []*onnxpb.NodeProto{onnxtest.Node("Conv", "c", []string{"x", "W"}, []string{"y"}, pad1)},
			inits: []*importer.Tensor{onnxtest.RandF32(r, "W", 64, 64, 3, 3)},
			x:     []int{1, 64, 24, 16}, out: []int{1, 64, 24, 16}, tasks: []string{"a:mse:y:t"},
			// direct 2·64·64·9·384 = 28311552 a pass; Winograd 12·8 = 96
			// tiles, 2·16·64·64·96 = 12582912 a pass
			want: StepFLOPs{Direct: 2 * 28311552, Executed: 2 * 12582912, Forward: 28311552, Winograd: 2 * 28311552},
		},
		{
			name:  "winograd conv of 16 channels",
			nodes: []*onnxpb.NodeProto{onnxtest.Node("Conv", "c", []string{"x", "W"}, []string{"y"}, pad1)},
			inits: []*importer.Tensor{onnxtest.RandF32(r, "W", 16, 16, 3, 3)},
			x:     []int{1, 16, 24, 16}, out: []int{1, 16, 24, 16}, tasks: []string{"a:mse:y:t"},
			// direct 2·16·16·9·384 = 1769472 a pass; the forward pass as
			// Winograd, 2·16·16·16·96 = 786432; the weight gradient
			// direct (fewer than 32 channels)
			want: StepFLOPs{Direct: 2 * 1769472, Executed: 786432 + 1769472, Forward: 1769472, Winograd: 1769472},
		},
		{
			name: "pointwise conv of a concat",
			nodes: []*onnxpb.NodeProto{onnxtest.Node("Conv", "a", []string{"x", "Wa"}, []string{"a"}),
				onnxtest.Node("Conv", "b", []string{"x", "Wb"}, []string{"b"}),
				onnxtest.Node("Concat", "cat", []string{"a", "b"}, []string{"c"}, onnxtest.AInt("axis", 1)),
				onnxtest.Node("Conv", "y", []string{"c", "Wy"}, []string{"y"})},
			inits: []*importer.Tensor{onnxtest.RandF32(r, "Wa", 2, 3, 1, 1), onnxtest.RandF32(r, "Wb", 3, 3, 1, 1), onnxtest.RandF32(r, "Wy", 4, 5, 1, 1)},
			x:     []int{2, 3, 4, 4}, out: []int{2, 4, 4, 4}, tasks: []string{"a:mse:y:t"},
			// a 2·2·2·3·16 = 384 a pass, b 576, y 1280 (its input's
			// gradient 512 into a's part, 768 into b's): forward 2240;
			// backward the three weights' 2240 and y's input 1280
			want: StepFLOPs{Direct: 2240 + 2240 + 1280, Executed: 2240 + 2240 + 1280, Forward: 2240},
			op:   "ConvConcat",
		},
		{
			name:  "conv transpose",
			nodes: []*onnxpb.NodeProto{onnxtest.Node("ConvTranspose", "ct", []string{"x", "W"}, []string{"y"})},
			inits: []*importer.Tensor{onnxtest.RandF32(r, "W", 2, 4, 3, 3)},
			x:     []int{1, 2, 3, 3}, out: []int{1, 4, 5, 5}, tasks: []string{"a:mse:y:t"},
			// every input element times every tap: 2·1·2·4·9·9 = 1296 a
			// pass, forward and W's gradient
			want: StepFLOPs{Direct: 2592, Executed: 2592, Forward: 1296},
		},
		{
			name:  "gemm",
			nodes: []*onnxpb.NodeProto{onnxtest.Node("Gemm", "g", []string{"x", "W", "C"}, []string{"y"}, onnxtest.AInt("transB", 1))},
			inits: []*importer.Tensor{onnxtest.RandF32(r, "W", 3, 7), onnxtest.RandF32(r, "C", 3)},
			x:     []int{5, 7}, out: []int{5, 3}, tasks: []string{"a:mse:y:t"},
			// 2·5·3·7 = 210: forward, W's gradient (C's is a sum)
			want: StepFLOPs{Direct: 420, Executed: 420, Forward: 210},
		},
		{
			name:  "batched matmul",
			nodes: []*onnxpb.NodeProto{onnxtest.Node("MatMul", "m", []string{"x", "W"}, []string{"y"})},
			inits: []*importer.Tensor{onnxtest.RandF32(r, "W", 2, 3, 5, 6)},
			x:     []int{2, 3, 4, 5}, out: []int{2, 3, 4, 6}, tasks: []string{"a:mse:y:t"},
			// 6 products of 4×5 by 5×6: 2·6·4·6·5 = 1440, forward and W's gradient
			want: StepFLOPs{Direct: 2880, Executed: 2880, Forward: 1440},
		},
		{
			name:  "matmul, one B for every batch",
			nodes: []*onnxpb.NodeProto{onnxtest.Node("MatMul", "m", []string{"x", "W"}, []string{"y"})},
			inits: []*importer.Tensor{onnxtest.RandF32(r, "W", 5, 6)},
			x:     []int{2, 3, 4, 5}, out: []int{2, 3, 4, 6}, tasks: []string{"a:mse:y:t"},
			want: StepFLOPs{Direct: 2880, Executed: 2880, Forward: 1440},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dims := make([]int64, len(tc.x))
			for i, d := range tc.x {
				dims[i] = int64(d)
			}
			m := onnxtest.GraphModel(tc.nodes, tc.inits, map[string][]int64{"x": dims}, "y")
			md, err := Open(m, mustTasks(t, tc.tasks...), Options{})
			if err != nil {
				t.Fatal(err)
			}
			batch := map[string]*importer.Tensor{"x": onnxtest.RandF32(r, "x", tc.x...), "t": onnxtest.RandF32(r, "t", tc.out...)}
			got, err := md.StepFLOPs(batch)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("StepFLOPs = %+v, want %+v", got, tc.want)
			}
			if tc.op != "" && !stepRuns(t, md, batch, tc.op) {
				t.Errorf("the step runs no %s op", tc.op)
			}
		})
	}
}

// stepRuns reports whether md's step on batch runs an op whose name
// starts with op.
func stepRuns(t *testing.T, md *Model, batch map[string]*importer.Tensor, op string) bool {
	t.Helper()
	shapes, err := md.inputShapes(batch)
	if err != nil {
		t.Fatal(err)
	}
	c, err := md.compileStep(shapes, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range c.prog.fwd {
		if o := c.prog.nodes[i].Op(); o != nil && strings.HasPrefix(o.String(), op) {
			return true
		}
	}
	return false
}

// TestPeakGEMM checks that the GEMM rate is a positive finite number of
// operations per second.
func TestPeakGEMM(t *testing.T) {
	if r := PeakGEMM(64, 2); !(r > 0) || r > 1e15 {
		t.Errorf("PeakGEMM(64, 2) = %g", r)
	}
}
