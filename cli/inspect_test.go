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
