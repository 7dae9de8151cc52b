package backend

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/format/npz"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/internal/testkit/ortcheck"
	"github.com/paretonav/paretonav/png"
)

// Acceptance tolerances against PyTorch: forward outputs within
// an absolute outputTol, losses within a relative lossTol, and every
// initializer's gradient within gradRel·‖g_ref‖ + gradAbs (Euclidean norm
// over the initializer).
const (
	outputTol = 1e-4
	lossTol   = 1e-5
	gradRel   = 1e-3
	gradAbs   = 1e-6
)

// torchFixture is one fixture of testdata/torch opened in backend.
type torchFixture struct {
	f     *ortcheck.Fixture
	m     *importer.Model
	tasks []Task
	batch map[string]*importer.Tensor
}

// loadTorchFixture loads fixture name and its model and builds the batch
// (input and targets).
func loadTorchFixture(t *testing.T, name string) *torchFixture {
	t.Helper()
	f, err := ortcheck.LoadFixture(name)
	if err != nil {
		t.Fatal(err)
	}
	return newTorchFixture(t, f)
}

// newTorchFixture loads f's model and builds the batch (input and
// targets) and the tasks.
func newTorchFixture(t *testing.T, f *ortcheck.Fixture) *torchFixture {
	t.Helper()
	m, err := importer.Load(f.ModelPath)
	if err != nil {
		t.Fatal(err)
	}
	tf := &torchFixture{f: f, m: m, batch: map[string]*importer.Tensor{f.InputName: f.Input}}
	for _, s := range f.Tasks {
		task, err := ParseTask(s)
		if err != nil {
			t.Fatal(err)
		}
		tf.tasks = append(tf.tasks, task)
	}
	for k, v := range f.Targets {
		tf.batch[k] = v
	}
	return tf
}

// torchFixtureNames lists the fixtures; every one must be checked.
func torchFixtureNames(t *testing.T) []string {
	t.Helper()
	names, err := ortcheck.FixtureNames()
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// maxAbsDiffT returns max |a−b| over equal-shaped tensors.
func maxAbsDiffT(t *testing.T, what string, got, want *importer.Tensor) float64 {
	t.Helper()
	if got == nil || want == nil {
		t.Fatalf("%s: missing tensor (got %v, want %v)", what, got != nil, want != nil)
	}
	if !shape.Equal(got.Shape, want.Shape) {
		t.Fatalf("%s: shape %v, want %v", what, got.Shape, want.Shape)
	}
	g, w := got.Float64s(), want.Float64s()
	worst := 0.0
	for i := range g {
		d := math.Abs(g[i] - w[i])
		if math.IsNaN(d) {
			return math.Inf(1)
		}
		worst = math.Max(worst, d)
	}
	return worst
}

// TestTorchFixtures checks backend against PyTorch on every fixture of
// testdata/torch: forward outputs, per-task losses and per-task gradients
// of every trainable initializer (eval mode, BatchNorm frozen), in float32
// (what users train with) and float64.
func TestTorchFixtures(t *testing.T) {
	for _, name := range torchFixtureNames(t) {
		for _, f64 := range []bool{false, true} {
			dt := "float32"
			if f64 {
				dt = "float64"
			}
			t.Run(name+"/"+dt, func(t *testing.T) {
				if f64 && testing.Short() {
					t.Skip("float64 pass skipped in -short mode")
				}
				checkTorchFixture(t, loadTorchFixture(t, name), f64)
			})
		}
	}
}

// extraDir holds further PyTorch exports (make_extra.py): architectures
// users bring that are not in the repo's model zoo.
const extraDir = "testdata/torch_extra"

// loadExtraFixture reads NAME.json/.npz/.onnx from extraDir (the layout of
// testdata/torch, which ortcheck.LoadFixture reads from its fixed folder).
func loadExtraFixture(t *testing.T, name string) *torchFixture {
	t.Helper()
	return loadDirFixture(t, extraDir, name)
}

// loadDirFixture reads NAME.json/.npz/.onnx from dir, a folder in the
// layout of testdata/torch.
func loadDirFixture(t *testing.T, dir, name string) *torchFixture {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Data      string   `json:"data"` // NAME.npz when empty
		Tasks     []string `json:"tasks"`
		Trainable []string `json:"trainable"`
		Input     struct{ Name string }
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		t.Fatal(err)
	}
	if meta.Data == "" {
		meta.Data = name + ".npz"
	}
	arrays, err := npz.Read(filepath.Join(dir, meta.Data))
	if err != nil {
		t.Fatal(err)
	}
	f := &ortcheck.Fixture{Name: name, ModelPath: filepath.Join(dir, name+".onnx"), Tasks: meta.Tasks,
		Trainable: meta.Trainable, InputName: meta.Input.Name, Targets: map[string]*importer.Tensor{},
		Outputs: map[string]*importer.Tensor{}, ORT: map[string]*importer.Tensor{}, Losses: map[string]float64{},
		Grads: map[string]map[string]*importer.Tensor{}}
	for key, v := range arrays {
		kind, rest, _ := strings.Cut(key, "/")
		switch kind {
		case "input":
			f.Input = v
		case "target":
			f.Targets[rest] = v
		case "output":
			f.Outputs[rest] = v
		case "ort":
			f.ORT[rest] = v
		case "loss":
			f.Losses[rest] = v.Float64s()[0]
		case "grad":
			task, init, _ := strings.Cut(rest, "/")
			if f.Grads[task] == nil {
				f.Grads[task] = map[string]*importer.Tensor{}
			}
			f.Grads[task][init] = v
		}
	}
	return newTorchFixture(t, f)
}

