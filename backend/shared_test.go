package backend

import (
	"math/rand"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/paretonav/paretonav/backend/internal/onnxtest"
	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
	"github.com/paretonav/paretonav/internal/testkit/ortcheck"
	"github.com/paretonav/paretonav/png"
)

// tiedModel is x[N,4] → Gemm(w1, b) → Relu → Gemm(w2, b) = y: the zero
// bias b read by both Gemms, as PyTorch's export merges them.
func tiedModel(r *rand.Rand) *importer.Model {
	nodes := []*onnxpb.NodeProto{
		onnxtest.Node("Gemm", "fc1", []string{"x", "w1", "b"}, []string{"h"}, onnxtest.AInt("transB", 1)),
		onnxtest.Node("Relu", "act", []string{"h"}, []string{"a"}),
		onnxtest.Node("Gemm", "fc2", []string{"a", "w2", "b"}, []string{"y"}, onnxtest.AInt("transB", 1)),
	}
	inits := []*importer.Tensor{onnxtest.RandUniform32(r, "w1", 4, 4), onnxtest.RandUniform32(r, "w2", 4, 4), importer.NewFloat32("b", []int{4}, make([]float32, 4))}
	m := onnxtest.GraphModel(nodes, inits, map[string][]int64{"x": {-1, 4}}, "y")
	ir := int64(8)
	m.Proto.IrVersion = &ir
	return m
}

// TestUntieOpen checks that Open reports the tied bias, that Untie gives
// fc2 its own copy with its own gradient, that the outputs do not change,
// and that the saved model runs in ONNX Runtime with the same outputs.
func TestUntieOpen(t *testing.T) {
	r := rand.New(rand.NewSource(12))
	task := []Task{{Name: "t", Loss: "mse", Output: "y", Target: "yt", Options: map[string]string{}}}
	batch := map[string]*importer.Tensor{"x": onnxtest.RandUniform32(r, "x", 3, 4), "yt": onnxtest.RandUniform32(r, "yt", 3, 4)}

	m := tiedModel(rand.New(rand.NewSource(1)))
	tied, err := Open(m, task, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []importer.Shared{{Name: "b", Consumers: []string{"fc1", "fc2"}, Readers: []string{"fc1", "fc2"}}}
	if got := tied.SharedInitializers(); !reflect.DeepEqual(got, want) {
		t.Errorf("SharedInitializers = %v, want %v", got, want)
	}
	before, err := tied.Outputs(batch, "y")
	if err != nil {
		t.Fatal(err)
	}

	um := tiedModel(rand.New(rand.NewSource(1)))
	untied, err := Open(um, task, Options{Untie: true})
	if err != nil {
		t.Fatal(err)
	}
	if sh := untied.SharedInitializers(); len(sh) != 0 {
		t.Errorf("still shared after Untie: %v", sh)
	}
	if got := untied.Untied(); !reflect.DeepEqual(got, map[string][]string{"b": {"b.fc2"}}) {
		t.Errorf("Untied = %v", got)
	}
	if n, want := untied.NumParams(), tied.NumParams()+4; n != want {
		t.Errorf("%d parameters after untie, want %d", n, want)
	}
	after, err := untied.Outputs(batch, "y")
	if err != nil {
		t.Fatal(err)
	}
	onnxtest.AssertClose(t, "y after untie", after["y"], before["y"].Shape, before["y"].Float64s(), 0)

	// The tied gradient of b is the sum of the two untied ones.
	grad := func(md *Model) map[string][]float32 {
		jac := png.NewJacobian(1, md.NumParams())
		if err := md.Evaluate(batch, make([]float64, 1), &jac); err != nil {
			t.Fatal(err)
		}
		out := map[string][]float32{}
		for _, p := range md.Trainable() {
			n := shape.Numel(p.Shape)
			out[p.Name] = jac.Row(0)[p.Offset : p.Offset+n]
		}
		return out
	}
	gt, gu := grad(tied), grad(untied)
	differ := false
	for i := range gt["b"] {
		if d := float64(gt["b"][i] - gu["b"][i] - gu["b.fc2"][i]); d > 1e-5 || d < -1e-5 {
			t.Errorf("∂b[%d]: tied %g, untied %g + %g", i, gt["b"][i], gu["b"][i], gu["b.fc2"][i])
		}
		differ = differ || gu["b"][i] != gu["b.fc2"][i]
	}
	if !differ {
		t.Error("the two copies get the same gradient: not untied")
	}

	ortcheck.Require(t)
	path := filepath.Join(t.TempDir(), "untied.onnx")
	if err := importer.Save(path, um, untied.Weights(), importer.SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	ort, err := ortcheck.Run(path, map[string]*importer.Tensor{"x": batch["x"]})
	if err != nil {
		t.Fatal(err)
	}
	onnxtest.AssertClose(t, "ONNX Runtime on the untied file", ort["y"], before["y"].Shape, before["y"].Float64s(), 1e-6)
}

// TestUntieTorchExports opens the fresh torchvision ViT and ConvNeXt
// exports (make_transformer_fixtures.py), in which torch merged equal
// initializers (Identity nodes read the kept one), checks that they are
// reported, unties them, and checks that the outputs do not change, in
// backend and in ONNX Runtime on the saved file.
func TestUntieTorchExports(t *testing.T) {
	ortcheck.Require(t)
	task := []Task{{Name: "a", Loss: "nll", Output: "logp_a", Target: "a", IgnoreIndex: -100, Options: map[string]string{}}}
	x := ortInput("x", 4, 2, 3, 32, 32)
	batch := map[string]*importer.Tensor{"x": x}
	for _, name := range []string{"tied_vit2_op17", "tied_convnext2_op17"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join("testdata", "torch", name+".onnx")
			m, err := importer.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			tied, err := Open(m, task, Options{})
			if err != nil {
				t.Fatal(err)
			}
			sh := tied.SharedInitializers()
			if len(sh) == 0 {
				t.Fatal("no shared initializers reported in a fresh torch export")
			}
			copies := 0
			for _, s := range sh {
				copies += len(s.Consumers) - 1
			}
			before, err := ortcheck.Run(path, batch)
			if err != nil {
				t.Fatal(err)
			}
			um, err := importer.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			untied, err := Open(um, task, Options{Untie: true})
			if err != nil {
				t.Fatal(err)
			}
			if got := len(untied.Trainable()) - len(tied.Trainable()); got != copies {
				t.Errorf("%d new trainable initializers, want %d (one per extra consumer of %d shared)", got, copies, len(sh))
			}
			if sh := untied.SharedInitializers(); len(sh) != 0 {
				t.Errorf("still shared: %v", sh)
			}
			ours, err := untied.Outputs(batch)
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "untied.onnx")
			if err := importer.Save(out, um, untied.Weights(), importer.SaveOptions{}); err != nil {
				t.Fatal(err)
			}
			after, err := ortcheck.Run(out, batch)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range []string{"logp_a", "logp_b"} {
				onnxtest.AssertClose(t, o+": ONNX Runtime, untied vs tied file", after[o], before[o].Shape, before[o].Float64s(), 0)
				onnxtest.AssertClose(t, o+": backend untied vs ONNX Runtime", ours[o], before[o].Shape, before[o].Float64s(), 1e-5)
			}
			t.Logf("%d shared initializers, %d copies", len(sh), copies)
		})
	}
}
