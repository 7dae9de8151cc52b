package onnxops

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
	"github.com/paretonav/paretonav/internal/testkit/ortcheck"
)

// scatterCase is one ScatterElements node: data [3,4], indices and
// updates [2,3] (with a repeated target for the reductions).
type scatterCase struct {
	name  string
	opset int64
	attrs []*onnxpb.AttributeProto
	ind   []int64
}

func scatterCases() []scatterCase {
	ax1 := onnxtest.AInt("axis", 1)
	dup := []int64{0, 2, 0, -1, 1, 3} // axis 1: row 0 writes column 0 twice
	return []scatterCase{
		{"axis 0", 11, nil, []int64{2, 0, 1, 1, 2, 0}},
		{"axis 1 negative", 13, []*onnxpb.AttributeProto{ax1}, []int64{-1, 0, 2, 1, 3, 0}},
		{"add", 16, []*onnxpb.AttributeProto{ax1, onnxtest.AString("reduction", "add")}, dup},
		{"mul", 16, []*onnxpb.AttributeProto{ax1, onnxtest.AString("reduction", "mul")}, dup},
		{"max", 18, []*onnxpb.AttributeProto{ax1, onnxtest.AString("reduction", "max")}, dup},
		{"min", 18, []*onnxpb.AttributeProto{ax1, onnxtest.AString("reduction", "min")}, dup},
	}
}

// TestScatterElementsORT checks every case against ONNX Runtime.
func TestScatterElementsORT(t *testing.T) {
	ortcheck.Require(t)
	r := rand.New(rand.NewSource(16))
	for _, c := range scatterCases() {
		t.Run(c.name, func(t *testing.T) {
			data, upd := onnxtest.RandUniform32(r, "data", 3, 4), onnxtest.RandUniform32(r, "upd", 2, 3)
			node := onnxtest.Node("ScatterElements", "sc", []string{"data", "ind", "upd"}, []string{"y"}, c.attrs...)
			m := onnxtest.GraphModel([]*onnxpb.NodeProto{node}, []*importer.Tensor{importer.NewInt64("ind", []int{2, 3}, c.ind)},
				map[string][]int64{"data": {3, 4}, "upd": {2, 3}}, "y")
			ir := int64(8)
			m.Proto.IrVersion, m.Proto.OpsetImport[0].Version = &ir, &c.opset
			b, err := proto.Marshal(m.Proto)
			if err != nil {
				t.Fatal(err)
			}
			feeds := map[string]*importer.Tensor{"data": data, "upd": upd}
			want, err := ortcheck.RunBytes(b, feeds)
			if err != nil {
				t.Fatal(err)
			}
			got := forward(t, m, feeds)
			onnxtest.AssertClose(t, "ScatterElements "+c.name, got["y"], want["y"].Shape, want["y"].Float64s(), 1e-6)
		})
	}
}

// TestScatterElementsGrad checks the gradients in data and updates by
// central finite differences.
func TestScatterElementsGrad(t *testing.T) {
	for i, c := range scatterCases() {
		t.Run(c.name, func(t *testing.T) {
			ins := []onnxtest.In{onnxtest.RandFeed("data", int64(i), 3, 4), onnxtest.InitI("ind", []int{2, 3}, c.ind...), onnxtest.RandFeed("upd", int64(10+i), 2, 3)}
			m := onnxtest.OneNode("ScatterElements", c.opset, c.attrs, ins, "y")
			for _, wrt := range []string{"data", "upd"} {
				gradCheck(t, m, onnxtest.Feeds(ins), wrt, 1e-6)
			}
		})
	}
}

// TestScatterVersions checks the reductions each opset allows and that
// Scatter (opset 9) is ScatterElements without reduction.
func TestScatterVersions(t *testing.T) {
	ins := []onnxtest.In{onnxtest.RandFeed("data", 1, 3, 4), onnxtest.InitI("ind", []int{2, 3}, 2, 0, 1, 1, 2, 0), onnxtest.RandFeed("upd", 2, 2, 3)}
	for _, c := range []struct {
		op    string
		opset int64
		red   string
	}{{"ScatterElements", 13, "add"}, {"ScatterElements", 17, "max"}, {"Scatter", 10, "add"}} {
		_, err := tryGraph(onnxtest.OneNode(c.op, c.opset, []*onnxpb.AttributeProto{onnxtest.AString("reduction", c.red)}, ins, "y"), onnxtest.Feeds(ins), nil)
		if want := fmt.Sprintf("reduction %q is not defined at opset %d", c.red, c.opset); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s-%d %s: got %v, want %q", c.op, c.opset, c.red, err, want)
		}
	}
	old := runOne(t, "Scatter", 9, nil, ins)
	cur := runOne(t, "ScatterElements", 11, nil, ins)
	onnxtest.AssertClose(t, "Scatter-9 vs ScatterElements-11", old, cur.Shape, cur.Float64s(), 0)
}
