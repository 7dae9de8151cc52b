package cli

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/format/npz"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/internal/testkit/idxtest"
	"github.com/paretonav/paretonav/models"
)

// writeIDX writes an unsigned-byte IDX file (gzip-compressed when gz).
func writeIDX(t *testing.T, path string, dims []int, data []uint8, gz bool) {
	t.Helper()
	out := idxtest.Encode(dims, data)
	if gz {
		out = idxtest.Gzip(out)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// idxLeNet writes a LeNet2 model and n random 36×36 MultiMNIST-like
// examples twice: as IDX files (images.idx.gz, left.idx, right.idx) and as
// one NPZ (x = pixels/255, left, right int64) holding the same values.
func idxLeNet(t *testing.T, dir string, n int) (model, data string) {
	t.Helper()
	model, data = filepath.Join(dir, "lenet2.onnx"), filepath.Join(dir, "data.npz")
	if err := models.WriteModel(model, models.LeNet2(1)); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 5))
	px := make([]uint8, n*36*36)
	x := make([]float32, len(px))
	for i := range px {
		px[i] = uint8(rng.IntN(256))
		x[i] = float32(px[i]) / 255
	}
	lab := [2][]uint8{make([]uint8, n), make([]uint8, n)}
	lab64 := [2][]int64{make([]int64, n), make([]int64, n)}
	for k := range lab {
		for i := range n {
			lab[k][i] = uint8(rng.IntN(10))
			lab64[k][i] = int64(lab[k][i])
		}
	}
	writeIDX(t, filepath.Join(dir, "images.idx.gz"), []int{n, 36, 36}, px, true)
	writeIDX(t, filepath.Join(dir, "left.idx"), []int{n}, lab[0], false)
	writeIDX(t, filepath.Join(dir, "right.idx"), []int{n}, lab[1], false)
	writeIDX(t, filepath.Join(dir, "short.idx"), []int{n - 1}, lab[1][:n-1], false)
	err := npz.Write(data, map[string]*importer.Tensor{
		"x":     importer.NewFloat32("x", []int{n, 1, 36, 36}, x),
		"left":  importer.NewInt64("left", []int{n}, lab64[0]),
		"right": importer.NewInt64("right", []int{n}, lab64[1]),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := npz.Write(filepath.Join(dir, "images.npz"), map[string]*importer.Tensor{
		"x": importer.NewFloat32("x", []int{n, 1, 36, 36}, x)}); err != nil {
		t.Fatal(err)
	}
	return model, data
}

// TestEvalDataSources: eval reads the same examples from IDX files, from
// an NPZ archive merged with IDX labels, through --config and through
// --map, and finds the losses it finds on the one NPZ archive.
func TestEvalDataSources(t *testing.T) {
	const tol = 1e-12 // the same float32 inputs: the same losses
	dir := t.TempDir()
	model, data := idxLeNet(t, dir, 6)
	p := func(name string) string { return filepath.Join(dir, name) }
	evalLosses := func(t *testing.T, args ...string) (evalJSON, error) {
		t.Helper()
		printed, err := runCLI(t, append(append([]string{"eval", model, "--json", "--batch", "4"}, lenetTasks...), args...)...)
		var ev evalJSON
		if err == nil {
			err = json.Unmarshal([]byte(printed), &ev)
		}
		return ev, err
	}
	want, err := evalLosses(t, "--data", data)
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Tasks) != 2 || want.Examples != 6 {
		t.Fatalf("NPZ: %d examples, losses %v; want 6 examples, 2 tasks", want.Examples, want.Tasks)
	}
	cfg := p("data.yaml")
	yaml := "data:\n  - x=" + p("images.idx.gz") + "\n  - left=" + p("left.idx") + "\n  - right=" + p("right.idx") + "\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
	}{
		{"repeated --data", []string{"--data", "x=" + p("images.idx.gz"), "--data", "left=" + p("left.idx"), "--data", "right=" + p("right.idx")}},
		{"comma-separated", []string{"--data", "x=" + p("images.idx.gz") + ",left=" + p("left.idx") + ",right=" + p("right.idx")}},
		{"npz and idx", []string{"--data", p("images.npz"), "--data", "left=" + p("left.idx"), "--data", "right=" + p("right.idx")}},
		{"--map onto an idx array", []string{"--data", "img=" + p("images.idx.gz") + ",left=" + p("left.idx") + ",right=" + p("right.idx"), "--map", "x=img"}},
		{"--config list", []string{"--config", cfg}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := evalLosses(t, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if got.Examples != want.Examples {
				t.Errorf("%d examples, want %d", got.Examples, want.Examples)
			}
			for task, w := range want.Tasks {
				if g := got.Tasks[task]; math.Abs(float64(g-w)) > tol*math.Abs(float64(w)) {
					t.Errorf("task %s: loss %v, want %v (from the NPZ)", task, g, w)
				}
			}
			if math.Abs(float64(got.G-want.G)) > tol*math.Abs(float64(want.G)) {
				t.Errorf("g = %v, want %v", got.G, want.G)
			}
		})
	}
}

