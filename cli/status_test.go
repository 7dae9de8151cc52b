package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestStatusInWords: tune's and front's output says why a run stopped in
// words and names the flag that set its length, never a status's Go name.
func TestStatusInWords(t *testing.T) {
	dir := t.TempDir()
	model, data := tinyLeNet(t, dir, 8)
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"tune --steps", append([]string{"tune", model, "--data", data, "--criterion", "left+right", "--steps", "2", "--batch", "4",
			"--out", filepath.Join(dir, "a.onnx")}, lenetTasks...), []string{"stopped after 2 steps (--steps)"}},
		{"tune --epochs", append([]string{"tune", model, "--data", data, "--criterion", "left+right", "--epochs", "1", "--steps", "0", "--batch", "4",
			"--out", filepath.Join(dir, "b.onnx")}, lenetTasks...), []string{"stopped after 2 steps (--epochs 1)"}},
		{"front", append([]string{"front", model, "--data", data, "--models", "2", "--steps", "2", "--batch", "4",
			"--out-dir", filepath.Join(dir, "front")}, lenetTasks...), []string{"stopped after 2 steps (--steps)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runCLI(t, tc.args...)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, name := range []string{"StepLimit", "NotTerminated"} {
				if strings.Contains(out, name) {
					t.Errorf("output says %q:\n%s", name, out)
				}
			}
		})
	}
}
