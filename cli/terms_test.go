package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/backend"
	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/job"
)

// The ONNX backend trains terms as finetune expects them.
var _ finetune.TermProblem = (*backend.Model)(nil)

// termArgs tune LeNet2 on its left digit with the right digit's loss as a
// term (not a task) and the drift from the starting weights in the
// criterion.
var termArgs = []string{"--task", "left:nll:logp_left:left", "--term", "right:nll:logp_right:right",
	"--criterion", "left + 0.5*right + 0.01*drift"}

// TestTuneTermAndDrift runs tune end to end with a --term and drift: the
// report shows the term and drift beside the task with F their
// combination, the log and CSV carry them, and the plot is drawn.
func TestTuneTermAndDrift(t *testing.T) {
	dir := t.TempDir()
	model, data := tinyLeNet(t, dir, 8)
	out, logPath, csvPath, plotPath := filepath.Join(dir, "tuned.onnx"), filepath.Join(dir, "run.jsonl"),
		filepath.Join(dir, "run.csv"), filepath.Join(dir, "run.png")
	args := append([]string{"tune", model, "--data", data, "--steps", "4", "--batch", "4", "--optimizer", "sgd", "--lr", "0.05",
		"--out", out, "--log", logPath, "--csv", csvPath, "--plot", plotPath, "--json"}, termArgs...)
	res := runTuneJSON(t, args...)
	if len(res.Tasks) != 1 || res.Tasks[0] != "left" || len(res.Terms) != 1 || res.Terms[0] != "right" {
		t.Fatalf("tasks %v terms %v, want [left] [right]", res.Tasks, res.Terms)
	}
	for name, rep := range map[string]job.TuneReport{"before": res.Before, "after": res.After} {
		if rep.Drift == nil || rep.Terms["right"] <= 0 {
			t.Fatalf("%s: terms %v drift %v, want the right loss and a drift", name, rep.Terms, rep.Drift)
		}
		want := float64(rep.Losses["left"]) + 0.5*float64(rep.Terms["right"]) + 0.01*float64(*rep.Drift)
		if math.Abs(float64(rep.F)-want) > 1e-9*math.Abs(want) {
			t.Errorf("%s: F = %v, want left + 0.5·right + 0.01·drift = %v", name, rep.F, want)
		}
	}
	if *res.Before.Drift != 0 || !(*res.After.Drift > 0) {
		t.Errorf("drift %v before, %v after; want 0, then > 0", *res.Before.Drift, *res.After.Drift)
	}
	// The log: terms and drift in the configuration and every step.
	f, err := os.Open(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	var lines []map[string]any
	for sc.Scan() {
		var v map[string]any
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, v)
	}
	if len(lines) != 6 || lines[0]["drift"] != true || lines[0]["terms"] == nil {
		t.Fatalf("log: %d lines, config %v; want config with terms and drift, 4 steps, result", len(lines), lines[0])
	}
	for _, st := range lines[1:5] {
		terms, _ := st["terms"].(map[string]any)
		if _, ok := st["drift"].(float64); !ok || terms["right"] == nil {
			t.Errorf("log step %v: want terms.right and drift", st["step"])
		}
	}
	csvBytes, err := os.ReadFile(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	if head := strings.SplitN(string(csvBytes), "\n", 2)[0]; !strings.HasPrefix(head, "step,left,right,drift,F,") {
		t.Errorf("CSV header %q, want step,left,right,drift,F,...", head)
	}
	if img, _ := os.ReadFile(plotPath); !bytes.HasPrefix(img, []byte("\x89PNG")) {
		t.Errorf("--plot wrote no PNG image (%d bytes)", len(img))
	}
	if _, err := importer.Load(out); err != nil {
		t.Errorf("tuned model: %v", err)
	}
	// The human summary lists the term and drift.
	sum, err := runCLI(t, append(args[:len(args)-len(termArgs)-1], append([]string{"--force"}, termArgs...)...)...)
	if err != nil || !strings.Contains(sum, "right (term)") || !strings.Contains(sum, "drift") {
		t.Errorf("summary (%v):\n%s\nwant rows for the term and drift", err, sum)
	}
}

// TestTuneDriftResumeBitExact: a tune run with a term and drift that is
// interrupted and resumed writes the same weights as one that was not: the
// checkpoint keeps the starting weights drift is measured from.
func TestTuneDriftResumeBitExact(t *testing.T) {
	dir := t.TempDir()
	model, data := tinyLeNet(t, dir, 8)
	base := append([]string{"paretonav", "tune", model, "--data", data, "--steps", "6", "--batch", "4"}, termArgs...)
	want := filepath.Join(dir, "want.onnx")
	if out, err := runCLI(t, append(base[1:], "--out", want)...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	got, ckpt := filepath.Join(dir, "got.onnx"), filepath.Join(dir, "got.ckpt")
	args := append(append([]string(nil), base...), "--out", got, "--checkpoint", ckpt)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tuneTestRecorder = &cancelAfter{n: 3, cancel: cancel}
	defer func() { tuneTestRecorder = nil }()
	app := NewApp()
	var buf bytes.Buffer
	app.Writer, app.ErrWriter = &buf, &buf
	var ie *finetune.InterruptedError
	if err := app.RunContext(ctx, args); !errors.As(err, &ie) {
		t.Fatalf("err = %v, want an InterruptedError\n%s", err, buf.String())
	}
	tuneTestRecorder = nil
	if out, err := runCLI(t, append(args[1:], "--resume", ckpt)...); err != nil {
		t.Fatalf("resume: %v\n%s", err, out)
	}
	mw, err := importer.Load(want)
	if err != nil {
		t.Fatal(err)
	}
	mg, err := importer.Load(got)
	if err != nil {
		t.Fatal(err)
	}
	wi, _ := mw.Initializers()
	gi, _ := mg.Initializers()
	for name, w := range wi {
		g := gi[name]
		if g == nil || !w.IsFloat() {
			continue
		}
		wv, gv := w.Float64s(), g.Float64s()
		for k := range wv {
			if wv[k] != gv[k] {
				t.Fatalf("initializer %s[%d] = %v after resuming, %v uninterrupted", name, k, gv[k], wv[k])
			}
		}
	}
}

// TestFrontTermAndDrift runs front end to end with a --term and drift in a
// per-model criterion added to the energy: every model's report carries
// the term and its drift from its own start.
func TestFrontTermAndDrift(t *testing.T) {
	dir := t.TempDir()
	model, data := tinyLeNet(t, dir, 8)
	out := filepath.Join(dir, "front")
	printed, err := runCLI(t, "front", model, "--data", data, "--models", "2", "--steps", "3", "--batch", "4", "--out-dir", out, "--json",
		"--task", "left:nll:logp_left:left", "--task", "right:nll:logp_right:right", "--term", "both:nll:logp_left:right",
		"--criterion", "energy + 0.1*both + 0.01*drift")
	if err != nil {
		t.Fatalf("%v\n%s", err, printed)
	}
	var r struct {
		Criterion string `json:"criterion"`
		Models    []struct {
			File  string             `json:"file"`
			Terms map[string]float64 `json:"terms"`
			Drift *float64           `json:"drift"`
		} `json:"models"`
	}
	if err := json.Unmarshal([]byte(printed[strings.Index(printed, "{"):]), &r); err != nil {
		t.Fatalf("%v\n%s", err, printed)
	}
	if len(r.Models) != 2 {
		t.Fatalf("%d models, want 2", len(r.Models))
	}
	for k, m := range r.Models {
		if !(m.Terms["both"] > 0) || m.Drift == nil || !(*m.Drift > 0) {
			t.Errorf("model %d: terms %v drift %v, want the term and a positive drift", k, m.Terms, m.Drift)
		}
		if _, err := importer.Load(m.File); err != nil {
			t.Errorf("model %d: %v", k, err)
		}
	}
	// Errors: a criterion reading an unknown term, --term with --problem.
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{model, "--data", data, "--task", "left:nll:logp_left:left", "--task", "right:nll:logp_right:right",
			"--criterion", "energy + adv"}, `unknown task "adv"`},
		{[]string{"--problem", "exp2", "--term", "x:mse:y:z"}, "--term"},
		{[]string{model, "--data", data, "--task", "left:nll:logp_left:left", "--term", "left:nll:logp_right:right"}, `name "left" is already a task's`},
	} {
		args := append([]string{"front", "--models", "2", "--steps", "1", "--out-dir", filepath.Join(dir, "bad")}, tc.args...)
		if _, err := runCLI(t, args...); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("front %v: %v, want an error containing %q", tc.args, err, tc.msg)
		}
	}
}