// TestDataSourceErrors: bad sources fail before any work, naming the flag,
// the source and what was expected.
func TestDataSourceErrors(t *testing.T) {
	dir := t.TempDir()
	model, data := idxLeNet(t, dir, 6)
	p := func(name string) string { return filepath.Join(dir, name) }
	out := p("tuned.onnx")
	tests := []struct {
		name    string
		args    []string
		needles []string
	}{
		{"eval: duplicate array", []string{"eval", model, "--data", data, "--data", "left=" + p("left.idx")},
			[]string{"--data", `array "left" comes from two data sources, "` + data + `" and "left=` + p("left.idx")}},
		{"eval: count mismatch", []string{"eval", model, "--data", "x=" + p("images.idx.gz"), "--data", "left=" + p("left.idx"), "--data", "right=" + p("short.idx")},
			[]string{`array "right" (from "right=` + p("short.idx") + `") has 5 examples but array "x"`}},
		{"eval: idx without a name", []string{"eval", model, "--data", p("left.idx")},
			[]string{"--data", "is an IDX file, one unnamed array: give it as NAME="}},
		{"eval: missing file", []string{"eval", model, "--data", "x=" + p("nope.idx")},
			[]string{"--data", "nope.idx", "no such file"}},
		{"eval: missing array", []string{"eval", model, "--data", "x=" + p("images.idx.gz") + ",left=" + p("left.idx")},
			[]string{`no array "right" for target of task "right"`}},
		{"eval: labels as input", []string{"eval", model, "--data", "x=" + p("left.idx") + ",left=" + p("left.idx") + ",right=" + p("right.idx")},
			[]string{`array "x" for model input "x" has element type`}},
		{"tune: bad --val", []string{"tune", model, "--data", data, "--val", "x=" + p("images.idx.gz"), "--criterion", "left+right", "--steps", "1", "--out", out},
			[]string{"--val", `no array "left"`}},
		{"front: bad --val", []string{"front", model, "--data", data, "--val", p("left.idx"), "--criterion", "energy", "--models", "2", "--steps", "1", "--out-dir", p("front")},
			[]string{"--val", "give it as NAME="}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			printed, err := runCLI(t, append(tc.args, lenetTasks...)...)
			if err == nil {
				t.Fatalf("no error\n%s", printed)
			}
			for _, n := range tc.needles {
				if !strings.Contains(err.Error(), n) {
					t.Errorf("err = %v, want it to contain %q", err, n)
				}
			}
		})
	}
}

// TestTuneIDXVal: tune trains on an NPZ archive and reports on
// validation data given as IDX files.
func TestTuneIDXVal(t *testing.T) {
	dir := t.TempDir()
	model, data := idxLeNet(t, dir, 6)
	p := func(name string) string { return filepath.Join(dir, name) }
	args := append([]string{"tune", model, "--data", data,
		"--val", "x=" + p("images.idx.gz"), "--val", "left=" + p("left.idx") + ",right=" + p("right.idx"),
		"--criterion", "left+right", "--steps", "1", "--batch", "3", "--out", p("tuned.onnx"), "--json"}, lenetTasks...)
	tuned := runTuneJSON(t, args...)
	if tuned.MeasuredOn != "validation" || tuned.Steps != 1 {
		t.Errorf("measured on %q after %d steps, want validation after 1", tuned.MeasuredOn, tuned.Steps)
	}
}
