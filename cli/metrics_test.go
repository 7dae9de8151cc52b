package cli_test

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/format/npz"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/models"
)

// mtanTaskArgs are MTAN's three tasks (models.MTAN).
var mtanTaskArgs = []string{"--task", "seg:nll:seg_logp:seg:ignore_index=-1", "--task", "depth:depth_l1:depth:depth_t",
	"--task", "normal:normal_cos:normal:normal_t"}

// tinyNYU writes a small MTAN (width 4, 32×32, 4 classes) and n random
// NYUv2-like examples: labels with ignored pixels (−1), depths and unit
// normals with missing (zero) pixels.
func tinyNYU(t *testing.T, dir string, n int) (model, data string) {
	t.Helper()
	model, data = filepath.Join(dir, "mtan.onnx"), filepath.Join(dir, "nyu.npz")
	if err := models.WriteModel(model, models.MTAN(models.MTANConfig{Width: 4, InputHeight: 32, InputWidth: 32, Classes: 4, Seed: 3})); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 5))
	const h, w = 32, 32
	px := h * w
	x := make([]float32, n*3*px)
	for i := range x {
		x[i] = rng.Float32()
	}
	seg := make([]int64, n*px)
	depth := make([]float32, n*px)
	normal := make([]float32, n*3*px)
	for i := range seg {
		seg[i] = int64(rng.IntN(4))
		if rng.Float64() < 0.1 {
			seg[i] = -1
		}
		if rng.Float64() > 0.15 {
			depth[i] = 0.5 + 4*rng.Float32()
		}
	}
	for k := 0; k < n; k++ {
		for j := 0; j < px; j++ {
			if rng.Float64() < 0.15 {
				continue
			}
			v := [3]float64{rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()}
			l := math.Sqrt(v[0]*v[0] + v[1]*v[1] + v[2]*v[2])
			for c := range v {
				normal[(k*3+c)*px+j] = float32(v[c] / l)
			}
		}
	}
	err := npz.Write(data, map[string]*importer.Tensor{
		"x":        importer.NewFloat32("x", []int{n, 3, h, w}, x),
		"seg":      importer.NewInt64("seg", []int{n, h, w}, seg),
		"depth_t":  importer.NewFloat32("depth_t", []int{n, 1, h, w}, depth),
		"normal_t": importer.NewFloat32("normal_t", []int{n, 3, h, w}, normal),
	})
	if err != nil {
		t.Fatal(err)
	}
	return model, data
}

// nyuKeys are the metrics each MTAN task must report.
var nyuKeys = map[string][]string{
	"seg":    {"miou", "pixel_acc"},
	"depth":  {"abs_err", "rel_err"},
	"normal": {"angle_mean", "angle_median", "within_11.25", "within_22.5", "within_30"},
}

// checkNYUMetrics fails t unless m has every MTAN metric, fractions in
// [0, 1], errors ≥ 0 and angles in [0, 180].
func checkNYUMetrics(t *testing.T, where string, m map[string]map[string]float64) {
	t.Helper()
	for task, keys := range nyuKeys {
		for _, k := range keys {
			v, ok := m[task][k]
			switch {
			case !ok:
				t.Errorf("%s: no %s.%s in %v", where, task, k, m)
			case strings.HasPrefix(k, "angle"):
				if !(v >= 0 && v <= 180) {
					t.Errorf("%s: %s.%s = %v, want degrees in [0, 180]", where, task, k, v)
				}
			case strings.HasSuffix(k, "_err"):
				if !(v >= 0) {
					t.Errorf("%s: %s.%s = %v, want ≥ 0", where, task, k, v)
				}
			default:
				if !(v >= 0 && v <= 1) {
					t.Errorf("%s: %s.%s = %v, want a fraction in [0, 1]", where, task, k, v)
				}
			}
		}
	}
}

// TestEvalMetricsPooled: eval --json reports the NYUv2 metrics, and they
// are pooled over all pixels: batches of 2, 2 and 1 give the values of a
// single batch of 5 (a mean of batch means would not).
func TestEvalMetricsPooled(t *testing.T) {
	dir := t.TempDir()
	model, data := tinyNYU(t, dir, 5)
	type evalOut struct {
		Metrics map[string]map[string]float64 `json:"metrics"`
	}
	one := runJSON[evalOut](t, "eval", append([]string{model, "--data", data, "--batch", "5"}, mtanTaskArgs...)...)
	three := runJSON[evalOut](t, "eval", append([]string{model, "--data", data, "--batch", "2"}, mtanTaskArgs...)...)
	checkNYUMetrics(t, "eval", one.Metrics)
	for task, keys := range nyuKeys {
		for _, k := range keys {
			a, b := one.Metrics[task][k], three.Metrics[task][k]
			if math.Abs(a-b) > 1e-9*math.Max(1, math.Abs(a)) {
				t.Errorf("%s.%s: %v over one batch of 5, %v over batches of 2, 2, 1", task, k, a, b)
			}
		}
	}
	human, err := runCLI(t, append([]string{"eval", model, "--data", data, "--batch", "2"}, mtanTaskArgs...)...)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"pooled over all evaluated pixels", "mIoU", "Pix Acc", "Abs Err", "Rel Err", "Median", "<11.25°"} {
		if !strings.Contains(human, want) {
			t.Errorf("eval output lacks %q:\n%s", want, human)
		}
	}
}

// TestTuneFrontMetrics: tune's validation records (JSON lines) and its
// report, and front's report, carry the metrics.
func TestTuneFrontMetrics(t *testing.T) {
	dir := t.TempDir()
	model, data := tinyNYU(t, dir, 4)
	log := filepath.Join(dir, "tune.jsonl")
	args := append([]string{"tune", model, "--data", data, "--val", data, "--criterion", "seg+depth+normal", "--steps", "2",
		"--val-every", "1", "--batch", "2", "--out", filepath.Join(dir, "tuned.onnx"), "--log", log, "--json"}, mtanTaskArgs...)
	out, err := runCLI(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		After struct {
			Metrics map[string]map[string]float64 `json:"metrics"`
		} `json:"after"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	checkNYUMetrics(t, "tune report", rep.After.Metrics)
	var steps int
	for _, l := range readJSONL(t, log) {
		vm, ok := l["val_metrics"]
		if !ok {
			if l["kind"] == "result" { // the result line: one model
				vm = l["models"].([]any)[0].(map[string]any)["val_metrics"]
			} else {
				continue
			}
		}
		b, _ := json.Marshal(vm)
		var m map[string]map[string]float64
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		checkNYUMetrics(t, "tune log", m)
		steps++
	}
	if steps != 3 {
		t.Errorf("%d log lines with val_metrics, want 3 (two steps and the result)", steps)
	}

	fr := runJSON[struct {
		Models []struct {
			Metrics map[string]map[string]float64 `json:"metrics"`
		} `json:"models"`
	}](t, "front", append([]string{model, "--data", data, "--models", "2", "--steps", "1", "--batch", "2", "--out-dir", filepath.Join(dir, "front")}, mtanTaskArgs...)...)
	if len(fr.Models) != 2 {
		t.Fatalf("%d models", len(fr.Models))
	}
	for _, m := range fr.Models {
		checkNYUMetrics(t, "front report", m.Metrics)
	}
}
