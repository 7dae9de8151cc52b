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
}
