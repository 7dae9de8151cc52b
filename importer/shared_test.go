package importer

import (
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/importer/onnxpb"
)

// sharedModel: zero bias b read by two Gemm nodes (g1, g2) and by an If
// branch (node "cond"), w read by g1 only, a shape s read by two unnamed
// Reshape nodes; b is also declared as a graph input (IR 3 style).
func sharedModel() *onnxpb.ModelProto {
	named := func(n *onnxpb.NodeProto, name string) *onnxpb.NodeProto { n.Name = proto.String(name); return n }
	branch := &onnxpb.GraphProto{Name: proto.String("then"), Node: []*onnxpb.NodeProto{mkNode("Identity", []string{"b"}, []string{"bt"})}, Output: []*onnxpb.ValueInfoProto{valueInfo("bt")}}
	other := &onnxpb.GraphProto{Name: proto.String("else"), Node: []*onnxpb.NodeProto{mkNode("Identity", []string{"x"}, []string{"we"})}, Output: []*onnxpb.ValueInfoProto{valueInfo("we")}}
	ifNode := mkNode("If", []string{"c"}, []string{"z"},
		&onnxpb.AttributeProto{Name: proto.String("then_branch"), G: branch, Type: onnxpb.AttributeProto_GRAPH.Enum()},
		&onnxpb.AttributeProto{Name: proto.String("else_branch"), G: other, Type: onnxpb.AttributeProto_GRAPH.Enum()})
	return mkModel(3, 13, &onnxpb.GraphProto{
		Name:  proto.String("g"),
		Input: []*onnxpb.ValueInfoProto{valueInfo("x"), valueInfo("c"), valueInfo("b")},
		Node: []*onnxpb.NodeProto{
			named(mkNode("Gemm", []string{"x", "w", "b"}, []string{"h"}), "g1"),
			named(mkNode("Gemm", []string{"h", "w2", "b"}, []string{"y"}), "g2"),
			mkNode("Reshape", []string{"y", "s"}, []string{"r1"}),
			mkNode("Reshape", []string{"r1", "s"}, []string{"r2"}),
			named(ifNode, "cond"),
		},
		Initializer: []*onnxpb.TensorProto{
			mkInit(NewFloat32("w", []int{2, 2}, []float32{1, 2, 3, 4})),
			mkInit(NewFloat32("w2", []int{2, 2}, []float32{1, 0, 0, 1})),
			mkInit(NewFloat32("b", []int{2}, []float32{0, 0})),
			mkInit(NewInt64("s", []int{2}, []int64{2, -1})),
		},
		Output: []*onnxpb.ValueInfoProto{valueInfo("r2"), valueInfo("z")},
	})
}

