package onnxops

import (
	"math/rand"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
	"github.com/paretonav/paretonav/internal/testkit/ortcheck"
)

// functionModel is a float32 IR-9 model at opset 18 shaped like a dynamo
// export: a local function block(x, s, b) = Relu(LayerNormalization(x, s,
// b, epsilon = @eps)) + x with eps defaulting to 0.25 (attribute_proto),
// called twice (once with eps 1e-5, once with the default) on the same
// weights, then a Gemm head.
func functionModel(r *rand.Rand) *importer.Model {
	str := proto.String
	ref := &onnxpb.AttributeProto{Name: str("epsilon"), RefAttrName: str("eps"), Type: onnxpb.AttributeProto_FLOAT.Enum()}
	block := &onnxpb.FunctionProto{
		Name: str("block"), Domain: str("pkg.test"),
		Input: []string{"x", "s", "b"}, Output: []string{"y"},
		Node: []*onnxpb.NodeProto{
			onnxtest.Node("LayerNormalization", "ln", []string{"x", "s", "b"}, []string{"n"}, ref),
			onnxtest.Node("Relu", "act", []string{"n"}, []string{"r"}),
			onnxtest.Node("Add", "res", []string{"r", "x"}, []string{"y"}),
		},
		OpsetImport: []*onnxpb.OperatorSetIdProto{{Domain: str(""), Version: proto.Int64(18)}},
	}
	def, err := proto.Marshal(&onnxpb.AttributeProto{Name: str("eps"), F: proto.Float32(0.25), Type: onnxpb.AttributeProto_FLOAT.Enum()})
	if err != nil {
		panic(err)
	}
	u := protowire.AppendTag(nil, 11, protowire.BytesType) // attribute_proto (IR 9)
	block.ProtoReflect().SetUnknown(protowire.AppendBytes(u, def))
	call := func(name, in, out string, attrs ...*onnxpb.AttributeProto) *onnxpb.NodeProto {
		n := onnxtest.Node("block", name, []string{in, "s", "b"}, []string{out}, attrs...)
		n.Domain = str("pkg.test")
		return n
	}
	nodes := []*onnxpb.NodeProto{
		call("block_0", "x", "h1", onnxtest.AFloat("eps", 1e-5)),
		call("block_1", "h1", "h2"),
		onnxtest.Node("Gemm", "head", []string{"h2", "w", "c"}, []string{"y"}, onnxtest.AInt("transB", 1)),
	}
	inits := []*importer.Tensor{onnxtest.RandUniform32(r, "s", 6), onnxtest.RandUniform32(r, "b", 6), onnxtest.RandUniform32(r, "w", 3, 6), onnxtest.RandUniform32(r, "c", 3)}
	m := onnxtest.GraphModel(nodes, inits, map[string][]int64{"x": {-1, 6}}, "y")
	ir, opset := int64(9), int64(18)
	m.Proto.IrVersion, m.Proto.OpsetImport[0].Version = &ir, &opset
	m.Proto.OpsetImport = append(m.Proto.OpsetImport, &onnxpb.OperatorSetIdProto{Domain: str("pkg.test"), Version: proto.Int64(1)})
	m.Proto.Functions = []*onnxpb.FunctionProto{block}
	return m
}

// TestFunctionsORT decodes a model with local functions (inlined by
// importer), saves it with new weights (functions kept) and checks
// backend's outputs on the decoded model against ONNX Runtime's on the
// saved file.
func TestFunctionsORT(t *testing.T) {
	ortcheck.Require(t)
	r := rand.New(rand.NewSource(9))
	b, err := proto.Marshal(functionModel(r).Proto)
	if err != nil {
		t.Fatal(err)
	}
	m, err := importer.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if !m.HasFunctions() {
		t.Fatal("HasFunctions is false")
	}
	path := filepath.Join(t.TempDir(), "f.onnx")
	w := onnxtest.RandUniform32(r, "w", 3, 6)
	if err := importer.Save(path, m, map[string]*importer.Tensor{"w": w}, importer.SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	saved, err := importer.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	feeds := map[string]*importer.Tensor{"x": onnxtest.RandUniform32(r, "x", 4, 6)}
	want, err := ortcheck.Run(path, feeds)
	if err != nil {
		t.Fatal(err)
	}
	got := forward(t, saved, feeds)
	onnxtest.AssertClose(t, "y vs ONNX Runtime", got["y"], want["y"].Shape, want["y"].Float64s(), 1e-5)
}
