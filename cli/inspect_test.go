package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestInspect(t *testing.T) {
	model, _ := tinyLeNet(t, t.TempDir(), 1)
	out, err := runCLI(t, "inspect", model, "--json")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var info inspectJSON
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if info.Params != 31910 || info.TrainParams != 31910 || len(info.Trainable) != 10 {
		t.Errorf("parameters %d, trainable %d in %d initializers; want 31910, 31910, 10", info.Params, info.TrainParams, len(info.Trainable))
	}
	if len(info.Inputs) != 1 || strings.Join(info.Inputs[0].Shape, ",") != "N,1,36,36" {
		t.Errorf("inputs %+v, want x [N,1,36,36]", info.Inputs)
	}
	if info.Ops["Conv"] != 2 || info.Ops["Gemm"] != 3 || len(info.Unsupported) != 0 || info.Opsets["ai.onnx"] == 0 {
		t.Errorf("ops %v, unsupported %v, opsets %v", info.Ops, info.Unsupported, info.Opsets)
	}

	out, err = runCLI(t, "inspect", model, "--freeze", "conv*", "--freeze", "fc1.*")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"trainable: 4 initializers, 1020 parameters", "head_left.weight", "x                    float [N,1,36,36]", "all ops supported"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "conv1.weight") {
		t.Errorf("frozen conv1.weight listed as trainable:\n%s", out)
	}
}

// TestInspectWarnings: inspect warns as tune does before its first step,
// in text and in --json: a parameter cached before a dynamo export is a
// constant, and an optimized export's fused BatchNorm will not load back.
func TestInspectWarnings(t *testing.T) {
	cases := []struct {
		file string
		want []string
	}{
		{"../importer/testdata/cached_torch2/model.onnx", []string{"stored as constants (CONSTANT_TENSOR) are not trained", "lifted_tensor_0 [6]"}},
		{"../backend/testdata/torch2/resnet_dynopt_op20.onnx", []string{"rewritten by torch.onnx.export's optimizer"}},
		{"../backend/testdata/torch2/resnet_dynamo_op20.onnx", nil},
	}
	for _, c := range cases {
		out, err := runCLI(t, "inspect", c.file)
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		js, err := runCLI(t, "inspect", c.file, "--json")
		if err != nil {
			t.Fatalf("%v\n%s", err, js)
		}
		var info inspectJSON
		if err := json.Unmarshal([]byte(js), &info); err != nil {
			t.Fatalf("%v\n%s", err, js)
		}
		if n := min(len(c.want), 1); len(info.Warnings) != n {
			t.Errorf("%s: warnings %q, want %d", c.file, info.Warnings, n)
		}
		if len(c.want) == 0 && (len(info.Warnings) != 0 || strings.Contains(out, "warning:")) {
			t.Errorf("%s: warned on a plain export:\n%s", c.file, out)
		}
		for _, want := range c.want {
			if !strings.Contains(out, "warning: ") || !strings.Contains(out, want) || !strings.Contains(strings.Join(info.Warnings, "\n"), want) {
				t.Errorf("%s: text or JSON lacks the warning %q:\n%s\n%s", c.file, want, out, js)
			}
		}
	}
}
