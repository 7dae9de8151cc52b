package importer

import (
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/importer/onnxpb"
)

// withUnknown appends a length-delimited field to m's unknown fields, as
// a writer of a newer onnx.proto would.
func withUnknown(m proto.Message, num protowire.Number, payload []byte) {
	b := m.ProtoReflect().GetUnknown()
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = protowire.AppendBytes(b, payload)
	m.ProtoReflect().SetUnknown(b)
}

func refAttr(name, ref string, typ onnxpb.AttributeProto_AttributeType) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), RefAttrName: proto.String(ref), Type: typ.Enum()}
}

// funcModel has two local functions of domain "custom": act(a) =
// Neg(LeakyRelu(a, alpha = @alpha)), alpha an attribute reference with
// default 0.5 (attribute_proto), and
// twice(a) = act(act(a, alpha = @k)). The graph calls act once with
// alpha 0.1 (node "c1"), once with the default (no node name), and twice
// with k 0.2 (node "c3").
func funcModel() *onnxpb.ModelProto {
	act := &onnxpb.FunctionProto{
		Name: proto.String("act"), Domain: proto.String("custom"),
		Input: []string{"a"}, Output: []string{"y"},
		Node: []*onnxpb.NodeProto{
			mkNode("LeakyRelu", []string{"a"}, []string{"t"}, refAttr("alpha", "alpha", onnxpb.AttributeProto_FLOAT)),
			mkNode("Neg", []string{"t"}, []string{"y"}),
		},
		OpsetImport: []*onnxpb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(17)}},
	}
	def, err := proto.Marshal(&onnxpb.AttributeProto{Name: proto.String("alpha"), F: proto.Float32(0.5), Type: onnxpb.AttributeProto_FLOAT.Enum()})
	if err != nil {
		panic(err)
	}
	withUnknown(act, fieldFuncAttributeProto, def)
	twice := &onnxpb.FunctionProto{
		Name: proto.String("twice"), Domain: proto.String("custom"),
		Input: []string{"a"}, Output: []string{"y"}, Attribute: []string{"k"},
		Node: []*onnxpb.NodeProto{
			{OpType: proto.String("act"), Domain: proto.String("custom"), Input: []string{"a"}, Output: []string{"t"}, Attribute: []*onnxpb.AttributeProto{refAttr("alpha", "k", onnxpb.AttributeProto_FLOAT)}},
			{OpType: proto.String("act"), Domain: proto.String("custom"), Input: []string{"t"}, Output: []string{"y"}, Attribute: []*onnxpb.AttributeProto{refAttr("alpha", "k", onnxpb.AttributeProto_FLOAT)}},
		},
		OpsetImport: []*onnxpb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(17)}, {Domain: proto.String("custom"), Version: proto.Int64(1)}},
	}
	call := func(name, op string, in, out string, attrs ...*onnxpb.AttributeProto) *onnxpb.NodeProto {
		n := &onnxpb.NodeProto{OpType: proto.String(op), Domain: proto.String("custom"), Input: []string{in}, Output: []string{out}, Attribute: attrs}
		if name != "" {
			n.Name = proto.String(name)
		}
		return n
	}
	f := func(name string, v float32) *onnxpb.AttributeProto {
		return &onnxpb.AttributeProto{Name: proto.String(name), F: proto.Float32(v), Type: onnxpb.AttributeProto_FLOAT.Enum()}
	}
	mp := mkModel(9, 17, &onnxpb.GraphProto{
		Name:  proto.String("g"),
		Input: []*onnxpb.ValueInfoProto{valueInfo("x")},
		Node: []*onnxpb.NodeProto{
			call("c1", "act", "x", "y1", f("alpha", 0.1)),
			call("", "act", "y1", "y2"),
			call("c3", "twice", "y2", "y3", f("k", 0.2)),
			mkNode("Add", []string{"y3", "w"}, []string{"out"}),
		},
		Initializer: []*onnxpb.TensorProto{mkInit(NewFloat32("w", []int{3}, []float32{1, 2, 3}))},
		Output:      []*onnxpb.ValueInfoProto{valueInfo("out")},
	})
	mp.OpsetImport = append(mp.OpsetImport, &onnxpb.OperatorSetIdProto{Domain: proto.String("custom"), Version: proto.Int64(1)})
	mp.Functions = []*onnxpb.FunctionProto{act, twice}
	return mp
}

// TestInlineFunctions checks the inlined graph: ops, unique names, the
// wiring and every attribute reference resolved (call value, default,
// through a nested call).
func TestInlineFunctions(t *testing.T) {
	b, err := proto.Marshal(funcModel())
	if err != nil {
		t.Fatal(err)
	}
	m, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		name, op, in, out string
		alpha             float32
	}
	want := []row{
		{"c1/LeakyRelu_0", "LeakyRelu", "x", "c1/t", 0.1},
		{"c1/Neg_1", "Neg", "c1/t", "y1", 0},
		{"act/LeakyRelu_0", "LeakyRelu", "y1", "act/t", 0.5},
		{"act/Neg_1", "Neg", "act/t", "y2", 0},
		{"c3/act_0/LeakyRelu_0", "LeakyRelu", "y2", "c3/act_0/t", 0.2},
		{"c3/act_0/Neg_1", "Neg", "c3/act_0/t", "c3/t", 0},
		{"c3/act_1/LeakyRelu_0", "LeakyRelu", "c3/t", "c3/act_1/t", 0.2},
		{"c3/act_1/Neg_1", "Neg", "c3/act_1/t", "y3", 0},
	}
	nodes := m.Proto.Graph.Node
	if len(nodes) != len(want)+1 {
		t.Fatalf("%d nodes after inlining, want %d", len(nodes), len(want)+1)
	}
	for i, w := range want {
		n := nodes[i]
		got := row{n.GetName(), n.GetOpType(), n.Input[0], n.Output[0], 0}
		if len(n.Attribute) > 0 {
			if a := n.Attribute[0]; a.GetRefAttrName() != "" || a.GetName() != "alpha" {
				t.Errorf("node %d: attribute %v not resolved", i, a)
			} else {
				got.alpha = a.GetF()
			}
		}
		if got != w {
			t.Errorf("node %d: got %+v, want %+v", i, got, w)
		}
		if n.GetDomain() != "" {
			t.Errorf("node %d: domain %q left after inlining", i, n.GetDomain())
		}
	}
}

