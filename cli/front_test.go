package cli_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/format/npz"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/internal/testkit/ortcheck"
	"github.com/paretonav/paretonav/models"
	"github.com/paretonav/paretonav/models/datasets"
	"github.com/paretonav/paretonav/models/synthetic"
)

// frontReport is the part of front's --json output the tests read.
type frontReport struct {
	Tasks  []string `json:"tasks"`
	Steps  int      `json:"steps"`
	Models []struct {
		File      string             `json:"file"`
		Losses    map[string]float64 `json:"losses"`
		Accuracy  map[string]float64 `json:"accuracy"`
		FrontDist *float64           `json:"front_distance"`
	} `json:"models"`
	Loss struct {
		HV           float64   `json:"hv"`
		Ref          []float64 `json:"ref"`
		HVNote       string    `json:"hv_note"`
		IGDPlus      *float64  `json:"igd_plus"`
		Reference    string    `json:"igd_plus_reference"`
		NonDominated int       `json:"non_dominated"`
	} `json:"loss_quality"`
	Accuracy *struct {
		HV      float64  `json:"hv"`
		IGDPlus *float64 `json:"igd_plus"`
	} `json:"accuracy_quality"`
	Gaps  []float64         `json:"neighbour_gaps"`
	Files map[string]string `json:"files"`
}

func runFrontJSON(t *testing.T, args ...string) frontReport {
	t.Helper()
	return runJSON[frontReport](t, "front", args...)
}

// TestFrontExp2Even: five models on exp2 end on the true front (within
// 1e-2) and evenly spread: the largest gap between neighbours is at most
// 1.2 × the smallest, as in the paper's figure.
func TestFrontExp2Even(t *testing.T) {
	dir := t.TempDir()
	r := runFrontJSON(t, "--problem", "exp2", "--models", "5", "--out-dir", dir)
	if len(r.Models) != 5 {
		t.Fatalf("%d models, want 5", len(r.Models))
	}
	exp2, _ := synthetic.New("exp2")
	pts := make([][2]float64, 5)
	for k, m := range r.Models {
		pts[k] = [2]float64{m.Losses["l1"], m.Losses["l2"]}
		d := exp2.FrontDistance(pts[k])
		if d > frontTol {
			t.Errorf("model %d at %v is %g from the front, want ≤ %g", k, pts[k], d, frontTol)
		}
		if m.FrontDist == nil || math.Abs(*m.FrontDist-d) > 1e-9 {
			t.Errorf("model %d: reported front distance %v, want %g", k, m.FrontDist, d)
		}
	}
	checkEvenGaps(t, pts)
	if len(r.Gaps) != 4 {
		t.Errorf("report has %d neighbour gaps, want 4", len(r.Gaps))
	}
	// Five points spread over exp2's front: the hypervolume under (1.1,
	// 1.1) is 0.446 here, against 0.13 for a corner point alone and 0.31
	// for the middle point (0.636, 0.636) alone. IGD+ is measured against
	// 200 points of the true front: the mean distance from a front point
	// to the nearest model, 0.046 for these five evenly spread models.
	if r.Loss.HV < 0.4 || r.Loss.NonDominated != 5 || r.Loss.HVNote != "" {
		t.Errorf("loss quality %+v: want HV ≥ 0.4, 5 non-dominated, no HV note", r.Loss)
	}
	const igdTol = 0.06
	if r.Loss.IGDPlus == nil || !(*r.Loss.IGDPlus <= igdTol) || !strings.Contains(r.Loss.Reference, "true front of exp2") {
		t.Errorf("loss IGD+ %v against %q: want ≤ %g against the true front of exp2", fmtPtr(r.Loss.IGDPlus), r.Loss.Reference, igdTol)
	}
}

