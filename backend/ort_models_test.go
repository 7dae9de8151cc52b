package backend

import (
	"math/rand"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
	"github.com/paretonav/paretonav/internal/testkit/ortcheck"
	"github.com/paretonav/paretonav/models"
)

// ortInput returns a float32 input of the given shape with N(0, 1) values.
func ortInput(name string, seed int64, s ...int) *importer.Tensor {
	r := rand.New(rand.NewSource(seed))
	d := make([]float32, shape.Numel(s))
	for i := range d {
		d[i] = float32(r.NormFloat64())
	}
	return importer.NewFloat32(name, s, d)
}

// compareWithORT runs the model file in ONNX Runtime and in backend
// (float32, BatchNorm frozen) on the same inputs and checks every graph
// output within outputTol.
func compareWithORT(t *testing.T, path string, tasks []string, inputs map[string]*importer.Tensor) {
	t.Helper()
	want, err := ortcheck.Run(path, inputs)
	if err != nil {
		t.Fatal(err)
	}
	m, err := importer.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var ts []Task
	for _, s := range tasks {
		task, err := ParseTask(s)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, task)
	}
	md, err := Open(m, ts, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := md.Outputs(inputs)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Errorf("%d outputs, ORT gives %d", len(got), len(want))
	}
	worst := 0.0
	for name, w := range want {
		d := maxAbsDiffT(t, "output "+name, got[name], w)
		worst = max(worst, d)
		if d > outputTol {
			t.Errorf("output %q: max |ours − ORT| = %.3g, want ≤ %g", name, d, outputTol)
		}
	}
	t.Logf("worst output |ours − ORT| %.2e", worst)
}

// trainedLike gives every float initializer named *bias or *running_mean
// N(0, 0.1) values and every *running_var U(0.5, 1.5) values, so that a
// freshly initialised model (zero biases, unit statistics) behaves like a
// trained one. Fresh MTAN has normal-head vectors of norm ~1e-10 at some
// pixels (zero biases, dead ReLUs), where the unit normalisation returns
// float32 round-off noise in any implementation (ORT and backend then
// differ by ~1e-4 even in float64); with non-zero biases the comparison is
// well conditioned.
func trainedLike(t *testing.T, mp *onnxpb.ModelProto, seed int64) (*importer.Model, map[string]*importer.Tensor) {
	t.Helper()
	m := &importer.Model{Proto: mp}
	inits, err := m.Initializers()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewSource(seed))
	weights := map[string]*importer.Tensor{}
	for _, tp := range mp.Graph.Initializer {
		name := tp.GetName()
		w := inits[name]
		if w == nil || w.F32 == nil {
			continue
		}
		var f func() float32
		switch {
		case strings.HasSuffix(name, "bias"), strings.HasSuffix(name, "running_mean"):
			f = func() float32 { return float32(r.NormFloat64() * 0.1) }
		case strings.HasSuffix(name, "running_var"):
			f = func() float32 { return float32(0.5 + r.Float64()) }
		default:
			continue
		}
		d := make([]float32, len(w.F32))
		for i := range d {
			d[i] = f()
		}
		weights[name] = importer.NewFloat32(name, w.Shape, d)
	}
	if len(weights) == 0 {
		t.Fatal("no bias or BatchNorm statistics found to set")
	}
	return m, weights
}

// TestORTModels checks the reference models of package models (written to
// files, as users get them, with trained-like biases and statistics)
// against ONNX Runtime.
func TestORTModels(t *testing.T) {
	ortcheck.Require(t)
	cases := []struct {
		name  string
		model *onnxpb.ModelProto
		tasks []string
		input *importer.Tensor
	}{
		{"lenet2", models.LeNet2(3), []string{"l:nll:logp_left:yl", "r:nll:logp_right:yr"},
			ortInput(models.LeNet2Input, 1, 3, 1, 36, 36)},
		{"mtan_w2_32x64", models.MTAN(models.MTANConfig{Width: 2, InputHeight: 32, InputWidth: 64, Seed: 2}),
			[]string{"seg:nll:seg_logp:seg", "depth:depth_l1:depth:depth_t", "normal:normal_cos:normal:normal_t"},
			ortInput(models.MTANInput, 2, 2, 3, 32, 64)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), c.name+".onnx")
			m, weights := trainedLike(t, c.model, 5)
			if err := importer.Save(path, m, weights, importer.SaveOptions{}); err != nil {
				t.Fatal(err)
			}
			compareWithORT(t, path, c.tasks, map[string]*importer.Tensor{c.input.Name: c.input})
		})
	}
}

// TestORTTorchFixtures runs every PyTorch fixture (testdata/torch and
// testdata/torch_extra) in ONNX Runtime now and compares its outputs with
// backend's.
func TestORTTorchFixtures(t *testing.T) {
	ortcheck.Require(t)
	for _, name := range torchFixtureNames(t) {
		t.Run(name, func(t *testing.T) {
			f, err := ortcheck.LoadFixture(name)
			if err != nil {
				t.Fatal(err)
			}
			compareWithORT(t, f.ModelPath, f.Tasks, map[string]*importer.Tensor{f.InputName: f.Input})
		})
	}
	extra, err := filepath.Glob(filepath.Join(extraDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range extra {
		name := strings.TrimSuffix(filepath.Base(p), ".json")
		t.Run("extra/"+name, func(t *testing.T) {
			tf := loadExtraFixture(t, name)
			f := tf.f
			compareWithORT(t, f.ModelPath, f.Tasks, map[string]*importer.Tensor{f.InputName: f.Input})
		})
	}
}
