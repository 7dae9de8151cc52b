package cli

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/importer/onnxpb"
	"github.com/paretonav/paretonav/models"
)

// TestInspectUnsupportedNodes checks that inspect names, per unsupported
// op, its nodes and the ONNX node tests of that op backend does not pass.
func TestInspectUnsupportedNodes(t *testing.T) {
	node := func(name, op string, in, out string) *onnxpb.NodeProto {
		n := &onnxpb.NodeProto{OpType: proto.String(op), Input: []string{in}, Output: []string{out}}
		if name != "" {
			n.Name = proto.String(name)
		}
		if op == "LRN" {
			n.Attribute = []*onnxpb.AttributeProto{{Name: proto.String("size"), I: proto.Int64(3), Type: onnxpb.AttributeProto_INT.Enum()}}
		}
		return n
	}
	mp := &onnxpb.ModelProto{IrVersion: proto.Int64(8), OpsetImport: []*onnxpb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(18)}},
		Graph: &onnxpb.GraphProto{Name: proto.String("g"),
			Node:  []*onnxpb.NodeProto{node("lrn1", "LRN", "x", "a"), node("", "CenterCropPad", "a", "b"), node("lrn2", "LRN", "b", "y")},
			Input: []*onnxpb.ValueInfoProto{{Name: proto.String("x")}}, Output: []*onnxpb.ValueInfoProto{{Name: proto.String("y")}}}}
	model := filepath.Join(t.TempDir(), "m.onnx")
	if err := models.WriteModel(model, mp); err != nil {
		t.Fatal(err)
	}
	out, err := runCLI(t, "inspect", model, "--json")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var info inspectJSON
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := []inspectUnsupported{
		{Op: "CenterCropPad", Opset: 18, Nodes: []string{"#1"}, NodeTests: []string{}},
		{Op: "LRN", Opset: 18, Nodes: []string{"lrn1", "lrn2"}, NodeTests: []string{"TestLrn (unsupported)", "TestLrnDefault (unsupported)"}},
	}
	if !reflect.DeepEqual(info.UnsupportedNodes, want) {
		t.Errorf("unsupported_nodes = %+v, want %+v", info.UnsupportedNodes, want)
	}
	out, err = runCLI(t, "inspect", model)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"LRN: 2 node(s): lrn1, lrn2", "ONNX node tests not passed: TestLrn (unsupported), TestLrnDefault (unsupported)", "CenterCropPad: 1 node(s): #1"} {
		if !strings.Contains(out, line) {
			t.Errorf("human output lacks %q:\n%s", line, out)
		}
	}
}

// TestInspectFunctions checks that inspect counts the ops of inlined local
// functions and lists the functions.
func TestInspectFunctions(t *testing.T) {
	fn := &onnxpb.FunctionProto{Name: proto.String("act"), Domain: proto.String("pkg"), Input: []string{"a"}, Output: []string{"b"},
		Node:        []*onnxpb.NodeProto{{OpType: proto.String("Relu"), Input: []string{"a"}, Output: []string{"b"}}},
		OpsetImport: []*onnxpb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(18)}}}
	call := func(name, in, out string) *onnxpb.NodeProto {
		return &onnxpb.NodeProto{Name: proto.String(name), OpType: proto.String("act"), Domain: proto.String("pkg"), Input: []string{in}, Output: []string{out}}
	}
	mp := &onnxpb.ModelProto{IrVersion: proto.Int64(9), Functions: []*onnxpb.FunctionProto{fn},
		OpsetImport: []*onnxpb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(18)}, {Domain: proto.String("pkg"), Version: proto.Int64(1)}},
		Graph: &onnxpb.GraphProto{Name: proto.String("g"), Node: []*onnxpb.NodeProto{call("c1", "x", "h"), call("c2", "h", "y")},
			Input: []*onnxpb.ValueInfoProto{{Name: proto.String("x")}}, Output: []*onnxpb.ValueInfoProto{{Name: proto.String("y")}}}}
	model := filepath.Join(t.TempDir(), "f.onnx")
	if err := models.WriteModel(model, mp); err != nil {
		t.Fatal(err)
	}
	out, err := runCLI(t, "inspect", model, "--json")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var info inspectJSON
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !reflect.DeepEqual(info.Functions, []string{"pkg.act"}) || !reflect.DeepEqual(info.Ops, map[string]int{"Relu": 2}) || len(info.Unsupported) != 0 {
		t.Errorf("functions %v, ops %v, unsupported %v: want [pkg.act], Relu×2, none", info.Functions, info.Ops, info.Unsupported)
	}
}

// TestInspectFoldedOps checks inspect's verdict on TorchScript exports of
// nn.MultiheadAttention (the project's ViT fixtures, PyTorch 1.13 and
// 2.x), which compute shapes with Mod and run in eval and tune: every op
// is supported, as the graph builder finds, and the model's trainable
// initializers are listed.
func TestInspectFoldedOps(t *testing.T) {
	for _, f := range []string{"../backend/testdata/torch/vit2_op17.onnx", "../backend/testdata/torch2/vit2_ts_op20.onnx", "../backend/testdata/torch2/masked_dynamo_op20.onnx"} {
		t.Run(filepath.Base(f), func(t *testing.T) {
			out, err := runCLI(t, "inspect", f)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if strings.Contains(out, "unsupported") || !strings.Contains(out, "all ops supported") || !strings.Contains(out, "trainable: ") {
				t.Errorf("inspect %s:\n%s", f, out)
			}
		})
	}
}
