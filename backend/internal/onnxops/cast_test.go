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

// castLikeModel is y = CastLike(x, w) · CastLike(k, x) + CastLike(h, x):
// a run-time tensor cast like a float initializer, an int64 constant and
// a float64 one cast like a run-time tensor (the dynamo exporter's forms).
func castLikeModel(opset int64) (*importer.Model, map[string]*importer.Tensor) {
	r := rand.New(rand.NewSource(15))
	x, w := onnxtest.RandUniform32(r, "x", 2, 3), onnxtest.RandUniform32(r, "w", 3)
	k := importer.NewInt64("k", nil, []int64{3})
	h := &importer.Tensor{Name: "h", Type: importer.Float64, Shape: []int{3}, F64: []float64{0.25, -1.5, 2}}
	nodes := []*onnxpb.NodeProto{
		onnxtest.Node("CastLike", "c0", []string{"x", "w"}, []string{"xc"}),
		onnxtest.Node("CastLike", "c1", []string{"k", "x"}, []string{"kc"}),
		onnxtest.Node("CastLike", "c2", []string{"h", "x"}, []string{"hc"}),
		onnxtest.Node("Mul", "m", []string{"xc", "kc"}, []string{"p"}),
		onnxtest.Node("Add", "a", []string{"p", "hc"}, []string{"y"}),
	}
	m := onnxtest.GraphModel(nodes, []*importer.Tensor{w, k, h}, map[string][]int64{"x": {2, 3}}, "y")
	ir := int64(8)
	m.Proto.IrVersion, m.Proto.OpsetImport[0].Version = &ir, &opset
	return m, map[string]*importer.Tensor{"x": x}
}

// TestCastLikeORT checks CastLike at opsets 15 and 19 against ONNX Runtime.
func TestCastLikeORT(t *testing.T) {
	ortcheck.Require(t)
	for _, opset := range []int64{15, 19, 21} {
		m, feeds := castLikeModel(opset)
		b, err := proto.Marshal(m.Proto)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ortcheck.RunBytes(b, feeds)
		if err != nil {
			t.Fatal(err)
		}
		got := forward(t, m, feeds)
		onnxtest.AssertClose(t, "CastLike", got["y"], want["y"].Shape, want["y"].Float64s(), 1e-6)
	}
}

// TestCastLikeGrad checks the gradient through CastLike by central finite
// differences.
func TestCastLikeGrad(t *testing.T) {
	ins := []onnxtest.In{onnxtest.RandFeed("x", 3, 2, 3), onnxtest.InitF("w", []int{3}, 1, 2, 3)}
	gradCheck(t, onnxtest.OneNode("CastLike", 19, nil, ins, "y"), onnxtest.Feeds(ins), "x", 1e-6)
}

// TestCastLikeRefused checks that a run-time tensor cast like an integer
// is refused by name.
func TestCastLikeRefused(t *testing.T) {
	ins := []onnxtest.In{onnxtest.RandFeed("x", 3, 2, 3), onnxtest.InitI("k", []int{1}, 2)}
	_, err := tryGraph(onnxtest.OneNode("CastLike", 19, nil, ins, "y"), onnxtest.Feeds(ins), nil)
	if err == nil {
		t.Fatal("CastLike of a run-time tensor to int64 was accepted")
	}
	if msg := err.Error(); !strings.Contains(msg, "CastLike") || !strings.Contains(msg, "INT64") {
		t.Errorf("error %q does not name the op and the type", err)
	}
}