// TestTorchExtraFixtures checks backend against PyTorch, as
// TestTorchFixtures does, on the extra exports of testdata/torch_extra
// (GELU/Erf, LayerNorm, SiLU, AvgPool, depthwise conv, ReLU6, Hardswish,
// HardSigmoid, ConvTranspose, bilinear Upsample), in float32.
func TestTorchExtraFixtures(t *testing.T) {
	matches, err := filepath.Glob(filepath.Join(extraDir, "*.json"))
	if err != nil || len(matches) == 0 {
		t.Fatalf("no fixtures in %s (%v)", extraDir, err)
	}
	for _, p := range matches {
		name := strings.TrimSuffix(filepath.Base(p), ".json")
		t.Run(name, func(t *testing.T) {
			checkTorchFixture(t, loadExtraFixture(t, name), false)
		})
	}
}

func checkTorchFixture(t *testing.T, tf *torchFixture, f64 bool) {
	f := tf.f
	md, err := Open(tf.m, tf.tasks, Options{Float64: f64})
	if err != nil {
		t.Fatal(err)
	}

	// The trainable initializers are exactly torch's parameters.
	var got []string
	for _, p := range md.Trainable() {
		got = append(got, p.Name)
	}
	if len(got) != len(f.Trainable) {
		t.Errorf("trainable initializers: %d %v, want torch's %d parameters %v", len(got), got, len(f.Trainable), f.Trainable)
	} else {
		for i := range got {
			if got[i] != f.Trainable[i] {
				t.Errorf("trainable[%d] = %q, want %q", i, got[i], f.Trainable[i])
			}
		}
	}

	// Forward outputs.
	outs, err := md.Outputs(tf.batch)
	if err != nil {
		t.Fatal(err)
	}
	worstOut := 0.0
	for oname, want := range f.Outputs {
		d := maxAbsDiffT(t, "output "+oname, outs[oname], want)
		worstOut = math.Max(worstOut, d)
		if d > outputTol {
			t.Errorf("output %q: max |ours − torch| = %.3g, want ≤ %g", oname, d, outputTol)
		}
	}

	// Losses and per-task gradients.
	m, n := len(tf.tasks), md.NumParams()
	losses := make([]float64, m)
	jac := png.NewJacobian(m, n)
	if err := md.Evaluate(tf.batch, losses, &jac); err != nil {
		t.Fatal(err)
	}
	worstLoss, worstGrad := 0.0, 0.0
	worstGradAt := ""
	for i, task := range tf.tasks {
		want, ok := f.Losses[task.Name]
		if !ok {
			t.Fatalf("fixture has no loss for task %q", task.Name)
		}
		rel := math.Abs(losses[i]-want) / math.Abs(want)
		worstLoss = math.Max(worstLoss, rel)
		if !(rel <= lossTol) {
			t.Errorf("task %q: loss %.9g, torch %.9g (relative difference %.3g, want ≤ %g)", task.Name, losses[i], want, rel, lossTol)
		}
		row := jac.Row(i)
		for _, p := range md.Trainable() {
			ref := f.Grads[task.Name][p.Name]
			if ref == nil {
				t.Fatalf("fixture has no gradient of task %q for %q", task.Name, p.Name)
			}
			if !shape.Equal(ref.Shape, p.Shape) {
				t.Fatalf("gradient %s/%s: fixture shape %v, parameter shape %v", task.Name, p.Name, ref.Shape, p.Shape)
			}
			r := ref.Float64s()
			var dd, rr float64
			for k, v := range row[p.Offset : p.Offset+len(r)] {
				e := float64(v) - r[k]
				dd += e * e
				rr += r[k] * r[k]
			}
			dn, rn := math.Sqrt(dd), math.Sqrt(rr)
			rel := dn / math.Max(rn, gradAbs/gradRel)
			if rel > worstGrad || math.IsNaN(rel) {
				worstGrad, worstGradAt = rel, task.Name+"/"+p.Name
			}
			if !(dn <= gradRel*rn+gradAbs) {
				t.Errorf("gradient %s/%s: ‖ours − torch‖ = %.3g, ‖torch‖ = %.3g (relative %.3g, want ≤ %g)", task.Name, p.Name, dn, rn, dn/rn, gradRel)
			}
		}
	}
	t.Logf("%s: worst output |diff| %.2e, worst loss rel diff %.2e, worst gradient rel diff %.2e (%s)", f.Name, worstOut, worstLoss, worstGrad, worstGradAt)
}
