package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTuneNegativeLoss: nll reading a ReLU's output (nonnegative scores,
// not log-probabilities) gives a negative loss; tune refuses it before
// step 1, naming the task, the loss kind and the output, and writes no
// model.
func TestTuneNegativeLoss(t *testing.T) {
	dir := t.TempDir()
	model, data := tinyLeNet(t, dir, 4)
	out := filepath.Join(dir, "out.onnx")
	printed, err := runCLI(t, "tune", model, "--data", data, "--criterion", "left*right", "--steps", "2", "--out", out,
		"--task", "left:nll:fc1/relu:left", "--task", "right:nll:logp_right:right")
	if err == nil {
		t.Fatalf("tune accepted a negative loss:\n%s", printed)
	}
	for _, want := range []string{`task left (loss nll on output "fc1/relu")`, "is negative", "use the loss ce"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(printed, "step 1/") {
		t.Errorf("training started:\n%s", printed)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("%s written despite the error", out)
	}
}
