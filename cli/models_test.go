package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/models"
)

// runCLI runs the application on args and returns what it printed.
func runCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	app := NewApp()
	app.Writer = &out
	app.ErrWriter = &out
	err := app.Run(append([]string{"paretonav"}, args...))
	return out.String(), err
}

func TestModelsCommand(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name       string
		args       []string
		wantParams int64
		wantOut    []string
	}{
		{"lenet2", []string{"models", "lenet2", "--seed", "3"}, 31910,
			[]string{"31910 parameters", "inputs  x [N,1,36,36]", "logp_left [N,10], logp_right [N,10]"}},
		{"mtan small", []string{"models", "mtan", "--width", "4", "--size", "64x96", "--seed", "2"},
			models.MTANParams(models.MTANConfig{Width: 4}),
			[]string{"mtan (width 4, 64x96, 13 classes)", "x [N,3,64,96]", "seg_logp [N,13,64,96], depth [N,1,64,96], normal [N,3,64,96]"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".onnx")
			out, err := runCLI(t, append(tc.args, "--out", path)...)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			m, err := importer.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if got := models.CountParams(m.Proto); got != tc.wantParams {
				t.Errorf("%s has %d parameters, want %d", path, got, tc.wantParams)
			}
			// Same arguments again: refused without --force, accepted with it.
			if out, err := runCLI(t, append(tc.args, "--out", path)...); err == nil || !strings.Contains(err.Error(), "--force") {
				t.Errorf("overwrite without --force: err = %v\n%s", err, out)
			}
			if out, err := runCLI(t, append(tc.args, "--out", path, "--force")...); err != nil {
				t.Errorf("overwrite with --force: %v\n%s", err, out)
			}
		})
	}
}

func TestModelsCommandJSONAndSeed(t *testing.T) {
	dir := t.TempDir()
	a, b, c := filepath.Join(dir, "a.onnx"), filepath.Join(dir, "b.onnx"), filepath.Join(dir, "c.onnx")
	out, err := runCLI(t, "models", "lenet2", "--out", a, "--seed", "5", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var s modelSummary
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("--json printed %q: %v", out, err)
	}
	if s.Params != 31910 || s.Seed != 5 || s.Out != a || s.Nodes != 13 || s.Bytes <= 4*31910 {
		t.Errorf("summary %+v", s)
	}
	for _, args := range [][]string{{"--out", b, "--seed", "5"}, {"--out", c, "--seed", "6"}} {
		if _, err := runCLI(t, append([]string{"models", "lenet2"}, args...)...); err != nil {
			t.Fatal(err)
		}
	}
	ra, _ := os.ReadFile(a)
	rb, _ := os.ReadFile(b)
	rc, _ := os.ReadFile(c)
	if !bytes.Equal(ra, rb) || bytes.Equal(ra, rc) {
		t.Error("same seed should give the same file and another seed another")
	}
}

func TestModelsCommandErrors(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "m.onnx")
	tests := []struct {
		args    []string
		wantErr string
	}{
		{[]string{"models", "mtan", "--out", out, "--size", "100x96"}, "multiples of 32"},
		{[]string{"models", "mtan", "--out", out, "--size", "big"}, `--size "big"`},
		{[]string{"models", "mtan", "--out", out, "--width", "0"}, "--width 0"},
		{[]string{"models", "mtan", "--out", out, "--classes", "1"}, "--classes 1"},
		{[]string{"models", "lenet2"}, "out"},
		{[]string{"models", "lenet2", "--out", filepath.Join(dir, "no", "such", "m.onnx")}, "no/such"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args[1:], " "), func(t *testing.T) {
			_, err := runCLI(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("err = %v, want it to mention %q", err, tc.wantErr)
			}
		})
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a failed command left %s behind", out)
	}
}

func TestModelsCommandConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "mtan.yaml")
	if err := os.WriteFile(cfg, []byte("width: 2\nsize: 32x64\nseed: 9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "m.onnx")
	out, err := runCLI(t, "models", "mtan", "--config", cfg, "--out", path, "--width", "3")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// --width on the command line wins over the file; --size comes from it.
	if !strings.Contains(out, "mtan (width 3, 32x64, 13 classes)") {
		t.Errorf("output %q does not show width 3 and size 32x64", out)
	}
}
