package nodetests

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/importer"
)

// requireCorpus loads the embedded corpus. It never skips: the corpus is
// part of the repository, so an error fails the test, in CI and outside.
func requireCorpus(t *testing.T) []*Case {
	t.Helper()
	cases, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	return cases
}

// TestLoadAll checks that every registered case is found and decodes into
// a model whose graph agrees with its tensors.
func TestLoadAll(t *testing.T) {
	cases := requireCorpus(t)
	if len(cases) != Registered {
		t.Errorf("loaded %d cases, onnx-go registers %d", len(cases), Registered)
	}
	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.Name] {
			t.Errorf("case %s appears twice", c.Name)
		}
		seen[c.Name] = true
		if c.OpType == "" || c.Model == nil || c.Model.Proto.Graph == nil {
			t.Errorf("%s: incomplete case", c.Name)
			continue
		}
		if len(c.ExpectedOutputs) == 0 {
			t.Errorf("%s: no expected output", c.Name)
		}
		for _, ts := range [][]*importer.Tensor{c.Inputs, c.ExpectedOutputs} {
			for _, x := range ts {
				if x.Name == "" {
					t.Errorf("%s: unnamed tensor", c.Name)
				}
				n := len(x.F32) + len(x.F64) + len(x.I64)
				if n != x.Len() {
					t.Errorf("%s: %s holds %d values for shape %v", c.Name, x.Name, n, x.Shape)
				}
			}
		}
		found := false
		for _, n := range c.Model.Proto.Graph.Node {
			if n.GetOpType() == c.OpType {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: model has no %s node", c.Name, c.OpType)
		}
	}
	invalid := 0
	for _, c := range cases {
		if c.Invalid != nil {
			invalid++
		}
	}
	t.Logf("%d cases, %d rejected by importer.Validate", len(cases), invalid)
	if seen["TestReshapeOneDim"] {
		t.Error("TestReshapeOneDim is not registered by onnx-go but was loaded")
	}
}

// TestKnownCases checks a few decoded cases value by value.
func TestKnownCases(t *testing.T) {
	cases := requireCorpus(t)
	byName := map[string]*Case{}
	for _, c := range cases {
		byName[c.Name] = c
	}
	tests := []struct {
		name      string
		op        string
		inputs    int
		inType    importer.DataType
		inShape   []int
		firstIn   float64
		outType   importer.DataType
		outShape  []int
		firstOut  float64
		inputName string
	}{
		{"TestAbs", "Abs", 1, importer.Float32, []int{3, 4, 5}, float64(float32(1.7640524)), importer.Float32, []int{3, 4, 5}, float64(float32(1.7640524)), "x"},
		{"TestAdd", "Add", 2, importer.Float32, []int{3, 4, 5}, 0, importer.Float32, []int{3, 4, 5}, 0, "x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := byName[tc.name]
			if !ok {
				t.Fatalf("case %s not loaded", tc.name)
			}
			if c.OpType != tc.op {
				t.Errorf("op %s, want %s", c.OpType, tc.op)
			}
			if len(c.Inputs) != tc.inputs {
				t.Fatalf("%d inputs, want %d", len(c.Inputs), tc.inputs)
			}
			in, out := c.Inputs[0], c.ExpectedOutputs[0]
			if in.Name != tc.inputName || in.Type != tc.inType || !slices.Equal(in.Shape, tc.inShape) {
				t.Errorf("input %s %v %v, want %s %v %v", in.Name, in.Type, in.Shape, tc.inputName, tc.inType, tc.inShape)
			}
			if out.Type != tc.outType || !slices.Equal(out.Shape, tc.outShape) {
				t.Errorf("output %v %v, want %v %v", out.Type, out.Shape, tc.outType, tc.outShape)
			}
			if tc.firstIn != 0 && in.Float64s()[0] != tc.firstIn {
				t.Errorf("input[0] = %v, want %v", in.Float64s()[0], tc.firstIn)
			}
			if tc.firstOut != 0 && out.Float64s()[0] != tc.firstOut {
				t.Errorf("output[0] = %v, want %v", out.Float64s()[0], tc.firstOut)
			}
		})
	}
	// Abs: every expected value is |input|.
	abs := byName["TestAbs"]
	in, out := abs.Inputs[0].F32, abs.ExpectedOutputs[0].F32
	for i := range in {
		if v := in[i]; (v < 0 && -v != out[i]) || (v >= 0 && v != out[i]) {
			t.Fatalf("TestAbs[%d]: |%v| != %v", i, v, out[i])
		}
	}
}