func TestSharedInitializers(t *testing.T) {
	m := &Model{Proto: sharedModel()}
	want := []Shared{{"b", []string{"g1", "g2", "cond"}, []string{"g1", "g2", "cond"}}, {"s", []string{"#2", "#3"}, []string{"#2", "#3"}}}
	if got := m.SharedInitializers(); !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestUntie checks the copies, the rewiring (inputs and the If branch),
// the graph inputs and that the result is a valid model with nothing
// shared left among the untied names.
func TestUntie(t *testing.T) {
	m := &Model{Proto: sharedModel()}
	got, err := m.Untie([]string{"b"})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string][]string{"b": {"b.g2", "b.cond"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("copies %v, want %v", got, want)
	}
	g := m.Proto.Graph
	if g.Node[0].Input[2] != "b" || g.Node[1].Input[2] != "b.g2" {
		t.Errorf("Gemm inputs %v, %v", g.Node[0].Input, g.Node[1].Input)
	}
	if in := g.Node[4].Attribute[0].G.Node[0].Input[0]; in != "b.cond" {
		t.Errorf("If's then branch reads %q, want b.cond", in)
	}
	if in := g.Node[4].Attribute[1].G.Node[0].Input[0]; in != "x" {
		t.Errorf("If's else branch reads %q, want x", in)
	}
	inits, err := m.Initializers()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range got["b"] {
		if !reflect.DeepEqual(inits[c], &Tensor{Name: c, Type: Float32, Shape: []int{2}, F32: []float32{0, 0}}) {
			t.Errorf("copy %s = %+v", c, inits[c])
		}
	}
	if n := len(g.Input); n != 5 || g.Input[3].GetName() != "b.g2" {
		t.Errorf("graph inputs %v: want the copies declared too (IR 3)", g.Input)
	}
	if err := Validate(m.Proto); err != nil {
		t.Errorf("untied model invalid: %v", err)
	}
	if sh := m.SharedInitializers(); len(sh) != 1 || sh[0].Name != "s" {
		t.Errorf("still shared after untie: %v", sh)
	}
	if _, err := m.Untie([]string{"nope"}); err == nil || !strings.Contains(err.Error(), `initializer "nope": no such initializer`) {
		t.Errorf("unknown name: %v", err)
	}
}

// TestSharedReaders checks that Readers look through the Identity nodes
// torch's exporter writes for merged initializers.
func TestSharedReaders(t *testing.T) {
	named := func(n *onnxpb.NodeProto, name string) *onnxpb.NodeProto { n.Name = proto.String(name); return n }
	mp := mkModel(8, 17, &onnxpb.GraphProto{
		Name:  proto.String("g"),
		Input: []*onnxpb.ValueInfoProto{valueInfo("x")},
		Node: []*onnxpb.NodeProto{
			named(mkNode("Identity", []string{"ln1.weight"}, []string{"ln2.weight"}), "Identity_0"),
			named(mkNode("Identity", []string{"ln2.weight"}, []string{"ln3.weight"}), "Identity_1"),
			named(mkNode("Mul", []string{"x", "ln1.weight"}, []string{"a"}), "ln1"),
			named(mkNode("Mul", []string{"a", "ln2.weight"}, []string{"b"}), "ln2"),
			named(mkNode("Mul", []string{"b", "ln3.weight"}, []string{"y"}), "ln3"),
		},
		Initializer: []*onnxpb.TensorProto{mkInit(NewFloat32("ln1.weight", []int{2}, []float32{1, 1}))},
		Output:      []*onnxpb.ValueInfoProto{valueInfo("y")},
	})
	m := &Model{Proto: mp}
	want := []Shared{{"ln1.weight", []string{"Identity_0", "ln1"}, []string{"ln1", "ln2", "ln3"}}}
	if got := m.SharedInitializers(); !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestSharedIgnoresShapeReads: an initializer read by a Shape or Size node
// or as CastLike's target type, and by one other node, is not shared (the
// dynamo exporter's Shape(weight) beside the Conv reading it,
// CastLike(value, weight) before a clamp); read by two computing nodes and
// a Shape, it is, with the Shape node in neither list; CastLike's input
// cast counts.
func TestSharedIgnoresShapeReads(t *testing.T) {
	named := func(n *onnxpb.NodeProto, name string) *onnxpb.NodeProto { n.Name = proto.String(name); return n }
	mp := mkModel(8, 17, &onnxpb.GraphProto{
		Name:  proto.String("g"),
		Input: []*onnxpb.ValueInfoProto{valueInfo("x")},
		Node: []*onnxpb.NodeProto{
			named(mkNode("Shape", []string{"w"}, []string{"ws"}), "node_Shape_1"),
			named(mkNode("Size", []string{"w"}, []string{"wn"}), "node_Size_2"),
			named(mkNode("MatMul", []string{"x", "w"}, []string{"h"}), "node_matmul"),
			named(mkNode("Shape", []string{"v"}, []string{"vs"}), "node_Shape_3"),
			named(mkNode("CastLike", []string{"ws", "u"}, []string{"wsc"}), "node_CastLike_4"),
			named(mkNode("Clip", []string{"u", "", "wsc"}, []string{"uc"}), "node_clamp"),
			named(mkNode("CastLike", []string{"t", "x"}, []string{"tc"}), "node_CastLike_5"),
			named(mkNode("Add", []string{"t", "x"}, []string{"tx"}), "node_add"),
			named(mkNode("MatMul", []string{"h", "v"}, []string{"h2"}), "mm1"),
			named(mkNode("MatMul", []string{"h2", "v"}, []string{"y"}), "mm2"),
		},
		Initializer: []*onnxpb.TensorProto{
			mkInit(NewFloat32("w", []int{2, 2}, []float32{1, 2, 3, 4})),
			mkInit(NewFloat32("v", []int{2, 2}, []float32{1, 0, 0, 1})),
			mkInit(NewFloat32("u", []int{1}, []float32{3})),
			mkInit(NewFloat32("t", []int{1}, []float32{2})),
		},
		Output: []*onnxpb.ValueInfoProto{valueInfo("y"), valueInfo("ws"), valueInfo("wn"), valueInfo("vs"),
			valueInfo("uc"), valueInfo("tc"), valueInfo("tx")},
	})
	m := &Model{Proto: mp}
	want := []Shared{
		{"v", []string{"mm1", "mm2"}, []string{"mm1", "mm2"}},
		{"t", []string{"node_CastLike_5", "node_add"}, []string{"node_CastLike_5", "node_add"}},
	}
	if got := m.SharedInitializers(); !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
