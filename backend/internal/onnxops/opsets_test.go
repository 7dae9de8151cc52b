package onnxops

import (
	"math/rand"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
	"github.com/paretonav/paretonav/internal/testkit/ortcheck"
)

// newOpsetModel is one IR-10, opset-21 model written with our encoder
// that uses the signatures which changed from opset 18 on: Reduce* with
// axes as an input, Split with num_outputs (uneven), Pad with axes and wrap
// mode (19), plus LayerNormalization (17), Gelu (20) and GroupNormalization
// (21).
func newOpsetModel() (*importer.Model, map[string]*importer.Tensor, []string) {
	r := rand.New(rand.NewSource(21))
	x := onnxtest.RandUniform32(r, "x", 2, 4, 5)
	i64 := func(name string, v ...int64) *importer.Tensor { return importer.NewInt64(name, []int{len(v)}, v) }
	inits := []*importer.Tensor{
		i64("ax1", 1), i64("ax12", 1, 2), i64("pads", 1, 2), i64("padax", 2), i64("wrappads", 0, 1, 2, 0, 3, 4),
		onnxtest.RandUniform32(r, "lns", 5), onnxtest.RandUniform32(r, "lnb", 5),
		onnxtest.RandUniform32(r, "gns", 4), onnxtest.RandUniform32(r, "gnb", 4),
	}
	var nodes []*onnxpb.NodeProto
	var outs []string
	add := func(op string, ins []string, nout int, attrs ...*onnxpb.AttributeProto) {
		var o []string
		for i := 0; i < nout; i++ {
			name := op + string(rune('a'+len(nodes))) + string(rune('0'+i))
			o = append(o, name)
		}
		nodes = append(nodes, onnxtest.Node(op, op+"_"+string(rune('a'+len(nodes))), ins, o, attrs...))
		outs = append(outs, o...)
	}
	for _, op := range []string{"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd",
		"ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"} {
		in := "x"
		if op == "ReduceLogSum" {
			in = "ReduceL1f0" // positive: ReduceL1 is node f
		}
		add(op, []string{in, "ax12"}, 1, onnxtest.AInt("keepdims", 1))
	}
	add("ReduceMean", []string{"x", "ax1"}, 1, onnxtest.AInt("keepdims", 0))
	add("ReduceSum", []string{"x"}, 1) // no axes: all
	add("Split", []string{"x"}, 3, onnxtest.AInt("axis", 2), onnxtest.AInt("num_outputs", 3))
	add("Pad", []string{"x", "pads", "", "padax"}, 1, onnxtest.AString("mode", "reflect"))
	add("Pad", []string{"x", "wrappads"}, 1, onnxtest.AString("mode", "wrap"))
	add("LayerNormalization", []string{"x", "lns", "lnb"}, 1)
	add("Gelu", []string{"x"}, 1, onnxtest.AString("approximate", "tanh"))
	add("GroupNormalization", []string{"x", "gns", "gnb"}, 1, onnxtest.AInt("num_groups", 2))
	m := onnxtest.GraphModel(nodes, inits, map[string][]int64{"x": {2, 4, 5}}, outs...)
	ir, opset := int64(10), int64(21)
	m.Proto.IrVersion, m.Proto.OpsetImport[0].Version = &ir, &opset
	return m, map[string]*importer.Tensor{"x": x}, outs
}

// TestNewOpsetORT checks every output of newOpsetModel against ONNX
// Runtime, after an encode/decode round trip through importer.
func TestNewOpsetORT(t *testing.T) {
	ortcheck.Require(t)
	m, feeds, outs := newOpsetModel()
	b, err := proto.Marshal(m.Proto)
	if err != nil {
		t.Fatal(err)
	}
	dm, err := importer.Decode(b)
	if err != nil {
		t.Fatalf("importer rejects an IR 10 / opset 21 model: %v", err)
	}
	want, err := ortcheck.RunBytes(b, feeds)
	if err != nil {
		t.Fatal(err)
	}
	got := forward(t, dm, feeds)
	for _, o := range outs {
		w := want[o]
		if w == nil {
			t.Fatalf("ONNX Runtime gave no output %q", o)
		}
		onnxtest.AssertClose(t, o+" vs ONNX Runtime", got[o], w.Shape, w.Float64s(), 1e-5)
	}
}

// TestNewOpsetRefused checks that ops not lowered are named with the
// model's opset, and that version-specific attributes are refused by name.
func TestNewOpsetRefused(t *testing.T) {
	cases := []struct {
		op    string
		opset int64
		attrs []*onnxpb.AttributeProto
		ins   []onnxtest.In
		want  string
	}{
		{"ScatterND", 18, []*onnxpb.AttributeProto{onnxtest.AString("reduction", "max")},
			[]onnxtest.In{onnxtest.RandFeed("x", 1, 2, 3), onnxtest.InitI("i", []int{1, 1}, 0), onnxtest.RandFeed("u", 2, 1, 3)}, `ScatterND (node "n0", opset 18)`},
		{"CenterCropPad", 18, nil, []onnxtest.In{onnxtest.RandFeed("x", 1, 2, 3), onnxtest.InitI("s", []int{2}, 1, 1)}, `CenterCropPad (node "n0", opset 18)`},
		{"Mish", 17, nil, []onnxtest.In{onnxtest.RandFeed("x", 1, 2, 3)}, `Mish (node "n0", opset 17)`},
		{"Pad", 18, []*onnxpb.AttributeProto{onnxtest.AString("mode", "wrap")}, []onnxtest.In{onnxtest.RandFeed("x", 1, 2, 3), onnxtest.InitI("p", []int{4}, 0, 1, 0, 1)}, `mode "wrap" needs opset 19`},
		{"Resize", 18, []*onnxpb.AttributeProto{onnxtest.AInt("antialias", 1)},
			[]onnxtest.In{onnxtest.RandFeed("x", 1, 1, 1, 2, 2), {Name: ""}, onnxtest.InitF("s", []int{4}, 1, 1, 2, 2)}, "antialias = 1 is not supported"},
		{"Resize", 18, []*onnxpb.AttributeProto{onnxtest.AString("coordinate_transformation_mode", "half_pixel_symmetric")},
			[]onnxtest.In{onnxtest.RandFeed("x", 1, 1, 1, 2, 2), {Name: ""}, onnxtest.InitF("s", []int{4}, 1, 1, 2, 2)}, `"half_pixel_symmetric" needs opset 19`},
	}
	for _, c := range cases {
		t.Run(c.op, func(t *testing.T) {
			_, err := tryGraph(onnxtest.OneNode(c.op, c.opset, c.attrs, c.ins, "y"), onnxtest.Feeds(c.ins), nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

// TestPadWrapGrad checks Pad's wrap mode (opset 19) by finite differences.
func TestPadWrapGrad(t *testing.T) {
	ins := []onnxtest.In{onnxtest.RandFeed("x", 5, 2, 3, 4), onnxtest.InitI("p", []int{6}, 0, 2, 1, 1, 3, 4)}
	gradCheck(t, onnxtest.OneNode("Pad", 19, []*onnxpb.AttributeProto{onnxtest.AString("mode", "wrap")}, ins, "y"), onnxtest.Feeds(ins), "x", 1e-6)
}
