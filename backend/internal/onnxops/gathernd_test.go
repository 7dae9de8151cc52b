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

// ndCase is one GatherND or ScatterND case: data shape, constant indices,
// batch_dims (GatherND) and the updates' shape (ScatterND).
type ndCase struct {
	name      string
	data      []int
	indShape  []int
	ind       []int64
	batchDims int64
	upd       []int
}

func gatherNDCases() []ndCase {
	return []ndCase{
		{"k1 rows", []int{4, 3}, []int{2, 1}, []int64{2, 0}, 0, nil},
		{"k2 elements, negative, repeated", []int{3, 4}, []int{3, 2}, []int64{0, 1, -1, -1, 0, 1}, 0, nil},
		{"k2 of rank 3, 2-D indices", []int{2, 3, 4}, []int{2, 2, 2}, []int64{1, 2, 0, 0, 1, 1, 0, 2}, 0, nil},
		{"swin table", []int{7, 2}, []int{4, 4, 1}, []int64{3, 2, 1, 0, 4, 3, 2, 1, 5, 4, 3, 2, 6, 5, 4, 3}, 0, nil},
		{"batch_dims 1", []int{2, 3, 4}, []int{2, 2, 1}, []int64{2, 0, 1, 1}, 1, nil},
	}
}

func scatterNDCases() []ndCase {
	return []ndCase{
		{"k1 rows", []int{4, 3}, []int{2, 1}, []int64{2, 0}, 0, []int{2, 3}},
		{"k2 elements, negative", []int{3, 4}, []int{3, 2}, []int64{0, 1, -1, -1, 2, 0}, 0, []int{3}},
		{"k3 of rank 3", []int{2, 3, 4}, []int{2, 3}, []int64{1, 2, 3, 0, 0, 0}, 0, []int{2}},
		{"unpool-like, 2-D indices", []int{2, 5}, []int{2, 2, 2}, []int64{0, 4, 1, 0, 0, 2, 1, 3}, 0, []int{2, 2}},
	}
}

func (c ndCase) node(op string) (*onnxpb.NodeProto, []string) {
	ins := []string{"data", "ind"}
	var attrs []*onnxpb.AttributeProto
	if op == "GatherND" {
		attrs = append(attrs, onnxtest.AInt("batch_dims", c.batchDims))
	} else {
		ins = append(ins, "upd")
	}
	return onnxtest.Node(op, "nd", ins, []string{"y"}, attrs...), ins
}

// TestGatherScatterNDORT checks GatherND and ScatterND against ONNX
// Runtime.
func TestGatherScatterNDORT(t *testing.T) {
	ortcheck.Require(t)
	r := rand.New(rand.NewSource(11))
	for _, op := range []string{"GatherND", "ScatterND"} {
		cases := gatherNDCases()
		if op == "ScatterND" {
			cases = scatterNDCases()
		}
		for _, c := range cases {
			t.Run(op+"/"+c.name, func(t *testing.T) {
				node, _ := c.node(op)
				feeds := map[string]*importer.Tensor{"data": onnxtest.RandUniform32(r, "data", c.data...)}
				shapes := map[string][]int64{"data": toInt64s(c.data)}
				if c.upd != nil {
					feeds["upd"] = onnxtest.RandUniform32(r, "upd", c.upd...)
					shapes["upd"] = toInt64s(c.upd)
				}
				m := onnxtest.GraphModel([]*onnxpb.NodeProto{node}, []*importer.Tensor{importer.NewInt64("ind", c.indShape, c.ind)}, shapes, "y")
				ir, opset := int64(8), int64(13)
				m.Proto.IrVersion, m.Proto.OpsetImport[0].Version = &ir, &opset
				b, err := proto.Marshal(m.Proto)
				if err != nil {
					t.Fatal(err)
				}
				want, err := ortcheck.RunBytes(b, feeds)
				if err != nil {
					t.Fatal(err)
				}
				got := forward(t, m, feeds)
				onnxtest.AssertClose(t, op+" "+c.name, got["y"], want["y"].Shape, want["y"].Float64s(), 1e-7)
			})
		}
	}
}

// TestGatherScatterNDGrad checks the gradients in the data (and the
// updates) by central finite differences.
func TestGatherScatterNDGrad(t *testing.T) {
	for _, op := range []string{"GatherND", "ScatterND"} {
		cases := gatherNDCases()
		if op == "ScatterND" {
			cases = scatterNDCases()
		}
		for i, c := range cases {
			t.Run(op+"/"+c.name, func(t *testing.T) {
				ins := []onnxtest.In{onnxtest.RandFeed("data", int64(i), c.data...), onnxtest.InitI("ind", c.indShape, c.ind...)}
				wrt := []string{"data"}
				var attrs []*onnxpb.AttributeProto
				if op == "GatherND" {
					attrs = append(attrs, onnxtest.AInt("batch_dims", c.batchDims))
				} else {
					ins = append(ins, onnxtest.RandFeed("upd", int64(20+i), c.upd...))
					wrt = append(wrt, "upd")
				}
				m := onnxtest.OneNode(op, 13, attrs, ins, "y")
				for _, w := range wrt {
					gradCheck(t, m, onnxtest.Feeds(ins), w, 1e-6)
				}
			})
		}
	}
}