// tinyMultiMNIST writes n MultiMNIST-like examples composed (by
// datasets.Compose) from random 28×28 "digits" whose brightness encodes
// their label, so that the labels are learnable.
func tinyMultiMNIST(t *testing.T, path string, n int, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 9))
	set := func() *datasets.Set {
		const k = 50
		im := &datasets.Images{N: k, Rows: 28, Cols: 28, Pixels: make([]uint8, k*28*28)}
		labels := make([]uint8, k)
		for i := range k {
			labels[i] = uint8(rng.IntN(10))
			px := im.At(i)
			for p := range px {
				if rng.Float64() < 0.1+0.08*float64(labels[i]) {
					px[p] = 255
				}
			}
		}
		return &datasets.Set{Images: im, Labels: labels}
	}
	arrays, err := datasets.Compose(set(), set(), n, int64(seed))
	if err != nil {
		t.Fatal(err)
	}
	if err := npz.Write(path, arrays); err != nil {
		t.Fatal(err)
	}
}

var lenetTaskArgs = []string{"--task", "left:nll:logp_left:left", "--task", "right:nll:logp_right:right"}

// TestFrontLeNet2: three LeNet2 copies trained a few steps on tiny
// MultiMNIST-like data write three models ONNX Runtime loads, front.csv,
// front.png and report.json, with accuracies in [0, 1].
func TestFrontLeNet2(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "lenet2.onnx")
	if err := models.WriteModel(model, models.LeNet2(1)); err != nil {
		t.Fatal(err)
	}
	train, val := filepath.Join(dir, "train.npz"), filepath.Join(dir, "val.npz")
	tinyMultiMNIST(t, train, 48, 1)
	tinyMultiMNIST(t, val, 20, 2)
	out := filepath.Join(dir, "front")
	args := append([]string{model, "--data", train, "--val", val, "--models", "3", "--steps", "3", "--batch", "16",
		"--out-dir", out, "--seed", "4", "--workers", "2"}, lenetTaskArgs...)
	r := runFrontJSON(t, args...)
	if len(r.Models) != 3 || r.Steps != 3 {
		t.Fatalf("%d models after %d steps, want 3 after 3", len(r.Models), r.Steps)
	}
	for k, m := range r.Models {
		if want := filepath.Join(out, "model_"+string(rune('0'+k))+".onnx"); m.File != want {
			t.Errorf("model %d written to %q, want %q", k, m.File, want)
		}
		if _, err := importer.Load(m.File); err != nil {
			t.Errorf("model %d: %v", k, err)
		}
		for _, task := range []string{"left", "right"} {
			if a := m.Accuracy[task]; !(a >= 0 && a <= 1) || m.Losses[task] <= 0 {
				t.Errorf("model %d task %s: loss %v, accuracy %v", k, task, m.Losses[task], a)
			}
		}
	}
	if r.Accuracy == nil || !(r.Accuracy.HV >= 0) || r.Accuracy.IGDPlus != nil {
		t.Errorf("accuracy quality %+v, want a hypervolume and no IGD+ (no reference front)", r.Accuracy)
	}
	// Untrained losses (about 2.3) are all above the default reference
	// point 0.6: the report says so instead of a bare HV of 0, and has no
	// IGD+ without --reference.
	if r.Loss.HV != 0 || !strings.Contains(r.Loss.HVNote, "below the reference point (0.6, 0.6)") ||
		!strings.Contains(r.Loss.HVNote, "--ref") || r.Loss.IGDPlus != nil || r.Loss.NonDominated < 1 {
		t.Errorf("loss quality %+v: want HV 0 with a note naming (0.6, 0.6) and --ref, non-dominated models, no IGD+", r.Loss)
	}
	sum, err := runCLI(t, append([]string{"front", "--force"}, args...)...)
	if err != nil || !strings.Contains(sum, "models non-dominated; no model's losses are below the reference point (0.6, 0.6)") || strings.Contains(sum, "IGD+") {
		t.Errorf("front summary (%v):\n%s\nwant the non-dominated count and the HV note, no IGD+", err, sum)
	}
	// With --ref above the losses and --reference (front.csv of this run)
	// HV is positive and IGD+ is measured against that file.
	ref := filepath.Join(dir, "reference.csv")
	csvBytes, err := os.ReadFile(filepath.Join(out, "front.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ref, csvBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	r2 := runFrontJSON(t, append([]string{"--force", "--ref", "10", "--reference", ref}, args...)...)
	if !(r2.Loss.HV > 0) || r2.Loss.HVNote != "" || r2.Loss.IGDPlus == nil || !(*r2.Loss.IGDPlus >= 0) || !strings.HasPrefix(r2.Loss.Reference, ref+" (3 points)") {
		t.Errorf("loss quality with --ref 10 --reference %s: %+v, want HV > 0, no note, IGD+ against the file's 3 points", ref, r2.Loss)
	}
	f, err := os.Open(filepath.Join(out, "front.csv"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil || len(rows) != 4 || strings.Join(rows[0], ",") != "model,loss_left,loss_right,acc_left,acc_right" {
		t.Errorf("front.csv: %v rows %v", err, rows)
	}
	img, _ := os.ReadFile(filepath.Join(out, "front.png"))
	if !bytes.HasPrefix(img, []byte("\x89PNG")) {
		t.Errorf("front.png is not a PNG image (%d bytes)", len(img))
	}
	rep, _ := os.ReadFile(filepath.Join(out, "report.json"))
	if !json.Valid(rep) {
		t.Errorf("report.json is not JSON: %s", rep)
	}
	// Existing outputs are kept without --force.
	if _, err := runCLI(t, append([]string{"front"}, args...)...); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Errorf("second run into the same --out-dir: %v, want an error naming --force", err)
	}

	ortcheck.Require(t)
	arrays, err := npz.Read(val)
	if err != nil {
		t.Fatal(err)
	}
	outs, err := ortcheck.Run(r.Models[1].File, map[string]*importer.Tensor{"x": arrays["x"]})
	if err != nil {
		t.Fatalf("ONNX Runtime on model 1: %v", err)
	}
	if lp := outs["logp_left"]; lp == nil || len(lp.Shape) != 2 || lp.Shape[0] != 20 || lp.Shape[1] != 10 {
		t.Errorf("ONNX Runtime output logp_left: %v", lp)
	}
}

// TestFrontDivergedWritesNothing: a run whose models diverge (plain SGD at
// an absurd learning rate: the losses jump from 2.3 to 10⁷ at step 2, and
// halving the rate three times does not save them) stops with an error
// naming the model and step, and front writes no model, front.csv or
// report for it.
func TestFrontDivergedWritesNothing(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "lenet2.onnx")
	if err := models.WriteModel(model, models.LeNet2(1)); err != nil {
		t.Fatal(err)
	}
	train := filepath.Join(dir, "train.npz")
	tinyMultiMNIST(t, train, 48, 1)
	out := filepath.Join(dir, "front")
	args := append([]string{"front", model, "--data", train, "--models", "2", "--steps", "20", "--batch", "16",
		"--optimizer", "sgd", "--lr", "1000", "--out-dir", out}, lenetTaskArgs...)
	_, err := runCLI(t, args...)
	if err == nil || !strings.Contains(err.Error(), "step 2, model 0 diverged: loss left") {
		t.Fatalf("front at --lr 1000: error %v, want one naming the diverged model, its loss and the step", err)
	}
	for _, f := range []string{"model_0.onnx", "model_1.onnx", "front.csv", "front.png", "report.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err == nil {
			t.Errorf("%s written for a run that diverged", f)
		}
	}
}

