package models

import (
	"fmt"
	"reflect"

	"github.com/paretonav/paretonav/importer/onnxpb"
)

// inferShapes propagates shapes through m's graph for the operators this
// package emits, checking each node's inputs as it goes, and returns the
// shape of every value (-1 for the batch dimension). It is a small,
// self-contained stand-in for onnx.shape_inference: enough to prove that
// the graphs we write are consistent without Python.
func inferShapes(m *onnxpb.ModelProto) (map[string][]int64, error) {
	g := m.GetGraph()
	shapes := map[string][]int64{}
	consts := map[string][]float32{}
	for _, in := range g.Input {
		var s []int64
		for _, d := range in.GetType().GetTensorType().GetShape().GetDim() {
			if d.GetDimParam() != "" {
				s = append(s, -1)
			} else {
				s = append(s, d.GetDimValue())
			}
		}
		shapes[in.GetName()] = s
	}
	for _, t := range g.Initializer {
		shapes[t.GetName()] = append([]int64{}, t.Dims...)
	}
	attr := func(n *onnxpb.NodeProto, name string) *onnxpb.AttributeProto {
		for _, a := range n.Attribute {
			if a.GetName() == name {
				return a
			}
		}
		return nil
	}
	for _, n := range g.Node {
		in := make([][]int64, len(n.Input))
		for i, name := range n.Input {
			if name == "" {
				continue
			}
			s, ok := shapes[name]
			if !ok {
				return nil, fmt.Errorf("node %s (%s): input %q not defined before use", n.GetName(), n.GetOpType(), name)
			}
			in[i] = s
		}
		bad := func(format string, args ...any) error {
			return fmt.Errorf("node %s (%s) inputs %v: %s", n.GetName(), n.GetOpType(), in, fmt.Sprintf(format, args...))
		}
		var out [][]int64
		switch op := n.GetOpType(); op {
		case "Constant":
			t := attr(n, "value").GetT()
			out = [][]int64{t.Dims}
			consts[n.Output[0]] = t.FloatData
		case "Relu", "Sigmoid", "LogSoftmax", "Identity":
			out = [][]int64{in[0]}
		case "Conv":
			x, w := in[0], in[1]
			k, pads := attr(n, "kernel_shape").Ints, attr(n, "pads").Ints
			if len(x) != 4 || len(w) != 4 || x[1] != w[1] || !reflect.DeepEqual(k, w[2:]) || !reflect.DeepEqual(in[2], w[:1]) {
				return nil, bad("conv weight/bias/channels disagree")
			}
			out = [][]int64{{x[0], w[0], x[2] + pads[0] + pads[2] - k[0] + 1, x[3] + pads[1] + pads[3] - k[1] + 1}}
		case "BatchNormalization":
			for i := 1; i < 5; i++ {
				if !reflect.DeepEqual(in[i], []int64{in[0][1]}) {
					return nil, bad("parameter %d is not [C]", i)
				}
			}
			out = [][]int64{in[0]}
		case "MaxPool":
			x := in[0]
			if x[2]%2 != 0 || x[3]%2 != 0 {
				return nil, bad("odd spatial size for a 2x2 pool")
			}
			s := []int64{x[0], x[1], x[2] / 2, x[3] / 2}
			out = [][]int64{s, s}
		case "MaxUnpool":
			if !reflect.DeepEqual(in[0], in[1]) {
				return nil, bad("values and indices differ in shape")
			}
			x := in[0]
			out = [][]int64{{x[0], x[1], x[2] * 2, x[3] * 2}}
		case "Resize":
			sc := consts[n.Input[2]]
			x := in[0]
			if len(sc) != 4 {
				return nil, bad("scales not a constant of 4 values")
			}
			s := make([]int64, 4)
			for i := range s {
				s[i] = x[i]
				if x[i] >= 0 {
					s[i] = int64(float32(x[i]) * sc[i])
				}
			}
			out = [][]int64{s}
		case "Concat":
			a, b := in[0], in[1]
			if len(a) != 4 || len(b) != 4 || a[0] != b[0] || a[2] != b[2] || a[3] != b[3] {
				return nil, bad("concat shapes disagree off axis 1")
			}
			out = [][]int64{{a[0], a[1] + b[1], a[2], a[3]}}
		case "Mul", "Div":
			a, b := in[0], in[1]
			if len(a) != len(b) {
				return nil, bad("rank mismatch")
			}
			s := make([]int64, len(a))
			for i := range a {
				switch {
				case a[i] == b[i]:
					s[i] = a[i]
				case b[i] == 1:
					s[i] = a[i]
				case a[i] == 1:
					s[i] = b[i]
				default:
					return nil, bad("not broadcastable")
				}
			}
			out = [][]int64{s}
		case "ReduceL2":
			s := append([]int64{}, in[0]...)
			for _, ax := range attr(n, "axes").Ints {
				s[ax] = 1
			}
			out = [][]int64{s}
		case "Flatten":
			x := in[0]
			p := int64(1)
			for _, d := range x[1:] {
				p *= d
			}
			out = [][]int64{{x[0], p}}
		case "Gemm":
			x, w := in[0], in[1]
			if len(x) != 2 || len(w) != 2 || x[1] != w[1] || !reflect.DeepEqual(in[2], w[:1]) {
				return nil, bad("gemm shapes disagree (transB=1)")
			}
			out = [][]int64{{x[0], w[0]}}
		default:
			return nil, fmt.Errorf("node %s: operator %s unknown to the test's shape inference", n.GetName(), op)
		}
		if len(out) < len(n.Output) {
			return nil, bad("%d outputs, inferred %d", len(n.Output), len(out))
		}
		for i, o := range n.Output {
			if _, dup := shapes[o]; dup {
				return nil, bad("output %q assigned twice", o)
			}
			shapes[o] = out[i]
		}
	}
	for _, o := range g.Output {
		got, ok := shapes[o.GetName()]
		if !ok {
			return nil, fmt.Errorf("graph output %q is never computed", o.GetName())
		}
		var want []int64
		for _, d := range o.GetType().GetTensorType().GetShape().GetDim() {
			if d.GetDimParam() != "" {
				want = append(want, -1)
			} else {
				want = append(want, d.GetDimValue())
			}
		}
		if !reflect.DeepEqual(got, want) {
			return nil, fmt.Errorf("graph output %q: inferred %v, declared %v", o.GetName(), got, want)
		}
	}
	return shapes, nil
}
