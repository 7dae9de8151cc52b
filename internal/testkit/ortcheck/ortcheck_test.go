package ortcheck

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/importer"
)

const tinyModel = "testdata/tiny.onnx"

func tinyInputs() map[string]*importer.Tensor {
	return map[string]*importer.Tensor{
		"x": importer.NewFloat32("x", []int{2, 2}, []float32{1, 2, -3, 0.5}),
		"d": {Name: "d", Type: importer.Float64, Shape: []int{3}, F64: []float64{1.5, -2, 0.1}},
		"k": importer.NewInt64("k", []int{2}, []int64{1, -20}),
	}
}

// TestRunTiny runs tiny.onnx (see testdata/make_tiny.py) and compares
// every output with values computed by hand.
func TestRunTiny(t *testing.T) {
	Require(t)
	out, err := Run(tinyModel, tinyInputs())
	if err != nil {
		t.Fatal(err)
	}
	d := 0.1
	tests := []struct {
		name  string
		typ   importer.DataType
		shape []int
		want  []float64
	}{
		// x@W+b = [[5.25,-0.5,-2.25],[-1.75,3.5,-2.75]]
		{"y", importer.Float32, []int{2, 3}, []float64{5.25, 0, 0, 0, 3.5, 0}},
		{"amax", importer.Int64, []int{2}, []float64{0, 1}},
		{"d2", importer.Float64, []int{3}, []float64{2.75, 4.5, d*d + 0.5}},
		{"k1", importer.Int64, []int{2}, []float64{11, -10}},
	}
	if len(out) != len(tests) {
		t.Errorf("got %d outputs, want %d", len(out), len(tests))
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := out[tc.name]
			if !ok {
				t.Fatalf("output %q missing", tc.name)
			}
			if got.Type != tc.typ {
				t.Errorf("type %v, want %v", got.Type, tc.typ)
			}
			if !slices.Equal(got.Shape, tc.shape) {
				t.Errorf("shape %v, want %v", got.Shape, tc.shape)
			}
			vals := got.Float64s()
			if len(vals) != len(tc.want) {
				t.Fatalf("%d values, want %d", len(vals), len(tc.want))
			}
			for i := range vals {
				if vals[i] != tc.want[i] { // exact: every value is representable
					t.Errorf("[%d] = %v, want %v", i, vals[i], tc.want[i])
				}
			}
		})
	}
}

// TestRunBytes checks that a model held in memory gives the same result.
func TestRunBytes(t *testing.T) {
	Require(t)
	b, err := os.ReadFile(tinyModel)
	if err != nil {
		t.Fatal(err)
	}
	out, err := RunBytes(b, tinyInputs())
	if err != nil {
		t.Fatal(err)
	}
	if got := out["k1"].I64; len(got) != 2 || got[0] != 11 || got[1] != -10 {
		t.Errorf("k1 = %v, want [11 -10]", got)
	}
}

// TestRunErrors checks that failures come back as errors carrying ORT's
// message or ours.
func TestRunErrors(t *testing.T) {
	Require(t)
	garbage := filepath.Join(t.TempDir(), "garbage.onnx")
	if err := os.WriteFile(garbage, []byte("not a model"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := tinyInputs()
	delete(missing, "k")
	wrongType := tinyInputs()
	wrongType["k"] = importer.NewFloat32("k", []int{2}, []float32{1, 2})
	badLen := tinyInputs()
	badLen["x"] = &importer.Tensor{Name: "x", Type: importer.Float32, Shape: []int{2, 2}, F32: []float32{1}}
	unsupported := tinyInputs()
	unsupported["x"] = &importer.Tensor{Name: "x", Type: importer.Float16, Shape: []int{1}, F32: []float32{1}}

	tests := []struct {
		name   string
		model  string
		inputs map[string]*importer.Tensor
		want   string // substring of the error
	}{
		{"no such file", "testdata/nope.onnx", tinyInputs(), "nope.onnx"},
		{"not a model", garbage, tinyInputs(), "loading"},
		{"missing input", tinyModel, missing, "k"},
		{"wrong type", tinyModel, wrongType, "running"},
		{"bad length", tinyModel, badLen, "1 float32 values"},
		{"unsupported type", tinyModel, unsupported, "not supported"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Run(tc.model, tc.inputs)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

// TestProbeMissingDir checks that a wrong PARETONAV_ORT_DIR gives a reason
// naming the folder.
func TestProbeMissingDir(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(EnvDir, dir)
	s := probe()
	if s.reason == "" {
		t.Fatal("probe found onnxruntime-node in an empty folder")
	}
	if !strings.Contains(s.reason, dir) {
		t.Errorf("reason %q does not name %s", s.reason, dir)
	}
}

func TestRepoRoot(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Errorf("repoRoot() = %s holds no go.mod", root)
	}
}
