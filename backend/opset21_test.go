package backend

import (
	"math/rand"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

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
	x := randF32Tensor(r, "x", 2, 4, 5)
	i64 := func(name string, v ...int64) *importer.Tensor { return importer.NewInt64(name, []int{len(v)}, v) }
	inits := []*importer.Tensor{
		i64("ax1", 1), i64("ax12", 1, 2), i64("pads", 1, 2), i64("padax", 2), i64("wrappads", 0, 1, 2, 0, 3, 4),
		randF32Tensor(r, "lns", 5), randF32Tensor(r, "lnb", 5),
		randF32Tensor(r, "gns", 4), randF32Tensor(r, "gnb", 4),
	}
	var nodes []*onnxpb.NodeProto
	var outs []string
	add := func(op string, ins []string, nout int, attrs ...*onnxpb.AttributeProto) {
		var o []string
		for i := 0; i < nout; i++ {
			name := op + string(rune('a'+len(nodes))) + string(rune('0'+i))
			o = append(o, name)
		}
		nodes = append(nodes, mkNode(op, op+"_"+string(rune('a'+len(nodes))), ins, o, attrs...))
		outs = append(outs, o...)
	}
	for _, op := range []string{"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd",
		"ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"} {
		in := "x"
		if op == "ReduceLogSum" {
			in = "ReduceL1f0" // positive: ReduceL1 is node f
		}
		add(op, []string{in, "ax12"}, 1, aInt("keepdims", 1))
	}
	add("ReduceMean", []string{"x", "ax1"}, 1, aInt("keepdims", 0))
	add("ReduceSum", []string{"x"}, 1) // no axes: all
	add("Split", []string{"x"}, 3, aInt("axis", 2), aInt("num_outputs", 3))
	add("Pad", []string{"x", "pads", "", "padax"}, 1, aString("mode", "reflect"))
	add("Pad", []string{"x", "wrappads"}, 1, aString("mode", "wrap"))
	add("LayerNormalization", []string{"x", "lns", "lnb"}, 1)
	add("Gelu", []string{"x"}, 1, aString("approximate", "tanh"))
	add("GroupNormalization", []string{"x", "gns", "gnb"}, 1, aInt("num_groups", 2))
	m := graphModel(nodes, inits, map[string][]int64{"x": {2, 4, 5}}, outs...)
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
		assertClose(t, o+" vs ONNX Runtime", got[o], w.Shape, w.Float64s(), 1e-5)
	}
}

// TestNewOpsetRefused checks that ops not lowered are named with the
// model's opset, and that version-specific attributes are refused by name.
func TestNewOpsetRefused(t *testing.T) {
	cases := []struct {
		op    string
		opset int64
		attrs []*onnxpb.AttributeProto
		ins   []tin
		want  string
	}{
		{"ScatterND", 18, []*onnxpb.AttributeProto{aString("reduction", "max")},
			[]tin{randFeed("x", 1, 2, 3), initI("i", []int{1, 1}, 0), randFeed("u", 2, 1, 3)}, `ScatterND (node "n0", opset 18)`},
		{"CenterCropPad", 18, nil, []tin{randFeed("x", 1, 2, 3), initI("s", []int{2}, 1, 1)}, `CenterCropPad (node "n0", opset 18)`},
		{"Mish", 17, nil, []tin{randFeed("x", 1, 2, 3)}, `Mish (node "n0", opset 17)`},
		{"Pad", 18, []*onnxpb.AttributeProto{aString("mode", "wrap")}, []tin{randFeed("x", 1, 2, 3), initI("p", []int{4}, 0, 1, 0, 1)}, `mode "wrap" needs opset 19`},
		{"Resize", 18, []*onnxpb.AttributeProto{aInt("antialias", 1)},
			[]tin{randFeed("x", 1, 1, 1, 2, 2), {name: ""}, initF("s", []int{4}, 1, 1, 2, 2)}, "antialias = 1 is not supported"},
		{"Resize", 18, []*onnxpb.AttributeProto{aString("coordinate_transformation_mode", "half_pixel_symmetric")},
			[]tin{randFeed("x", 1, 1, 1, 2, 2), {name: ""}, initF("s", []int{4}, 1, 1, 2, 2)}, `"half_pixel_symmetric" needs opset 19`},
	}
	for _, c := range cases {
		t.Run(c.op, func(t *testing.T) {
			_, err := tryGraph(oneNode(c.op, c.opset, c.attrs, c.ins, "y"), feedsOf(c.ins), nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

// TestPadWrapGrad checks Pad's wrap mode (opset 19) by finite differences.
func TestPadWrapGrad(t *testing.T) {
	ins := []tin{randFeed("x", 5, 2, 3, 4), initI("p", []int{6}, 0, 2, 1, 1, 3, 4)}
	gradCheck(t, oneNode("Pad", 19, []*onnxpb.AttributeProto{aString("mode", "wrap")}, ins, "y"), feedsOf(ins), "x", 1e-6)
}
