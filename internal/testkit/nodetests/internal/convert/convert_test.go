package main

import (
	"fmt"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/internal/testkit/nodetests"
)

const header = "package onnxtest\n\nimport (\n\t\"github.com/owulveryck/onnx-go/backend/testbackend\"\n\t\"gorgonia.org/tensor\"\n)\n\n"

// TestParseFileErrors checks that malformed case files are reported with
// the file name, and a commented-out registration is not a case.
func TestParseFileErrors(t *testing.T) {
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

// goSource writes c as onnx-go's generator does: a registered
// constructor returning a TestCase literal with gorgonia tensors.
func goSource(c *nodetests.Case) string {
	var sb strings.Builder
	sb.WriteString(header)
	fmt.Fprintf(&sb, "func init() {\n\ttestbackend.Register(%q, %q, New%s)\n}\n\n", c.OpType, c.Name, c.Name)
	fmt.Fprintf(&sb, "func New%s() *testbackend.TestCase {\n\treturn &testbackend.TestCase{\n", c.Name)
	fmt.Fprintf(&sb, "\t\tOpType: %q,\n\t\tTitle: %q,\n\t\tModelB: %#v,\n", c.OpType, c.Name, c.ModelBytes)
	for _, group := range []struct {
		field string
		ts    []*importer.Tensor
	}{{"Input", c.Inputs}, {"ExpectedOutput", c.ExpectedOutputs}} {
		fmt.Fprintf(&sb, "\t\t%s: []tensor.Tensor{\n", group.field)
		for _, x := range group.ts {
			shape := strings.Trim(fmt.Sprint(x.Shape), "[]")
			fmt.Fprintf(&sb, "\t\t\ttensor.New(tensor.WithShape(%s), tensor.WithBacking(%#v)),\n", strings.ReplaceAll(shape, " ", ", "), x.F32)
		}
		sb.WriteString("\t\t},\n")
	}
	sb.WriteString("\t}\n}\n")
	return sb.String()
}

// TestRun converts one case written as onnx-go source, reads the result
// back with nodetests.LoadDir and checks it against the repository's copy
// of the same case; a second run replaces the folder with identical bytes.
func TestRun(t *testing.T) {
	cases, err := nodetests.Load()
	if err != nil {
		t.Fatal(err)
	}
	var abs *nodetests.Case
	for _, c := range cases {
		if c.Name == "TestAbs" {
			abs = c
		}
	}
	if abs == nil {
		t.Fatal("TestAbs not in the corpus")
	}
	src, out := t.TempDir(), filepath.Join(t.TempDir(), "node")
	for name, text := range map[string]string{
		"onnx_test_abs.go":      goSource(abs),
		"onnx_test_abs_test.go": "package onnxtest\n", // onnx-go's test files are skipped
		"doc.go":                "package onnxtest\n",
	} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var first []byte
	for run := 0; run < 2; run++ {
		if _, err := convert(src, out); err != nil {
			t.Fatal(err)
		}
		got, err := nodetests.LoadDir(out)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Name != "TestAbs" || got[0].Dir != "test_abs" || got[0].OpType != "Abs" {
			t.Fatalf("run %d: read back %d cases, first %+v", run, len(got), got[0])
		}
		if !slices.Equal(got[0].ModelBytes, abs.ModelBytes) || sameTensors(got[0].Inputs, abs.Inputs) != nil || sameTensors(got[0].ExpectedOutputs, abs.ExpectedOutputs) != nil {
			t.Errorf("run %d: converted TestAbs differs from the repository's", run)
		}
		b, err := os.ReadFile(filepath.Join(out, "test_abs", "test_data_set_0", "output_0.pb"))
		if err != nil {
			t.Fatal(err)
		}
		if run == 0 {
			first = b
		} else if !slices.Equal(b, first) {
			t.Error("a second run wrote different bytes")
		}
	}
	leftovers, err := filepath.Glob(filepath.Join(filepath.Dir(out), ".node.tmp*"))
	if err != nil || len(leftovers) != 0 {
		t.Errorf("temporary folders left behind: %v (%v)", leftovers, err)
	}
}

// TestRunErrors checks that bad flags and a bad source are reported and
// leave the output folder as it was.
func TestRunErrors(t *testing.T) {
	out := filepath.Join(t.TempDir(), "node")
	if err := os.MkdirAll(filepath.Join(out, "keep"), 0o755); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	tests := []struct {
		name, src, out, want string
	}{
		{"no flags", "", "", "-src and -out are required"},
		{"no source", filepath.Join(empty, "nope"), out, "go mod download"},
		{"no case", empty, out, "no registered case"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := convert(tc.src, tc.out)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one mentioning %q", err, tc.want)
			}
			if _, err := os.Stat(filepath.Join(out, "keep")); err != nil {
				t.Errorf("output folder changed: %v", err)
			}
		})
	}
}
