package rewrite

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/importer/onnxpb"
)

func node(op, name string, ins []string, outs []string, attrs ...*onnxpb.AttributeProto) *onnxpb.NodeProto {
	return &onnxpb.NodeProto{OpType: proto.String(op), Name: proto.String(name), Input: ins, Output: outs, Attribute: attrs}
}

func intsAttr(name string, v ...int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INTS.Enum(), Ints: v}
}

func graph1(nodes ...*onnxpb.NodeProto) *onnxpb.GraphProto {
	return &onnxpb.GraphProto{Node: nodes, Output: []*onnxpb.ValueInfoProto{{Name: proto.String("y")}}}
}

// TestApply checks each pass on its pattern: the last node of the
// pattern becomes a fused node at its place, with its name and outputs,
// reading its inputs and then the pass's extra inputs; Fallback gives
// the node back; the graph given is not modified; a pass turned off
// leaves its pattern alone; and a pattern that does not hold (an
// intermediate value read twice, another permutation, ReduceMeans over
// different axes) is left alone.
func TestApply(t *testing.T) {
	// the nine ops of a LayerNorm over the last axis, as exported before
	// opset 17
	lnNodes := func() []*onnxpb.NodeProto {
		return []*onnxpb.NodeProto{
			node("ReduceMean", "m1", []string{"x"}, []string{"mu"}, intsAttr("axes", -1)),
			node("Sub", "s", []string{"x", "mu"}, []string{"d"}),
			node("Pow", "p", []string{"d", "two"}, []string{"d2"}),
			node("ReduceMean", "m2", []string{"d2"}, []string{"v"}, intsAttr("axes", -1)),
			node("Add", "ae", []string{"eps", "v"}, []string{"ve"}),
			node("Sqrt", "sq", []string{"ve"}, []string{"sd"}),
			node("Div", "dv", []string{"d", "sd"}, []string{"n"}),
			node("Mul", "ms", []string{"w", "n"}, []string{"nw"}),
			node("Add", "ab", []string{"nw", "b"}, []string{"y"}),
		}
	}
	for _, c := range []struct {
		name  string
		nodes []*onnxpb.NodeProto
		at    int      // the node fused
		op    string   // its fused op type
		extra []string // its extra inputs
	}{
		{"gelu", []*onnxpb.NodeProto{
			node("Div", "d", []string{"x", "r2"}, []string{"a"}),
			node("Erf", "e", []string{"a"}, []string{"b"}),
			node("Add", "p", []string{"b", "one"}, []string{"c"}),
			node("Mul", "m1", []string{"x", "c"}, []string{"h"}),
			node("Mul", "m2", []string{"h", "half"}, []string{"y"}),
		}, 4, Gelu, []string{"x", "one", "r2", "half"}},
		{"silu", []*onnxpb.NodeProto{
			node("Sigmoid", "s", []string{"x"}, []string{"sx"}),
			node("Mul", "m", []string{"sx", "x"}, []string{"y"}),
		}, 1, SiLU, nil},
		{"shuffle", []*onnxpb.NodeProto{
			node("Concat", "c", []string{"p0", "p1"}, []string{"cat"}, intAttr("axis", 1)),
			node("Reshape", "r", []string{"cat", "s"}, []string{"g"}),
			node("Transpose", "t", []string{"g"}, []string{"y"}, intsAttr("perm", 0, 2, 1, 3)),
		}, 2, ChannelShuffle, []string{"cat", "p0", "p1"}},
		{"conv", []*onnxpb.NodeProto{
			node("Concat", "c", []string{"p0", "p1"}, []string{"cat"}, intAttr("axis", 1)),
			node("Conv", "cv", []string{"cat", "w", "b"}, []string{"y"}),
		}, 1, ConvConcat, []string{"p0", "p1"}},
		{"layernorm", lnNodes(), 8, LayerNorm, []string{"x", "w", "b", "eps", "two"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			gp := graph1(c.nodes...)
			before := proto.Clone(gp)
			got := Apply(gp, Options{})
			if !proto.Equal(gp, before) {
				t.Fatal("Apply modified the graph it was given")
			}
			for i, n := range got.Node {
				if i != c.at && n != gp.Node[i] {
					t.Fatalf("node %d (%s) replaced", i, n.GetName())
				}
			}
			f := got.Node[c.at]
			orig := gp.Node[c.at]
			if !Fused(f) || f.GetOpType() != c.op || f.GetName() != orig.GetName() || !slices.Equal(f.Output, orig.Output) {
				t.Fatalf("fused node %v, want %s in %s named %q", f, c.op, Domain, orig.GetName())
			}
			if !slices.Equal(Extra(f), c.extra) {
				t.Fatalf("extra inputs %v, want %v", Extra(f), c.extra)
			}
			fb := Fallback(f)
			if fb.GetOpType() != orig.GetOpType() || fb.GetDomain() != "" || !slices.Equal(fb.Input, orig.Input) || len(fb.Attribute) != len(orig.Attribute) {
				t.Fatalf("fallback %v, want %v", fb, orig)
			}
			if off := Apply(gp, Options{Off: []string{c.op}}); off != gp {
				t.Fatalf("with %s off the graph changed", c.op)
			}
		})
	}
	// not patterns: the Erf's value read twice; a Transpose of another
	// permutation; two LayerNorms below
	gelu := graph1(
		node("Div", "d", []string{"x", "r2"}, []string{"a"}),
		node("Erf", "e", []string{"a"}, []string{"b"}),
		node("Add", "p", []string{"b", "one"}, []string{"c"}),
		node("Mul", "m1", []string{"x", "c"}, []string{"h"}),
		node("Mul", "m2", []string{"h", "half"}, []string{"y"}),
		node("Neg", "n", []string{"b"}, []string{"z"}),
	)
	shuffle := graph1(
		node("Concat", "c", []string{"p0", "p1"}, []string{"cat"}, intAttr("axis", 1)),
		node("Reshape", "r", []string{"cat", "s"}, []string{"g"}),
		node("Transpose", "t", []string{"g"}, []string{"y"}, intsAttr("perm", 0, 1, 3, 2)),
	)
	// a LayerNorm whose deviation d is also read by another node, and one
	// whose two ReduceMeans have different axes
	lnShared := graph1(append(lnNodes(), node("Neg", "n2", []string{"d"}, []string{"z"}))...)
	lnAxes := graph1(lnNodes()...)
	lnAxes.Node[3] = node("ReduceMean", "m2", []string{"d2"}, []string{"v"}, intsAttr("axes", -2, -1))
	for _, gp := range []*onnxpb.GraphProto{gelu, shuffle, lnShared, lnAxes} {
		if got := Apply(gp, Options{}); got != gp {
			t.Fatalf("no pattern here, yet %v", got.Node)
		}
	}
}
