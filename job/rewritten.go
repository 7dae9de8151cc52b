package job

import (
	"fmt"
	"sort"
	"strings"

	"github.com/paretonav/paretonav/importer"
)

// RewrittenWarning describes the initializers of m (the model at path)
// that PyTorch 2.x's dynamo exporter, through its onnxscript optimizer,
// turned into something other than a module parameter
// (importer.Model.OptimizerRewritten: BatchNorm fused into Conv, a bias
// table gathered by its index), or returns "" when there are none. tune
// and front print it once: such a model trains, but its tuned values map
// back onto no parameter of the PyTorch module.
func RewrittenWarning(path string, m *importer.Model) string {
	rw := m.OptimizerRewritten()
	if len(rw) == 0 {
		return ""
	}
	names := make([]string, 0, len(rw))
	for n := range rw {
		names = append(names, n)
	}
	sort.Strings(names)
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s: %d initializer(s) were rewritten by torch.onnx.export's optimizer (dynamo=True) and hold no parameter of the PyTorch module as it is; they are trained as they are, but will not load back into the module (export with dynamo=True, optimize=False, or dynamo=False, to keep the parameters):", path, len(names))
	const show = 8
	for i, n := range names {
		if i == show {
			fmt.Fprintf(&sb, "\n  ... and %d more", len(names)-show)
			break
		}
		fmt.Fprintf(&sb, "\n  %s: %s", n, rw[n])
	}
	return sb.String()
}
