package onnxops

import (
	"fmt"
	"math/rand"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
	"github.com/paretonav/paretonav/internal/testkit/ortcheck"
)

// oracleCase is one node checked against ONNX Runtime: its inputs (the
// first a graph input, the others float initializers) in float32.
type oracleCase struct {
	name  string
	attrs []*onnxpb.AttributeProto
	ins   []*importer.Tensor // nil: omitted optional input
}

// checkAgainstORT puts every case's node (op at opset) in one float32
// model, runs it once in ONNX Runtime and checks backend's float64
// forward pass within tol·(1+|ort|) per element.
func checkAgainstORT(t *testing.T, op string, opset int64, cases []oracleCase, tol float64) {
	t.Helper()
	ortcheck.Require(t)
	var nodes []*onnxpb.NodeProto
	var inits []*importer.Tensor
	inputs := map[string][]int64{}
	feeds := map[string]*importer.Tensor{}
	var outs []string
	for i, c := range cases {
		var names []string
		for j, in := range c.ins {
			if in == nil {
				names = append(names, "")
				continue
			}
			name := fmt.Sprintf("c%d_in%d", i, j)
			t := importer.NewFloat32(name, in.Shape, in.F32)
			names = append(names, name)
			if j == 0 {
				var dims []int64
				for _, d := range in.Shape {
					dims = append(dims, int64(d))
				}
				inputs[name], feeds[name] = dims, t
			} else {
				inits = append(inits, t)
			}
		}
		out := fmt.Sprintf("y%d", i)
		outs = append(outs, out)
		nodes = append(nodes, onnxtest.Node(op, c.name, names, []string{out}, c.attrs...))
	}
	m := onnxtest.GraphModel(nodes, inits, inputs, outs...)
	ir := int64(8)
	m.Proto.IrVersion = &ir
	m.Proto.OpsetImport[0].Version = &opset
	b, err := proto.Marshal(m.Proto)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ortcheck.RunBytes(b, feeds)
	if err != nil {
		t.Fatal(err)
	}
	got := forward(t, m, feeds)
	for i, c := range cases {
		w := want[outs[i]]
		onnxtest.AssertClose(t, c.name+" vs ONNX Runtime", got[outs[i]], w.Shape, w.Float64s(), tol)
	}
}

// convTransposeCases cover strides, pads, output_padding, dilations,
// groups, 1-D, output_shape and auto_pad.
func convTransposeCases() []oracleCase {
	r := rand.New(rand.NewSource(11))
	return []oracleCase{
		{"s2 p1 op1 bias", []*onnxpb.AttributeProto{onnxtest.AInts("strides", 2, 2), onnxtest.AInts("pads", 1, 1, 1, 1), onnxtest.AInts("output_padding", 1, 1)},
			[]*importer.Tensor{onnxtest.RandUniform32(r, "x", 2, 3, 4, 5), onnxtest.RandUniform32(r, "w", 3, 4, 3, 3), onnxtest.RandUniform32(r, "b", 4)}},
		{"groups dilations asym pads", []*onnxpb.AttributeProto{onnxtest.AInt("group", 2), onnxtest.AInts("strides", 1, 2), onnxtest.AInts("dilations", 2, 1), onnxtest.AInts("pads", 0, 1, 1, 0)},
			[]*importer.Tensor{onnxtest.RandUniform32(r, "x", 1, 4, 3, 4), onnxtest.RandUniform32(r, "w", 4, 3, 2, 3), nil}},
		{"1-D", []*onnxpb.AttributeProto{onnxtest.AInts("strides", 3), onnxtest.AInts("pads", 1, 0)},
			[]*importer.Tensor{onnxtest.RandUniform32(r, "x", 2, 2, 5), onnxtest.RandUniform32(r, "w", 2, 3, 3), onnxtest.RandUniform32(r, "b", 3)}},
		{"output_shape", []*onnxpb.AttributeProto{onnxtest.AInts("strides", 2, 2), onnxtest.AInts("output_shape", 6, 6)},
			[]*importer.Tensor{onnxtest.RandUniform32(r, "x", 1, 2, 3, 3), onnxtest.RandUniform32(r, "w", 2, 2, 3, 3)}},
		{"output_shape beyond full output", []*onnxpb.AttributeProto{onnxtest.AInts("strides", 3, 2), onnxtest.AInts("output_shape", 10, 8)},
			[]*importer.Tensor{onnxtest.RandUniform32(r, "x", 1, 1, 3, 3), onnxtest.RandUniform32(r, "w", 1, 2, 3, 3)}},
		{"same_upper", []*onnxpb.AttributeProto{onnxtest.AInts("strides", 2, 2), onnxtest.AString("auto_pad", "SAME_UPPER")},
			[]*importer.Tensor{onnxtest.RandUniform32(r, "x", 1, 2, 3, 3), onnxtest.RandUniform32(r, "w", 2, 3, 3, 3)}},
		{"unet up k2 s2", []*onnxpb.AttributeProto{onnxtest.AInts("strides", 2, 2), onnxtest.AInts("kernel_shape", 2, 2)},
			[]*importer.Tensor{onnxtest.RandUniform32(r, "x", 2, 4, 3, 3), onnxtest.RandUniform32(r, "w", 4, 2, 2, 2), onnxtest.RandUniform32(r, "b", 2)}},
	}
}

// TestConvTransposeORT checks ConvTranspose's forward pass against ONNX
// Runtime (the unet_small PyTorch export also matched PyTorch's outputs
// and autograd gradients when this was written).
func TestConvTransposeORT(t *testing.T) {
	checkAgainstORT(t, "ConvTranspose", 13, convTransposeCases(), 1e-5)
}

// TestConvTransposeGrad checks the gradients of X, W and B by central
// finite differences.
func TestConvTransposeGrad(t *testing.T) {
	for _, c := range convTransposeCases() {
		t.Run(c.name, func(t *testing.T) {
			ins := []onnxtest.In{onnxtest.Feed("x", c.ins[0].Shape, c.ins[0].Float64s()...)}
			wrt := []string{"x"}
			for j, name := range []string{"w", "b"} {
				if j+1 >= len(c.ins) || c.ins[j+1] == nil {
					ins = append(ins, onnxtest.Absent)
					continue
				}
				ins = append(ins, onnxtest.InitF(name, c.ins[j+1].Shape, c.ins[j+1].Float64s()...))
				wrt = append(wrt, name)
			}
			m := onnxtest.OneNode("ConvTranspose", 13, c.attrs, ins, "y")
			for _, v := range wrt {
				gradCheck(t, m, onnxtest.Feeds(ins), v, 1e-6)
			}
		})
	}
}

// TestConvTransposeErrors checks that bad geometry is refused with an
// error naming the node.
func TestConvTransposeErrors(t *testing.T) {
	x := onnxtest.Feed("x", []int{1, 3, 4, 4}, make([]float64, 48)...)
	cases := []struct {
		name  string
		attrs []*onnxpb.AttributeProto
		w     onnxtest.In
	}{
		{"channels", nil, onnxtest.InitF("w", []int{2, 2, 3, 3}, make([]float64, 36)...)},
		{"kernel_shape", []*onnxpb.AttributeProto{onnxtest.AInts("kernel_shape", 2, 2)}, onnxtest.InitF("w", []int{3, 2, 3, 3}, make([]float64, 54)...)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := onnxtest.OneNode("ConvTranspose", 13, c.attrs, []onnxtest.In{x, c.w}, "y")
			if _, err := tryGraph(m, onnxtest.Feeds([]onnxtest.In{x}), nil); err == nil {
				t.Fatal("no error")
			}
		})
	}
}
