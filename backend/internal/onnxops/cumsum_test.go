package onnxops

import (
	"fmt"
	"math/rand"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// cumSumAttrs are the four combinations of exclusive and reverse.
var cumSumAttrs = []struct {
	name  string
	attrs []*onnxpb.AttributeProto
}{
	{"plain", nil},
	{"exclusive", []*onnxpb.AttributeProto{onnxtest.AInt("exclusive", 1)}},
	{"reverse", []*onnxpb.AttributeProto{onnxtest.AInt("reverse", 1)}},
	{"exclusive reverse", []*onnxpb.AttributeProto{onnxtest.AInt("exclusive", 1), onnxtest.AInt("reverse", 1)}},
}

// TestCumSumORT checks CumSum against ONNX Runtime: every attribute
// combination along the first, a middle and the last axis (negative
// axis, 0-D and one-element axis tensors) of a run-time float32 tensor,
// and on an int64 constant (positions counted from a mask, as EdgeNeXt's
// positional encoding does: Cast(Not(mask)) then CumSum).
func TestCumSumORT(t *testing.T) {
	r := rand.New(rand.NewSource(14))
	x := onnxtest.RandUniform32(r, "x", 2, 3, 5)
	mask := &importer.Tensor{Name: "mask", Type: importer.Int64, Shape: []int{2, 4}, I64: []int64{1, 0, 0, 1, 0, 0, 1, 1}}
	axes := []*importer.Tensor{
		{Name: "ax0", Type: importer.Int64, Shape: []int{}, I64: []int64{0}},
		{Name: "ax1", Type: importer.Int64, Shape: []int{1}, I64: []int64{1}},
		{Name: "axm1", Type: importer.Int64, Shape: []int{}, I64: []int64{-1}},
	}
	var nodes []*onnxpb.NodeProto
	var outs []string
	for _, ax := range axes {
		for _, a := range cumSumAttrs {
			out := fmt.Sprintf("%s %s", a.name, ax.Name)
			nodes = append(nodes, onnxtest.Node("CumSum", out, []string{"x", ax.Name}, []string{out}, a.attrs...))
			outs = append(outs, out)
		}
	}
	nodes = append(nodes,
		castTo("mb", "mask", "mb", importer.Bool),
		onnxtest.Node("Not", "nm", []string{"mb"}, []string{"nm"}),
		castTo("nmi", "nm", "nmi", importer.Int64))
	for _, a := range cumSumAttrs {
		out := "int64 " + a.name
		nodes = append(nodes, onnxtest.Node("CumSum", out, []string{"nmi", "ax1"}, []string{out}, a.attrs...))
		outs = append(outs, out)
	}
	m := onnxtest.GraphModel(nodes, append(axes, mask), map[string][]int64{"x": {2, 3, 5}}, outs...)
	checkGraphORT(t, m, 14, map[string]*importer.Tensor{"x": x}, 1e-6)
}

// TestCumSumGrad checks CumSum's gradient (the running sum of the output
// gradient the other way) by central differences, every attribute
// combination, along each axis.
func TestCumSumGrad(t *testing.T) {
	for axis := int64(-3); axis < 3; axis++ {
		for _, a := range cumSumAttrs {
			t.Run(fmt.Sprintf("%s axis %d", a.name, axis), func(t *testing.T) {
				ins := []onnxtest.In{onnxtest.RandFeed("x", axis+10, 2, 3, 4), onnxtest.InitI("axis", []int{}, axis)}
				gradCheck(t, onnxtest.OneNode("CumSum", 14, a.attrs, ins, "y"), onnxtest.Feeds(ins), "x", 1e-6)
			})
		}
	}
}

// TestCumSumKernel32 checks CumSum's float32 closures against its float64
// ones, bit for bit.
func TestCumSumKernel32(t *testing.T) {
	for i, a := range cumSumAttrs {
		n := onnxtest.Node("CumSum", "c", []string{"x", "axis"}, []string{"y"}, a.attrs...)
		b := graph.NewBuilder(tensor.Float32, 14)
		x := graph.NodeValue(G.NewTensor(b.Graph, tensor.Float32, 3, G.WithShape(3, 70, 2), G.WithName("x")))
		axis := graph.ConstValue(&importer.Tensor{Name: "axis", Type: importer.Int64, Shape: []int{}, I64: []int64{1}})
		out, err := lowerCumSum(b, n, []*graph.Value{x, axis})
		if err != nil {
			t.Fatal(err)
		}
		op := out[0].N.Op().(*graph.KernelOp)
		checkKernel32(t, op, int64(i), 3)
	}
}

// TestCumSumErrors checks that a run-time or non-scalar axis is refused,
// naming the node.
func TestCumSumErrors(t *testing.T) {
	ins := []onnxtest.In{onnxtest.RandFeed("x", 1, 2, 3), onnxtest.InitI("axis", []int{2}, 0, 1)}
	_, err := tryGraph(onnxtest.OneNode("CumSum", 14, nil, ins, "y"), onnxtest.Feeds(ins), nil)
	if err == nil || !onnxtest.ContainsAll(err.Error(), `node "n0" (CumSum)`, "axis", "expected a scalar") {
		t.Errorf("two axes: got %v", err)
	}
	ins = []onnxtest.In{onnxtest.RandFeed("x", 1, 2, 3), onnxtest.RandFeed("axis", 2)}
	_, err = tryGraph(onnxtest.OneNode("CumSum", 14, nil, ins, "y"), onnxtest.Feeds(ins), nil)
	if err == nil || !onnxtest.ContainsAll(err.Error(), `node "n0" (CumSum)`, "axis", "computed at run time") {
		t.Errorf("run-time axis: got %v", err)
	}
}
