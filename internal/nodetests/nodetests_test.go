package nodetests

import (
	"errors"
	"go/token"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/importer"
)

// requireCorpus loads the corpus, skipping the test when it is absent
// outside CI.
func requireCorpus(t *testing.T) []*Case {
	t.Helper()
	cases, err := Load()
	if errors.Is(err, ErrCorpusMissing) && os.Getenv("CI") == "" {
		t.Skip(err)
	}
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

// TestParseFileErrors checks that malformed case files are reported with
// the file name, and a commented-out registration is not a case.
func TestParseFileErrors(t *testing.T) {
	const header = "package onnxtest\n\nimport (\n\t\"github.com/owulveryck/onnx-go/backend/testbackend\"\n\t\"gorgonia.org/tensor\"\n)\n\n"
	tests := []struct {
		name string
		src  string
		want string // "" for a file that is no case
	}{
		{"unregistered", header + "func init() {\n\t// testbackend.Register(\"A\", \"TestA\", NewTestA)\n}\n", ""},
		{"no init", header + "func NewTestA() {}\n", "no init"},
		{"no constructor", header + "func init() { testbackend.Register(\"A\", \"TestA\", NewTestA) }\n", "constructor NewTestA not found"},
		{"bad byte", header + "func init() { testbackend.Register(\"A\", \"TestA\", NewTestA) }\nfunc NewTestA() *testbackend.TestCase { return &testbackend.TestCase{OpType: \"A\", Title: \"TestA\", ModelB: []byte{0x100}} }\n", "ModelB"},
		{"bad backing", header + "func init() { testbackend.Register(\"A\", \"TestA\", NewTestA) }\nfunc NewTestA() *testbackend.TestCase { return &testbackend.TestCase{OpType: \"A\", Title: \"TestA\", ModelB: []byte{0x8}, Input: []tensor.Tensor{tensor.New(tensor.WithBacking([]string{\"a\"}))}} }\n", "unsupported backing type"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "onnx_test_x.go")
			if err := os.WriteFile(path, []byte(tc.src), 0o600); err != nil {
				t.Fatal(err)
			}
			c, err := parseFile(token.NewFileSet(), path)
			if tc.want == "" {
				if c != nil || err != nil {
					t.Fatalf("got case %v, error %v; want neither", c, err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "onnx_test_x.go") {
				t.Errorf("error %q should name the file and mention %q", err, tc.want)
			}
		})
	}
}

// TestOnnxGoNotLinked guards against linking onnx-go, whose protobuf
// registrations would come with it.
func TestOnnxGoNotLinked(t *testing.T) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		t.Skip("no build information")
	}
	for _, d := range bi.Deps {
		if d.Path == Module {
			t.Errorf("%s is linked into the test binary", Module)
		}
	}
}

func TestDirMissing(t *testing.T) {
	t.Setenv(EnvDir, filepath.Join(t.TempDir(), "nope"))
	if _, err := Dir(); !errors.Is(err, ErrCorpusMissing) {
		t.Errorf("Dir() error %v, want ErrCorpusMissing", err)
	}
}
