package job

import (
	"strings"
	"testing"

	"github.com/paretonav/paretonav/importer"
)

// TestRewrittenWarning checks the warning on a dynamo export whose
// optimizer fused BatchNorm into Conv, and its absence on the same model
// exported with optimize=False.
func TestRewrittenWarning(t *testing.T) {
	const dir = "../backend/testdata/torch2/"
	m, err := importer.Load(dir + "resnet_dynopt_op20.onnx")
	if err != nil {
		t.Fatal(err)
	}
	w := RewrittenWarning("r.onnx", m)
	for _, want := range []string{"r.onnx: 30 initializer(s)", "optimize=False", "body.conv1.0.weight:", "... and 22 more"} {
		if !strings.Contains(w, want) {
			t.Errorf("warning lacks %q:\n%s", want, w)
		}
	}
	m, err = importer.Load(dir + "resnet_dynamo_op20.onnx")
	if err != nil {
		t.Fatal(err)
	}
	if w := RewrittenWarning("r.onnx", m); w != "" {
		t.Errorf("warning on an unoptimized export: %s", w)
	}
	// The README's snippet under PyTorch 2.15 without dynamo=False, at
	// opset 17: no initializer metadata, only the Conv nodes' rule name.
	m, err = importer.Load("../importer/testdata/readme_torch2/fused/model.onnx")
	if err != nil {
		t.Fatal(err)
	}
	w = RewrittenWarning("m.onnx", m)
	for _, want := range []string{"m.onnx: 4 initializer(s)", "trunk.0.weight: written by the optimizer's FuseBatchNormIntoConv rule (a BatchNorm fused into this Conv)", "trunk.3.bias:"} {
		if !strings.Contains(w, want) {
			t.Errorf("warning lacks %q:\n%s", want, w)
		}
	}
	m, err = importer.Load("../importer/testdata/readme_torch2/fixed/model.onnx")
	if err != nil {
		t.Fatal(err)
	}
	if w := RewrittenWarning("m.onnx", m); w != "" {
		t.Errorf("warning on the README snippet's export: %s", w)
	}
}

// TestConstantsWarning: a parameter cached in eval mode before a dynamo
// export is stored as a constant (importer/testdata/cached_torch2); tune
// names it. Exports without constants get no warning.
func TestConstantsWarning(t *testing.T) {
	cases := []struct {
		file string
		want []string // empty: no warning
	}{
		{"../importer/testdata/cached_torch2/model.onnx", []string{"c.onnx: 1 float tensor(s)", "CONSTANT_TENSOR", "\n  lifted_tensor_0 [6]\n", "model.train() then model.eval()"}},
		{"../backend/testdata/torch2/resnet_dynamo_op20.onnx", nil},
		{"../backend/testdata/torch2/swin_dynamo_op20.onnx", nil},
		{"../importer/testdata/readme_torch2/fixed/model.onnx", nil},
	}
	for _, c := range cases {
		m, err := importer.Load(c.file)
		if err != nil {
			t.Fatal(err)
		}
		w := ConstantsWarning("c.onnx", m)
		if len(c.want) == 0 && w != "" {
			t.Errorf("%s: warning %q, want none", c.file, w)
		}
		for _, want := range c.want {
			if !strings.Contains(w, want) {
				t.Errorf("%s: warning lacks %q:\n%s", c.file, want, w)
			}
		}
	}
}
