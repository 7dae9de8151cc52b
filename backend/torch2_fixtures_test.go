package backend

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/internal/testkit/ortcheck"
)

// torch2Dir holds the PyTorch 2.x exports of make_torch2_fixtures.py: each
// model through the TorchScript exporter, the dynamo exporter without and
// with its optimizer, at the default opset and at 21.
const torch2Dir = "testdata/torch2"

// torch2FixtureNames lists the fixtures of torch2Dir (every NAME.json).
func torch2FixtureNames(t *testing.T) []string {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(torch2Dir, "*.json"))
	if err != nil || len(matches) == 0 {
		t.Fatalf("no fixtures in %s (%v)", torch2Dir, err)
	}
	names := make([]string, len(matches))
	for i, p := range matches {
		names[i] = strings.TrimSuffix(filepath.Base(p), ".json")
	}
	return names
}

// TestTorch2Fixtures checks backend against PyTorch 2.x on every fixture
// of testdata/torch2 with TestTorchFixtures' tolerances: forward outputs,
// losses and per-task gradients of every parameter, in float32 and
// float64.
func TestTorch2Fixtures(t *testing.T) {
	for _, name := range torch2FixtureNames(t) {
		for _, f64 := range []bool{false, true} {
			dt := "float32"
			if f64 {
				dt = "float64"
			}
			t.Run(name+"/"+dt, func(t *testing.T) {
				if f64 && testing.Short() {
					t.Skip("float64 pass skipped in -short mode")
				}
				checkTorchFixture(t, loadDirFixture(t, torch2Dir, name), f64)
			})
		}
	}
}

// TestORTTorch2Fixtures runs every fixture of testdata/torch2 in ONNX
// Runtime now and compares its outputs with backend's.
func TestORTTorch2Fixtures(t *testing.T) {
	ortcheck.Require(t)
	for _, name := range torch2FixtureNames(t) {
		t.Run(name, func(t *testing.T) {
			f := loadDirFixture(t, torch2Dir, name).f
			compareWithORT(t, f.ModelPath, f.Tasks, map[string]*importer.Tensor{f.InputName: f.Input})
		})
	}
}
