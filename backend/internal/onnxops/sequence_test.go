package onnxops

import (
	"math/rand"
	"testing"

	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// sequenceModel splits x [2,3,7] as torch.chunk (a scalar piece size: 3,
// 3, 1 along the last axis) and torch.split (sizes [1, 2] along axis 1)
// do under the dynamo exporter, and into single rows without the axis
// (keepdims 0), reads pieces at positive and negative positions, counts
// them, stacks and concatenates sequences back, and splits an int64
// constant. The first output, y = c0·c1 + c2 + …, uses every piece kind.
func sequenceModel() *importer.Model {
	nodes := []*onnxpb.NodeProto{
		onnxtest.Node("SplitToSequence", "chunk", []string{"x", "three"}, []string{"chunks"}, onnxtest.AInt("axis", -1)),
		onnxtest.Node("SequenceAt", "c0", []string{"chunks", "zero"}, []string{"c0"}),
		onnxtest.Node("SequenceAt", "c1", []string{"chunks", "one"}, []string{"c1"}),
		onnxtest.Node("SequenceAt", "c2", []string{"chunks", "minus1"}, []string{"c2"}),
		onnxtest.Node("Mul", "m", []string{"c0", "c1"}, []string{"m"}),
		onnxtest.Node("Add", "y", []string{"m", "c2"}, []string{"y"}),
		onnxtest.Node("SplitToSequence", "split", []string{"x", "sizes"}, []string{"parts"}, onnxtest.AInt("axis", 1)),
		onnxtest.Node("SequenceAt", "p1", []string{"parts", "one1d"}, []string{"p1"}),
		onnxtest.Node("SplitToSequence", "rows", []string{"x"}, []string{"rows"}, onnxtest.AInt("keepdims", 0)),
		onnxtest.Node("SequenceAt", "r1", []string{"rows", "one"}, []string{"r1"}),
		onnxtest.Node("SequenceLength", "len", []string{"chunks"}, []string{"len"}),
		onnxtest.Node("SequenceConstruct", "pair", []string{"c0", "c1"}, []string{"pair"}),
		onnxtest.Node("ConcatFromSequence", "stack", []string{"pair"}, []string{"stack"}, onnxtest.AInt("axis", -1), onnxtest.AInt("new_axis", 1)),
		onnxtest.Node("ConcatFromSequence", "cat", []string{"chunks"}, []string{"cat"}, onnxtest.AInt("axis", 2)),
		onnxtest.Node("SplitToSequence", "isplit", []string{"ints", "one"}, []string{"iseq"}, onnxtest.AInt("axis", 1)),
		onnxtest.Node("SequenceAt", "i1", []string{"iseq", "minus1"}, []string{"i1"}),
	}
	inits := []*importer.Tensor{
		onnxtest.Int64("three", []int{}, 3), onnxtest.Int64("zero", []int{}, 0), onnxtest.Int64("one", []int{}, 1), onnxtest.Int64("minus1", []int{}, -1),
		onnxtest.Int64("sizes", []int{2}, 1, 2), onnxtest.Int64("one1d", []int{1}, 1), onnxtest.Int64("ints", []int{2, 3}, 4, -5, 6, 7, 8, -9),
	}
	return onnxtest.GraphModel(nodes, inits, map[string][]int64{"x": {2, 3, 7}}, "y", "p1", "r1", "len", "stack", "cat", "i1")
}

// TestSequenceORT checks SplitToSequence (scalar split, sizes, none with
// keepdims 0; run-time float32 and int64 constant), SequenceAt,
// SequenceLength, SequenceConstruct and ConcatFromSequence (with and
// without new_axis) against ONNX Runtime.
func TestSequenceORT(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	checkGraphORT(t, sequenceModel(), 13, map[string]*importer.Tensor{"x": onnxtest.RandUniform32(r, "x", 2, 3, 7)}, 1e-6)
}

// TestSequenceGrad checks the gradient through chunks read back by
// SequenceAt (y = c0·c1 + c2) by central differences, and through a
// stack (ConcatFromSequence with new_axis) of pieces read in reverse.
func TestSequenceGrad(t *testing.T) {
	x := onnxtest.RandFeed("x", 8, 2, 3, 7)
	gradCheck(t, sequenceModel(), onnxtest.Feeds([]onnxtest.In{x}), "x", 1e-6)
	nodes := []*onnxpb.NodeProto{
		onnxtest.Node("SplitToSequence", "split", []string{"x", "sizes"}, []string{"parts"}, onnxtest.AInt("axis", 1)),
		onnxtest.Node("SequenceAt", "p1", []string{"parts", "one"}, []string{"p1"}),
		onnxtest.Node("SequenceAt", "p0", []string{"parts", "zero"}, []string{"p0"}),
		onnxtest.Node("Tanh", "t", []string{"p1"}, []string{"t"}),
		onnxtest.Node("SequenceConstruct", "pair", []string{"t", "p0"}, []string{"pair"}),
		onnxtest.Node("ConcatFromSequence", "stack", []string{"pair"}, []string{"y"}, onnxtest.AInt("axis", 0), onnxtest.AInt("new_axis", 1)),
	}
	inits := []*importer.Tensor{onnxtest.Int64("sizes", []int{2}, 2, 2), onnxtest.Int64("zero", []int{}, 0), onnxtest.Int64("one", []int{}, 1)}
	m := onnxtest.GraphModel(nodes, inits, map[string][]int64{"x": {2, 4, 3}}, "y")
	gradCheck(t, m, onnxtest.Feeds([]onnxtest.In{onnxtest.RandFeed("x", 9, 2, 4, 3)}), "x", 1e-6)
}

// TestSequenceErrors checks that sequences and tensors are not confused
// and that bad splits and positions are named.
func TestSequenceErrors(t *testing.T) {
	inits := []*importer.Tensor{onnxtest.Int64("three", []int{}, 3), onnxtest.Int64("five", []int{}, 5), onnxtest.Int64("sizes", []int{2}, 1, 1)}
	cases := []struct {
		name  string
		nodes []*onnxpb.NodeProto
		want  []string
	}{
		{"sequence into Relu", []*onnxpb.NodeProto{
			onnxtest.Node("SplitToSequence", "s", []string{"x", "three"}, []string{"s"}),
			onnxtest.Node("Relu", "r", []string{"s"}, []string{"y"}),
		}, []string{`node "r" (Relu)`, `input 0 "s" is a tensor sequence`}},
		{"tensor into SequenceAt", []*onnxpb.NodeProto{
			onnxtest.Node("SequenceAt", "a", []string{"x", "three"}, []string{"y"}),
		}, []string{`node "a" (SequenceAt)`, `input 0 "x" is a tensor`}},
		{"position out of range", []*onnxpb.NodeProto{
			onnxtest.Node("SplitToSequence", "s", []string{"x", "three"}, []string{"s"}),
			onnxtest.Node("SequenceAt", "a", []string{"s", "five"}, []string{"y"}),
		}, []string{`node "a" (SequenceAt)`, "position 5 is out of range for a sequence of 2 tensors"}},
		{"sizes not covering the axis", []*onnxpb.NodeProto{
			onnxtest.Node("SplitToSequence", "s", []string{"x", "sizes"}, []string{"s"}),
			onnxtest.Node("SequenceAt", "a", []string{"s", "three"}, []string{"y"}),
		}, []string{`node "s" (SplitToSequence)`, "sums to 2, but axis 0 has size 4"}},
		{"run-time position", []*onnxpb.NodeProto{
			onnxtest.Node("SplitToSequence", "s", []string{"x", "three"}, []string{"s"}),
			onnxtest.Node("SequenceAt", "a", []string{"s", "x"}, []string{"y"}),
		}, []string{`node "a" (SequenceAt)`, "position", "computed at run time"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := onnxtest.GraphModel(c.nodes, inits, map[string][]int64{"x": {4}}, "y")
			_, err := tryGraph(m, onnxtest.Feeds([]onnxtest.In{onnxtest.RandFeed("x", 1, 4)}), nil)
			if err == nil || !onnxtest.ContainsAll(err.Error(), c.want...) {
				t.Errorf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}
