package cli

import (
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/format/npz"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
	"github.com/paretonav/paretonav/internal/testkit/ortcheck"
	"github.com/paretonav/paretonav/models"
)

// tiedModel writes x[N,4] → Gemm fc1 (w1, b) → Relu → Gemm fc2 (w2, b) = y,
// the zero bias b read by both Gemms as PyTorch's export merges them,
// and 8 examples (x, yt) into dir.
func tiedModel(t *testing.T, dir string) (model, data string) {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 3))
	f32 := func(name string, shape ...int) *importer.Tensor {
		n := 1
		for _, d := range shape {
			n *= d
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = rng.Float32() - 0.5
		}
		return importer.NewFloat32(name, shape, v)
	}
	init := func(tt *importer.Tensor) *onnxpb.TensorProto {
		tp, err := importer.EncodeTensor(tt)
		if err != nil {
			t.Fatal(err)
		}
		return tp
	}
	gemm := func(name, x, w, y string) *onnxpb.NodeProto {
		return &onnxpb.NodeProto{Name: proto.String(name), OpType: proto.String("Gemm"), Input: []string{x, w, "b"}, Output: []string{y},
			Attribute: []*onnxpb.AttributeProto{{Name: proto.String("transB"), I: proto.Int64(1), Type: onnxpb.AttributeProto_INT.Enum()}}}
	}
	dyn := &onnxpb.TensorShapeProto{Dim: []*onnxpb.TensorShapeProto_Dimension{
		{Value: &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: "N"}}, {Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: 4}}}}
	vi := func(name string) *onnxpb.ValueInfoProto {
		return &onnxpb.ValueInfoProto{Name: proto.String(name), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
			TensorType: &onnxpb.TypeProto_Tensor{ElemType: proto.Int32(int32(importer.Float32)), Shape: dyn}}}}
	}
	mp := &onnxpb.ModelProto{IrVersion: proto.Int64(8), OpsetImport: []*onnxpb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(17)}},
		Graph: &onnxpb.GraphProto{Name: proto.String("tied"),
			Node: []*onnxpb.NodeProto{gemm("fc1", "x", "w1", "h"),
				{Name: proto.String("act"), OpType: proto.String("Relu"), Input: []string{"h"}, Output: []string{"a"}},
				gemm("fc2", "a", "w2", "y")},
			Initializer: []*onnxpb.TensorProto{init(f32("w1", 4, 4)), init(f32("w2", 4, 4)), init(importer.NewFloat32("b", []int{4}, make([]float32, 4)))},
			Input:       []*onnxpb.ValueInfoProto{vi("x")}, Output: []*onnxpb.ValueInfoProto{vi("y")}}}
	model, data = filepath.Join(dir, "tied.onnx"), filepath.Join(dir, "data.npz")
	if err := models.WriteModel(model, mp); err != nil {
		t.Fatal(err)
	}
	if err := npz.Write(data, map[string]*importer.Tensor{"x": f32("x", 8, 4), "yt": f32("yt", 8, 4)}); err != nil {
		t.Fatal(err)
	}
	return model, data
}

// TestInspectShared checks inspect's report of the tied bias, human and
// --json.
func TestInspectShared(t *testing.T) {
	model, _ := tiedModel(t, t.TempDir())
	out, err := runCLI(t, "inspect", model, "--json")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var info inspectJSON
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := []importer.Shared{{Name: "b", Consumers: []string{"fc1", "fc2"}, Readers: []string{"fc1", "fc2"}}}
	if !reflect.DeepEqual(info.Shared, want) {
		t.Errorf("shared_initializers = %v, want %v", info.Shared, want)
	}
	if !strings.Contains(out, `"shared_initializers": [`) {
		t.Errorf("no shared_initializers key in\n%s", out)
	}
	out, err = runCLI(t, "inspect", model)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "shared initializers: 1,") || !strings.Contains(out, "fc1, fc2") {
		t.Errorf("human output lacks the shared bias:\n%s", out)
	}
	// torch's own merge: Identity nodes read the kept initializer.
	out, err = runCLI(t, "inspect", filepath.Join("..", "backend", "testdata", "torch", "tied_convnext2_op17.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "shared initializers: 4,") || !strings.Contains(out, "through Identity: /features/features.3/features.3.0/block/block.2/LayerNormalization, /norm/LayerNormalization") {
		t.Errorf("human output lacks the merged LayerNorm weight's readers:\n%s", out)
	}
}

// TestTuneUntie checks that tune warns once about the tied bias, that
// --untie trains fc2's own copy, and that the untied result runs in ONNX
// Runtime.
func TestTuneUntie(t *testing.T) {
	dir := t.TempDir()
	model, data := tiedModel(t, dir)
	base := []string{"tune", model, "--data", data, "--task", "t:mse:y:yt", "--criterion", "t", "--steps", "2", "--batch", "4"}
	tied := filepath.Join(dir, "tied_out.onnx")
	out, err := runCLI(t, append(base, "--out", tied)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if n := strings.Count(out, "warning: "); n != 1 || !strings.Contains(out, "b: fc1, fc2") {
		t.Errorf("%d warnings, want one naming b and its consumers:\n%s", n, out)
	}
	untied := filepath.Join(dir, "untied_out.onnx")
	out, err = runCLI(t, append(base, "--out", untied, "--untie")...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if strings.Contains(out, "warning: ") {
		t.Errorf("warning after --untie:\n%s", out)
	}
	m, err := importer.Load(untied)
	if err != nil {
		t.Fatal(err)
	}
	w, err := m.Initializers()
	if err != nil {
		t.Fatal(err)
	}
	if w["b.fc2"] == nil || reflect.DeepEqual(w["b"].F32, w["b.fc2"].F32) {
		t.Errorf("untied model: b %v, b.fc2 %v: want two copies trained apart", w["b"], w["b.fc2"])
	}
	ortcheck.Require(t)
	x := importer.NewFloat32("x", []int{2, 4}, []float32{1, 2, 3, 4, -1, 0, 1, 2})
	if _, err := ortcheck.Run(untied, map[string]*importer.Tensor{"x": x}); err != nil {
		t.Errorf("ONNX Runtime on the untied model: %v", err)
	}
}

// TestFrontUntie checks that front warns once for its models cut from one
// tied file, and that --untie gives every saved model the copies.
func TestFrontUntie(t *testing.T) {
	dir := t.TempDir()
	model, data := tiedModel(t, dir)
	base := []string{"front", model, "--data", data, "--task", "t:mse:y:yt", "--task", "u:l1:y:yt", "--models", "2", "--steps", "2", "--batch", "4"}
	out, err := runCLI(t, append(base, "--out-dir", filepath.Join(dir, "tied"))...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if n := strings.Count(out, "warning: "); n != 1 {
		t.Errorf("%d warnings for 2 models of one file, want 1:\n%s", n, out)
	}
	untied := filepath.Join(dir, "untied")
	out, err = runCLI(t, append(base, "--out-dir", untied, "--untie")...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if strings.Contains(out, "warning: ") {
		t.Errorf("warning after --untie:\n%s", out)
	}
	saved, err := filepath.Glob(filepath.Join(untied, "*.onnx"))
	if err != nil || len(saved) != 2 {
		t.Fatalf("saved models %v (%v), want 2", saved, err)
	}
	for _, p := range saved {
		m, err := importer.Load(p)
		if err != nil {
			t.Fatal(err)
		}
		if sh := m.SharedInitializers(); len(sh) != 0 {
			t.Errorf("%s: still shared %v", p, sh)
		}
	}
}
