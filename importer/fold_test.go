package importer

import (
	"fmt"
	"testing"

	"github.com/paretonav/paretonav/importer/onnxpb"
)

// TestFoldView folds the PyTorch export of x.view(x.size(0), -1): the
// Constant nodes fold, the Shape(x)->Gather->Unsqueeze->Concat->Reshape
// chain stays (x's batch size is dynamic), and evaluating that chain with
// EvalNode for two batch sizes gives Reshape targets [B, 24].
func TestFoldView(t *testing.T) {
	for _, opset := range []int{11, 13} {
		t.Run(fmt.Sprintf("opset%d", opset), func(t *testing.T) {
			m, err := Load(fmt.Sprintf("testdata/view_dyn%d.onnx", opset))
			if err != nil {
				t.Fatal(err)
			}
			f, err := Fold(m)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range f.FoldedNodes {
				if n.GetOpType() != "Constant" {
					t.Errorf("folded %s; only Constant nodes are constant here", n.GetOpType())
				}
			}
			var ops []string
			for _, n := range f.Nodes {
				ops = append(ops, n.GetOpType())
			}
			if got, want := fmt.Sprint(ops), "[Shape Gather Unsqueeze Concat Reshape Gemm]"; got != want {
				t.Errorf("nodes left %s, want %s", got, want)
			}
			if _, ok := f.Constants["fc.weight"]; ok {
				t.Errorf("the float weight fc.weight was treated as a constant")
			}
			for _, batch := range []int{3, 5} {
				target := evalChain(t, m, f, map[string][]int{"x": {batch, 2, 3, 4}})
				if fmt.Sprint(target.I64) != fmt.Sprint([]int64{int64(batch), -1}) {
					t.Fatalf("batch %d: Reshape target %v, want [%d -1]", batch, target.I64, batch)
				}
				shape, err := ReshapeTarget([]int{batch, 2, 3, 4}, target.I64, false)
				if err != nil || fmt.Sprint(shape) != fmt.Sprint([]int{batch, 24}) {
					t.Errorf("batch %d: reshape to %v (%v), want [%d 24]", batch, shape, err, batch)
				}
			}
		})
	}
}

// evalChain does what the backend does while lowering: it runs EvalNode on
// the nodes left by Fold whose inputs are constants or whose input's shape
// is known, and returns the Reshape node's shape argument.
func evalChain(t *testing.T, m *Model, f *Folded, shapes map[string][]int) *Tensor {
	t.Helper()
	vals := map[string]*Tensor{}
	for k, v := range f.Constants {
		vals[k] = v
	}
	for _, n := range f.Nodes {
		if n.GetOpType() == "Reshape" {
			return vals[n.Input[1]]
		}
		var in []*Tensor
		ok := true
		for _, name := range n.Input {
			switch {
			case vals[name] != nil:
				in = append(in, vals[name])
			case shapes[name] != nil && n.GetOpType() == "Shape":
				in = append(in, &Tensor{Shape: shapes[name]})
			default:
				ok = false
			}
		}
		if !ok {
			t.Fatalf("%s: inputs %v not known", n.GetOpType(), n.Input)
		}
		out, err := EvalNode(n, m.Opset(""), in)
		if err != nil {
			t.Fatal(err)
		}
		vals[n.Output[0]] = out[0]
	}
	t.Fatal("no Reshape node")
	return nil
}

// TestFoldChain folds a constant-only chain (Constant -> Shape of an
// initializer -> Concat -> Cast) and leaves nodes that read a graph input,
// an overridable initializer, or a float weight.
func TestFoldChain(t *testing.T) {
	g := &onnxpb.GraphProto{
		Input: []*onnxpb.ValueInfoProto{valueInfo("x"), valueInfo("k")},
		Initializer: []*onnxpb.TensorProto{
			mkInit(NewFloat32("w", []int{2, 3}, make([]float32, 6))),
			mkInit(NewInt64("k", []int{1}, []int64{9})), // also a graph input: overridable
		},
		Node: []*onnxpb.NodeProto{
			mkNode("Constant", nil, []string{"c"}, attrInts("value_ints", 7)),
			mkNode("Shape", []string{"w"}, []string{"sw"}),
			mkNode("Concat", []string{"sw", "c"}, []string{"cat"}, attrI("axis", 0)),
			mkNode("Cast", []string{"cat"}, []string{"castf"}, attrI("to", int64(Float32))),
			mkNode("Add", []string{"cat", "k"}, []string{"withk"}),
			mkNode("Mul", []string{"w", "castf"}, []string{"wf"}),
			mkNode("Shape", []string{"x"}, []string{"sx"}),
		},
		Output: []*onnxpb.ValueInfoProto{valueInfo("withk"), valueInfo("wf"), valueInfo("sx")},
	}
	m := &Model{Proto: mkModel(8, 13, g)}
	if err := Validate(m.Proto); err != nil {
		t.Fatal(err)
	}
	f, err := Fold(m)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.FoldedNodes) != 4 || len(f.Nodes) != 3 {
		t.Fatalf("folded %d nodes and left %d, want 4 and 3", len(f.FoldedNodes), len(f.Nodes))
	}
	want := map[string]string{"c": "[7]", "sw": "[2 3]", "cat": "[2 3 7]", "castf": "[2 3 7]"}
	for name, w := range want {
		got := f.Constants[name]
		if got == nil || fmt.Sprint(got.Float64s()) != w {
			t.Errorf("%s = %v, want %s", name, got, w)
		}
	}
	if f.Constants["castf"].Type != Float32 {
		t.Errorf("castf has type %v, want FLOAT", f.Constants["castf"].Type)
	}
	for _, name := range []string{"k", "w", "withk", "wf", "sx"} {
		if _, ok := f.Constants[name]; ok {
			t.Errorf("%s is a constant; it should not be", name)
		}
	}
}

// TestFoldError checks that a constant node that cannot be evaluated is an
// error naming it.
func TestFoldError(t *testing.T) {
	g := &onnxpb.GraphProto{
		Node: []*onnxpb.NodeProto{
			mkNode("Constant", nil, []string{"a"}, attrInts("value_ints", 1, 2)),
			mkNode("Constant", nil, []string{"b"}, attrInts("value_ints", 1, 2, 3)),
			mkNode("Add", []string{"a", "b"}, []string{"y"}),
		},
		Output: []*onnxpb.ValueInfoProto{valueInfo("y")},
	}
	_, err := Fold(&Model{Proto: mkModel(8, 13, g)})
	if err == nil || !contains(err.Error(), "node #2 (Add)", "cannot be broadcast") {
		t.Errorf("err = %v", err)
	}
}

func contains(s string, subs ...string) bool {
	for _, sub := range subs {
		if !stringsContains(s, sub) {
			return false
		}
	}
	return true
}
