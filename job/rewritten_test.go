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