func TestCamelCase(t *testing.T) {
	tests := []struct{ dir, want string }{
		{"test_abs", "TestAbs"},
		{"test_averagepool_2d_default", "TestAveragepool2dDefault"},
		{"test_maxunpool_export_with_output_shape", "TestMaxunpoolExportWithOutputShape"},
		{"test_reduce_log_sum_exp_do_not_keepdims_random", "TestReduceLogSumExpDoNotKeepdimsRandom"},
	}
	for _, tc := range tests {
		if got := camelCase(tc.dir); got != tc.want {
			t.Errorf("camelCase(%q) = %q, want %q", tc.dir, got, tc.want)
		}
	}
}

// copyCase copies the embedded case folder name into dir/as.
func copyCase(t *testing.T, name, dir, as string) {
	t.Helper()
	err := fs.WalkDir(corpus, corpusRoot+"/"+name, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, as, filepath.FromSlash(strings.TrimPrefix(p, corpusRoot+"/"+name)))
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := fs.ReadFile(corpus, p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestLoadDir checks that a folder in the same layout reads as the
// embedded corpus does.
func TestLoadDir(t *testing.T) {
	dir := t.TempDir()
	copyCase(t, "test_abs", dir, "test_abs")
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("not a case"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var want *Case
	for _, c := range requireCorpus(t) {
		if c.Name == "TestAbs" {
			want = c
		}
	}
	if len(got) != 1 || want == nil {
		t.Fatalf("LoadDir read %d cases, want 1 (embedded TestAbs found: %v)", len(got), want != nil)
	}
	g := got[0]
	if g.Name != want.Name || g.OpType != want.OpType || g.Dir != "test_abs" || !slices.Equal(g.ModelBytes, want.ModelBytes) ||
		!slices.Equal(g.Inputs[0].F32, want.Inputs[0].F32) || !slices.Equal(g.ExpectedOutputs[0].F32, want.ExpectedOutputs[0].F32) {
		t.Errorf("LoadDir's TestAbs differs from the embedded one")
	}
}

// TestLoadDirErrors checks that a missing or malformed corpus is reported,
// naming the folder or file at fault.
func TestLoadDirErrors(t *testing.T) {
	write := func(path string, b []byte) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			p := filepath.Join(dir, filepath.FromSlash(path))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	remove := func(path string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, filepath.FromSlash(path))); err != nil {
				t.Fatal(err)
			}
		}
	}
	tests := []struct {
		name    string
		sub     string // folder given to LoadDir, under the temporary one
		abs     bool   // copy test_abs as test_x first
		mutate  func(t *testing.T, dir string)
		missing bool // the error must be ErrCorpusMissing
		want    string
	}{
		{name: "no folder", sub: "nope", missing: true, want: "nope is not a folder"},
		{name: "no case", mutate: write("README.md", []byte("x")), missing: true, want: "no case folder"},
		{name: "no model", mutate: write("test_x/test_data_set_0/input_0.pb", nil), want: "case test_x"},
		{name: "bad model", abs: true, mutate: write("test_x/model.onnx", []byte{0xff, 0xff}), want: "test_x/model.onnx"},
		{name: "no output", abs: true, mutate: remove("test_x/test_data_set_0/output_0.pb"), want: "no output_0.pb"},
		{name: "bad tensor", abs: true, mutate: write("test_x/test_data_set_0/input_0.pb", []byte{0x8, 0x3, 0x10, 0x1, 0x4a, 0x1, 0x0}), want: "test_x/test_data_set_0/input_0.pb"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.abs {
				copyCase(t, "test_abs", dir, "test_x")
			}
			if tc.mutate != nil {
				tc.mutate(t, dir)
			}
			_, err := LoadDir(filepath.Join(dir, tc.sub))
			if err == nil {
				t.Fatal("no error")
			}
			if errors.Is(err, ErrCorpusMissing) != tc.missing {
				t.Errorf("errors.Is(%v, ErrCorpusMissing) = %v, want %v", err, !tc.missing, tc.missing)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}