// TestFrontDefaultsFromScratch: front on an ONNX model resolves the
// defaults that train from scratch (README, "front"): Adam 1e-3, or SGD
// with momentum 0.9 and lr 0.06, the threshold capped at 100 times its
// warm-up value and the trade test at M = 10; --problem keeps the paper's
// plain steps, threshold and free steps.
func TestFrontDefaultsFromScratch(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "lenet2.onnx")
	if err := models.WriteModel(model, models.LeNet2(1)); err != nil {
		t.Fatal(err)
	}
	train := filepath.Join(dir, "train.npz")
	tinyMultiMNIST(t, train, 16, 1)
	for _, tc := range []struct {
		name string
		args []string
		want map[string]any // fields of the log's config line; nil: absent
	}{
		{"adam", append([]string{model, "--data", train, "--batch", "8"}, lenetTaskArgs...),
			map[string]any{"optimizer": "adam", "lr": 1e-3, "momentum": nil, "threshold_cap": 100.0, "max_tradeoff": 10.0}},
		{"sgd", append([]string{model, "--data", train, "--batch", "8", "--optimizer", "sgd"}, lenetTaskArgs...),
			map[string]any{"optimizer": "sgd", "lr": 0.06, "momentum": 0.9, "threshold_cap": 100.0, "max_tradeoff": 10.0}},
		{"sgd, momentum off", append([]string{model, "--data", train, "--batch", "8", "--optimizer", "sgd", "--momentum", "0"}, lenetTaskArgs...),
			map[string]any{"optimizer": "sgd", "lr": 0.06, "momentum": nil}},
		{"synthetic", []string{"--problem", "exp2"},
			map[string]any{"optimizer": "sgd", "lr": 0.005, "momentum": nil, "threshold_cap": nil, "max_tradeoff": nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := filepath.Join(dir, tc.name+".jsonl")
			args := append([]string{"front", "--models", "2", "--steps", "1", "--out-dir", filepath.Join(dir, tc.name), "--log", log}, tc.args...)
			if out, err := runCLI(t, args...); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			b, err := os.ReadFile(log)
			if err != nil {
				t.Fatal(err)
			}
			var cfg map[string]any
			if err := json.Unmarshal(bytes.SplitN(b, []byte("\n"), 2)[0], &cfg); err != nil {
				t.Fatal(err)
			}
			for k, want := range tc.want {
				if got, ok := cfg[k]; (want == nil && ok) || (want != nil && got != want) {
					t.Errorf("config %s = %v, want %v", k, got, want)
				}
			}
		})
	}
}