// TestGatherScatterNDRefused checks that out-of-range indices, bad ranks
// and ScatterND's reductions are refused by name.
func TestGatherScatterNDRefused(t *testing.T) {
	cases := []struct {
		op    string
		attrs []*onnxpb.AttributeProto
		ins   []onnxtest.In
		want  string
	}{
		{"GatherND", nil, []onnxtest.In{onnxtest.RandFeed("x", 1, 2, 3), onnxtest.InitI("i", []int{1, 2}, 0, 3)}, "out of range"},
		{"GatherND", nil, []onnxtest.In{onnxtest.RandFeed("x", 1, 2, 3), onnxtest.InitI("i", []int{1, 3}, 0, 0, 0)}, "last dimension is 3"},
		{"GatherND", []*onnxpb.AttributeProto{onnxtest.AInt("batch_dims", 1)}, []onnxtest.In{onnxtest.RandFeed("x", 1, 2, 3), onnxtest.InitI("i", []int{3, 1}, 0, 0, 0)}, "batch dimension 0"},
		{"ScatterND", nil, []onnxtest.In{onnxtest.RandFeed("x", 1, 2, 3), onnxtest.InitI("i", []int{1, 1}, 0), onnxtest.RandFeed("u", 2, 1, 2)}, "updates have shape"},
		{"ScatterND", []*onnxpb.AttributeProto{onnxtest.AString("reduction", "add")}, []onnxtest.In{onnxtest.RandFeed("x", 1, 2, 3), onnxtest.InitI("i", []int{1, 1}, 0), onnxtest.RandFeed("u", 2, 1, 3)}, `ScatterND (node "n0", opset 16)`},
	}
	for _, c := range cases {
		t.Run(c.op+"/"+c.want, func(t *testing.T) {
			_, err := tryGraph(onnxtest.OneNode(c.op, 16, c.attrs, c.ins, "y"), onnxtest.Feeds(c.ins), nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

func toInt64s(v []int) []int64 {
	out := make([]int64, len(v))
	for i, d := range v {
		out[i] = int64(d)
	}
	return out
}

// unpoolScatterModel is the dynamo exporter's max_unpool2d: MaxPool's
// run-time indices, reshaped to [M, 1], scatter the pooled values into a
// flat zero tensor (ScatterND), reshaped back to the input's shape.
func unpoolScatterModel() *importer.Model {
	nodes := []*onnxpb.NodeProto{
		onnxtest.Node("MaxPool", "mp", []string{"x"}, []string{"p", "i"}, onnxtest.AInts("kernel_shape", 2, 2), onnxtest.AInts("strides", 2, 2)),
		onnxtest.Node("Reshape", "ri", []string{"i", "s_ind"}, []string{"ind"}),
		onnxtest.Node("Reshape", "rp", []string{"p", "s_upd"}, []string{"upd"}),
		onnxtest.Node("ScatterND", "sc", []string{"zeros", "ind", "upd"}, []string{"flat"}),
		onnxtest.Node("Reshape", "ry", []string{"flat", "s_y"}, []string{"y"}),
	}
	inits := []*importer.Tensor{
		importer.NewInt64("s_ind", []int{2}, []int64{-1, 1}), importer.NewInt64("s_upd", []int{1}, []int64{-1}),
		importer.NewInt64("s_y", []int{4}, []int64{2, 3, 4, 6}), importer.NewFloat32("zeros", []int{144}, make([]float32, 144)),
	}
	m := onnxtest.GraphModel(nodes, inits, map[string][]int64{"x": {2, 3, 4, 6}}, "y")
	ir, opset := int64(8), int64(13)
	m.Proto.IrVersion, m.Proto.OpsetImport[0].Version = &ir, &opset
	return m
}

// TestScatterNDRuntimeIndicesORT checks ScatterND with MaxPool's run-time
// indices against ONNX Runtime.
func TestScatterNDRuntimeIndicesORT(t *testing.T) {
	ortcheck.Require(t)
	m := unpoolScatterModel()
	feeds := map[string]*importer.Tensor{"x": onnxtest.RandUniform32(rand.New(rand.NewSource(5)), "x", 2, 3, 4, 6)}
	b, err := proto.Marshal(m.Proto)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ortcheck.RunBytes(b, feeds)
	if err != nil {
		t.Fatal(err)
	}
	got := forward(t, m, feeds)
	onnxtest.AssertClose(t, "unpooling ScatterND", got["y"], want["y"].Shape, want["y"].Float64s(), 1e-7)
}

// TestScatterNDRuntimeIndicesGrad checks the gradient through MaxPool and
// the run-time-index ScatterND by central finite differences.
func TestScatterNDRuntimeIndicesGrad(t *testing.T) {
	ins := onnxtest.RandFeed("x", 6, 2, 3, 4, 6)
	gradCheck(t, unpoolScatterModel(), onnxtest.Feeds([]onnxtest.In{ins}), "x", 1e-6)
}
