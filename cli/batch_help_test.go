package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/format/npz"
)

// TestBatchHelpExampleRuns: the jobs file in batch --help runs as printed
// on the model of "paretonav models lenet2" and arrays named as
// "paretonav data multimnist" names them (x, left, right), with its 200
// steps cut to 2.
func TestBatchHelpExampleRuns(t *testing.T) {
	desc := batchCommand.Description
	start := strings.Index(desc, "\n  defaults:")
	if start < 0 {
		t.Fatal("batch --help has no jobs file example")
	}
	var lines []string
	for _, l := range strings.Split(desc[start+1:], "\n") {
		if l != "" && !strings.HasPrefix(l, "  ") {
			break
		}
		lines = append(lines, strings.TrimPrefix(l, "  "))
	}
	example := strings.Join(lines, "\n")
	if !strings.Contains(example, "steps: 200") {
		t.Fatalf("the example no longer sets steps: 200:\n%s", example)
	}
	dir := t.TempDir()
	tinyLeNet(t, dir, 8) // lenet2.onnx and data.npz (x, left, right)
	for _, name := range []string{"train.npz", "val.npz"} {
		if err := npz.Write(filepath.Join(dir, name), tinyArrays(8)); err != nil {
			t.Fatal(err)
		}
	}
	jobs := filepath.Join(dir, "jobs.yaml")
	if err := os.WriteFile(jobs, []byte(strings.Replace(example, "steps: 200", "steps: 2", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if printed, err := runCLI(t, "batch", "run", jobs, "--out-dir", filepath.Join(dir, "runs")); err != nil {
		t.Fatalf("batch --help's example: %v\n%s", err, printed)
	}
}