// TestSaveKeepsFunctions checks that Save writes the functions and their
// calls as they were, with the new weights.
func TestSaveKeepsFunctions(t *testing.T) {
	orig := funcModel()
	b, err := proto.Marshal(orig)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "f.onnx")
	w := NewFloat32("w", []int{3}, []float32{4, 5, 6})
	if err := Save(path, m, map[string]*Tensor{"w": w}, SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	back, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(&onnxpb.ModelProto{Functions: back.written.Functions}, &onnxpb.ModelProto{Functions: orig.Functions}) {
		t.Error("functions changed on save")
	}
	for i, n := range back.written.Graph.Node {
		if !proto.Equal(n, orig.Graph.Node[i]) {
			t.Errorf("node %d changed on save: %v", i, n)
		}
	}
	inits, err := back.Initializers()
	if err != nil {
		t.Fatal(err)
	}
	if got := inits["w"].F32; got[0] != 4 || got[2] != 6 {
		t.Errorf("saved w = %v, want [4 5 6]", got)
	}
}

// TestInlineErrors checks that bad functions are refused by name.
func TestInlineErrors(t *testing.T) {
	cases := []struct {
		name string
		edit func(mp *onnxpb.ModelProto)
		want string
	}{
		{"unknown attribute", func(mp *onnxpb.ModelProto) {
			mp.Graph.Node[0].Attribute = append(mp.Graph.Node[0].Attribute, attrI("gamma", 1))
		}, `attribute "gamma" is not one of the function's attributes`},
		{"other opset", func(mp *onnxpb.ModelProto) { mp.Functions[0].OpsetImport[0].Version = proto.Int64(13) }, "function custom.act: imports default-domain opset 13 but the model imports 17"},
		{"too many inputs", func(mp *onnxpb.ModelProto) { mp.Graph.Node[0].Input = []string{"x", "x"} }, `node "c1" (act): inlining local function custom.act: the call has 2 inputs, the function declares 1`},
		{"recursive", func(mp *onnxpb.ModelProto) {
			mp.Functions[0].Node[1] = &onnxpb.NodeProto{OpType: proto.String("act"), Domain: proto.String("custom"), Input: []string{"t"}, Output: []string{"y"}}
		}, "nest more than 64 deep"},
		{"dangling body value", func(mp *onnxpb.ModelProto) { mp.Functions[0].Node[1].Input[0] = "nowhere" }, `input "c1/nowhere" is not produced`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mp := funcModel()
			c.edit(mp)
			b, err := proto.Marshal(mp)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Decode(b)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

// TestInlineOverloads checks that calls pick the function of their
// overload (IR 10: NodeProto.overload, FunctionProto.overload).
func TestInlineOverloads(t *testing.T) {
	fn := func(overload, op string) *onnxpb.FunctionProto {
		f := &onnxpb.FunctionProto{Name: proto.String("f"), Domain: proto.String("custom"), Input: []string{"a"}, Output: []string{"b"},
			Node:        []*onnxpb.NodeProto{mkNode(op, []string{"a"}, []string{"b"})},
			OpsetImport: []*onnxpb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(17)}}}
		if overload != "" {
			withUnknown(f, fieldFuncOverload, []byte(overload))
		}
		return f
	}
	call := func(overload, in, out string) *onnxpb.NodeProto {
		n := &onnxpb.NodeProto{OpType: proto.String("f"), Domain: proto.String("custom"), Input: []string{in}, Output: []string{out}}
		if overload != "" {
			withUnknown(n, fieldNodeOverload, []byte(overload))
		}
		return n
	}
	mp := mkModel(10, 17, &onnxpb.GraphProto{Name: proto.String("g"), Input: []*onnxpb.ValueInfoProto{valueInfo("x")},
		Node:   []*onnxpb.NodeProto{call("neg", "x", "h1"), call("", "h1", "h2"), call("abs", "h2", "y")},
		Output: []*onnxpb.ValueInfoProto{valueInfo("y")}})
	mp.OpsetImport = append(mp.OpsetImport, &onnxpb.OperatorSetIdProto{Domain: proto.String("custom"), Version: proto.Int64(1)})
	mp.Functions = []*onnxpb.FunctionProto{fn("", "Relu"), fn("neg", "Neg"), fn("abs", "Abs")}
	b, err := proto.Marshal(mp)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, n := range m.Proto.Graph.Node {
		ops = append(ops, n.GetOpType())
	}
	if strings.Join(ops, " ") != "Neg Relu Abs" {
		t.Errorf("inlined ops %v, want Neg Relu Abs", ops)
	}
}
