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
	"github.com/paretonav/paretonav/internal/ortcheck"
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
