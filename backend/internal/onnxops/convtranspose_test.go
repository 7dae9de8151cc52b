package onnxops

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/backend/internal/shape"
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

// TestConvTranspose32 checks the float32 kernels (GEMMs, col2im, im2col)
// against the float64 direct loop on every case of convTransposeCases and
// on larger ones (the UNet's 2×2/2 upsampling of 64 channels, overlapping
// taps of a 4×4/2 with pads, a grouped stride-1 one), into dirty buffers:
// the output and ∂X, ∂W within 1e-5 of Σ|terms| (float32 accumulation,
// as Gemm and MatMul: TestMatMul32), ∂B bit for bit.
func TestConvTranspose32(t *testing.T) {
	cases := convTransposeCases()
	r := rand.New(rand.NewSource(12))
	cases = append(cases,
		oracleCase{"unet 64 to 32 k2 s2", []*onnxpb.AttributeProto{onnxtest.AInts("strides", 2, 2)},
			[]*importer.Tensor{onnxtest.RandUniform32(r, "x", 2, 64, 16, 16), onnxtest.RandUniform32(r, "w", 64, 32, 2, 2), onnxtest.RandUniform32(r, "b", 32)}},
		oracleCase{"k4 s2 p1 overlapping", []*onnxpb.AttributeProto{onnxtest.AInts("strides", 2, 2), onnxtest.AInts("pads", 1, 1, 1, 1)},
			[]*importer.Tensor{onnxtest.RandUniform32(r, "x", 2, 8, 9, 7), onnxtest.RandUniform32(r, "w", 8, 6, 4, 4), onnxtest.RandUniform32(r, "b", 6)}},
		oracleCase{"groups stride 1 pads", []*onnxpb.AttributeProto{onnxtest.AInt("group", 3), onnxtest.AInts("pads", 1, 2, 0, 1)},
			[]*importer.Tensor{onnxtest.RandUniform32(r, "x", 2, 6, 5, 6), onnxtest.RandUniform32(r, "w", 6, 2, 3, 3), nil}})
	for ci, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			names := []string{"x", "w", "b"}[:len(c.ins)]
			var shapes [][]int
			for j, in := range c.ins {
				if in == nil {
					names[j] = ""
					shapes = append(shapes, nil)
					continue
				}
				shapes = append(shapes, in.Shape)
			}
			for len(names) > 0 && names[len(names)-1] == "" {
				names, shapes = names[:len(names)-1], shapes[:len(shapes)-1]
			}
			n := onnxtest.Node("ConvTranspose", "ct", names, []string{"y"}, c.attrs...)
			op := lowerKernel(t, lowerConvTranspose, n, shapes...)
			rr := rand.New(rand.NewSource(int64(ci)))
			ins32, ins64, abs := make([][]float32, len(op.Ins)), make([][]float64, len(op.Ins)), make([][]float64, len(op.Ins))
			for i, s := range op.Ins {
				k := shape.Numel(s)
				ins32[i], ins64[i], abs[i] = make([]float32, k), make([]float64, k), make([]float64, k)
				for j := range ins32[i] {
					ins32[i][j] = float32(rr.NormFloat64())
					ins64[i][j], abs[i][j] = float64(ins32[i][j]), math.Abs(float64(ins32[i][j]))
				}
			}
			ny := shape.Numel(op.Out)
			y32, y64, yabs := onnxtest.Dirty32(ny), make([]float64, ny), make([]float64, ny)
			op.Fwd32(y32, ins32)
			op.Fwd(y64, ins64)
			op.Fwd(yabs, abs)
			within(t, "output", y32, y64, yabs)
			g32, g64, gabs := make([]float32, ny), make([]float64, ny), make([]float64, ny)
			for i := range g32 {
				g32[i] = float32(rr.NormFloat64())
				g64[i], gabs[i] = float64(g32[i]), math.Abs(float64(g32[i]))
			}
			for k := range op.Ins {
				d32, d64, dabs := onnxtest.Dirty32(len(ins32[k])), make([]float64, len(ins32[k])), make([]float64, len(ins32[k]))
				if !op.Bwd32(k, d32, ins32, y32, g32) {
					t.Fatalf("input %d: the float32 gradient declined", k)
				}
				op.Bwd(k, d64, ins64, y64, g64)
				if k == 2 {
					for i := range d32 {
						if !onnxtest.SameBits32(d32[i], float32(d64[i])) {
							t.Fatalf("∂B[%d] = %v, float64 path %v", i, d32[i], float32(d64[i]))
						}
					}
					continue
				}
				op.Bwd(k, dabs, abs, yabs, gabs)
				within(t, fmt.Sprintf("gradient of input %d", k), d32, d64, dabs)
			}
		})
	}
}
