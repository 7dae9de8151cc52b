package cli

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/internal/testkit/ortcheck"
)

// TestDemoQuick runs the demo at its --quick size (a few seconds): every
// file is written, F decreases from the pretrained model, the summary
// reports the band fraction and both tasks' accuracies, ONNX Runtime loads tuned.onnx, and a second
// run refuses to replace the files without --force.
func TestDemoQuick(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	out, err := runCLI(t, "demo", "--quick", "--out-dir", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"this takes about", "favours left", "Pareto band"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, f := range demoFiles {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil || st.Size() == 0 {
			t.Errorf("%s: %v (size %v)", f, err, st)
		}
	}
	raw, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s demoSummary
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	if !(s.Tuned.F < s.Pretrained.F) {
		t.Errorf("F did not decrease: pretrained %v, tuned %v", s.Pretrained.F, s.Tuned.F)
	}
	if s.InBandSteps != demoQuick.TuneSteps || s.InBand < 0 || s.InBand > 1 {
		t.Errorf("band fraction %v over %d steps, want a fraction over %d", s.InBand, s.InBandSteps, demoQuick.TuneSteps)
	}
	for _, acc := range []map[string]jnum{s.AccuracyPretrained, s.AccuracyTuned} {
		for _, task := range []string{"left", "right"} {
			if a, ok := acc[task]; !ok || !(a > 0.1 && a <= 1) {
				t.Errorf("accuracy of %s = %v (present %v), want a fraction above chance", task, a, ok)
			}
		}
	}
	if s.Reference["left"] >= float64(s.Pretrained.Losses["left"]) {
		t.Errorf("r_left %v does not favour left (pretrained %v)", s.Reference["left"], s.Pretrained.Losses["left"])
	}
	// A second run refuses before its banner, saying what to do.
	if again, err := runCLI(t, "demo", "--quick", "--out-dir", dir); err == nil || !strings.Contains(err.Error(), "--force") ||
		!strings.Contains(err.Error(), "--out-dir DIR") || strings.Contains(again, "paretonav demo:") {
		t.Errorf("second run without --force: err = %v, printed:\n%s", err, again)
	}
	runDemoNext(t, out)

	ortcheck.Require(t)
	x := importer.NewFloat32("x", []int{2, 1, 36, 36}, make([]float32, 2*36*36))
	outs, err := ortcheck.Run(filepath.Join(dir, "tuned.onnx"), map[string]*importer.Tensor{"x": x})
	if err != nil {
		t.Fatalf("ONNX Runtime on tuned.onnx: %v", err)
	}
	if got := outs["logp_left"]; got == nil || len(got.Shape) != 2 || got.Shape[1] != 10 {
		t.Errorf("ONNX Runtime's logp_left: %+v", got)
	}
}

// TestDemoCancelled checks that a cancelled demo stops with an error and
// writes no tuned model.
func TestDemoCancelled(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := demo(ctx, io.Discard, io.Discard, dir, demoQuick, 1, false); err == nil {
		t.Fatal("a cancelled demo succeeded")
	}
	if _, err := os.Stat(filepath.Join(dir, "tuned.onnx")); err == nil {
		t.Error("a cancelled demo wrote tuned.onnx")
	}
}

// runDemoNext runs the commands the demo's closing lines suggest, as
// printed (shell continuations joined, quotes dropped), in a fresh folder,
// with a small data set and two steps so that the test stays quick.
func runDemoNext(t *testing.T, out string) {
	t.Helper()
	i := strings.Index(out, "Next:")
	if i < 0 {
		t.Fatalf("the demo's output does not say what to do next:\n%s", out)
	}
	var cmds [][]string
	for _, line := range strings.Split(strings.ReplaceAll(out[i:], "\\\n", " "), "\n") {
		j := strings.Index(line, "paretonav ")
		if j < 0 || strings.Contains(line, "inspect") {
			continue // the first line names a command to look with, not to run
		}
		line = line[j:]
		var args []string
		for _, f := range strings.Fields(line)[1:] {
			args = append(args, strings.Trim(f, "'"))
		}
		cmds = append(cmds, args)
	}
	if len(cmds) != 2 || cmds[0][0] != "tune" || cmds[1][0] != "data" {
		t.Fatalf("want a tune and a data command after Next:, got %q", cmds)
	}
	t.Chdir(t.TempDir())
	if o, err := runCLI(t, append(cmds[1], "--limit", "64")...); err != nil {
		t.Fatalf("paretonav %s: %v\n%s", strings.Join(cmds[1], " "), err, o)
	}
	if o, err := runCLI(t, append(cmds[0], "--steps", "2", "--batch", "16", "--out", "tuned.onnx")...); err != nil {
		t.Fatalf("paretonav %s: %v\n%s", strings.Join(cmds[0], " "), err, o)
	}
	if _, err := os.Stat("tuned.onnx"); err != nil {
		t.Errorf("the suggested tune wrote no model: %v", err)
	}
}