func TestFrontErrors(t *testing.T) {
	dir := t.TempDir()
	// Reference fronts the reading rejects (before any training step).
	badRef, shortRef := filepath.Join(dir, "bad.csv"), filepath.Join(dir, "short.csv")
	if err := os.WriteFile(badRef, []byte("model,loss_l1\n0,0.5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(shortRef, []byte("0.5\n0.7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--problem", "exp2", "--models", "5"}, "--out-dir"},
		{[]string{"--problem", "exp2", "--models", "1", "--out-dir", dir}, "--models"},
		{[]string{"--problem", "nope", "--out-dir", dir}, "--problem"},
		{[]string{"--problem", "exp2", "--criterion", "wd:0.5,0.5", "--out-dir", dir}, "--criterion"},
		{[]string{"--problem", "exp2", "--spread", "-1", "--out-dir", dir}, "--spread"},
		{[]string{"--problem", "exp2", "--energy-scale", "unit", "--out-dir", dir}, "--energy-scale"},
		{[]string{"--problem", "exp2", "--energy-push", "sideways", "--out-dir", dir}, "--energy-push"},
		{[]string{"--problem", "exp2", "--ref", "1,2,3", "--steps", "1", "--out-dir", dir, "--force"}, "--ref"},
		{[]string{"--out-dir", dir}, "MODEL.onnx"},
		{[]string{"m.onnx", "--init", "a.onnx,b.onnx", "--models", "3", "--out-dir", dir}, "--init"},
		{[]string{"--problem", "exp2", "--reference", badRef, "--out-dir", dir, "--force"}, "loss_l2"},
		{[]string{"--problem", "exp2", "--reference", shortRef, "--out-dir", dir, "--force"}, "one loss per task"},
		{[]string{"--problem", "exp2", "--reference", filepath.Join(dir, "none.csv"), "--out-dir", dir, "--force"}, "--reference"},
	} {
		_, err := runCLI(t, append([]string{"front"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("front %v: error %v, want one naming %s", tc.args, err, tc.want)
		}
	}
}

// TestFrontConfig: front reads its flags from --config like every command,
// and command-line flags win.
func TestFrontConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "front.yaml")
	if err := os.WriteFile(cfg, []byte("problem: exp2\nmodels: 3\nsteps: 40\nref: [1.2, 1.2]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runFrontJSON(t, "--config", cfg, "--steps", "30", "--out-dir", filepath.Join(dir, "out"))
	if len(r.Models) != 3 || r.Steps != 30 || len(r.Loss.Ref) != 2 || r.Loss.Ref[0] != 1.2 {
		t.Errorf("got %d models after %d steps, ref %v; want 3 models (file), 30 steps (flag), ref [1.2 1.2] (file)", len(r.Models), r.Steps, r.Loss.Ref)
	}
}

// fmtPtr prints *v, or nil.
func fmtPtr(v *float64) string {
	if v == nil {
		return "nil"
	}
	return strconv.FormatFloat(*v, 'g', -1, 64)
}

// TestFrontExplainsMembers: front's report gives each model its run's
// explanation, counted from that model's steps as the log records them
// (the band share of g ≤ e, the steps with the control on), and the
// summary prints each model's one-line form under it.
func TestFrontExplainsMembers(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "front.jsonl")
	args := []string{"--problem", "exp2", "--models", "3", "--steps", "150", "--out-dir", dir, "--log", log}
	type explained struct {
		Models []struct {
			Explanation *struct {
				Short string `json:"short"`
				Band  struct {
					Share float64 `json:"share"`
					Steps int     `json:"steps"`
				} `json:"band"`
				Control struct {
					Steps int `json:"steps"`
					On    int `json:"on"`
				} `json:"control"`
			} `json:"explanation"`
		} `json:"models"`
	}
	r := runJSON[explained](t, "front", append(args, "--force")...)
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	type point struct {
		G, E    float64
		Control bool
	}
	var steps [][]point
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var kind struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal([]byte(l), &kind); err != nil {
			t.Fatal(err)
		}
		if kind.Kind != "" { // the configuration and the result
			continue
		}
		var st struct {
			Step   int `json:"step"`
			Models []struct {
				G       float64 `json:"g"`
				E       float64 `json:"e"`
				Control bool    `json:"control"`
			} `json:"models"`
		}
		if err := json.Unmarshal([]byte(l), &st); err != nil {
			t.Fatal(err)
		}
		if st.Step == 0 {
			continue
		}
		var pts []point
		for _, m := range st.Models {
			pts = append(pts, point{m.G, m.E, m.Control})
		}
		steps = append(steps, pts)
	}
	if len(r.Models) != 3 || len(steps) != 150 {
		t.Fatalf("%d models, %d step lines: want 3 and 150", len(r.Models), len(steps))
	}
	for k, m := range r.Models {
		ex := m.Explanation
		if ex == nil || ex.Short == "" {
			t.Fatalf("model %d: explanation %+v, want one with its line", k, ex)
		}
		on, band := 0, 0
		for i, st := range steps {
			if st[k].Control {
				on++
			}
			if i >= len(steps)-100 && st[k].G <= st[k].E {
				band++
			}
		}
		if ex.Control.Steps != 150 || ex.Control.On != on || ex.Band.Steps != 100 || math.Abs(ex.Band.Share-float64(band)/100) > 1e-12 {
			t.Errorf("model %d: control %+v, band %+v; the log has the control on at %d of 150 steps, g ≤ e at %d of the last 100", k, ex.Control, ex.Band, on, band)
		}
		if want := fmt.Sprintf("control on at %d of 150 steps", on); !strings.Contains(ex.Short, want) {
			t.Errorf("model %d: short %q lacks %q", k, ex.Short, want)
		}
	}
	out, err := runCLI(t, append([]string{"front"}, append(args, "--force")...)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for k, m := range r.Models {
		if !strings.Contains(out, "\n    "+m.Explanation.Short+"\n") {
			t.Errorf("summary lacks model %d's line %q:\n%s", k, m.Explanation.Short, out)
		}
	}
}
