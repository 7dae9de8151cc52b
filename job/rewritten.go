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
	lines := make([]string, len(names))
	for i, n := range names {
		lines[i] = n + ": " + rw[n]
	}
	return fmt.Sprintf("%s: %d initializer(s) were rewritten by torch.onnx.export's optimizer (dynamo=True) and hold no parameter of the PyTorch module as it is; they are trained as they are, but will not load back into the module (export with dynamo=True, optimize=False, or dynamo=False, to keep the parameters):", path, len(names)) +
		warningList(lines)
}

// ConstantsWarning names the float tensors that PyTorch's dynamo exporter
// stored in m (the model at path) as constants (importer.Model.
// LiftedConstants), which nothing trains, or returns "" when there are
// none. tune and front print it once, before the first step: a module that
// cached a tensor computed from a parameter before the export (timm's
// LeViT and EfficientFormerV2 in eval mode) left that parameter out of the
// file, and only the module's author can tell such a copy from a constant
// of the forward code.
func ConstantsWarning(path string, m *importer.Model) string {
	consts := m.LiftedConstants()
	if len(consts) == 0 {
		return ""
	}
	lines := make([]string, len(consts))
	for i, c := range consts {
		lines[i] = fmt.Sprintf("%s %v", c.Name, c.Dims)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s: %d float tensor(s) that the dynamo exporter stored as constants (CONSTANT_TENSOR) are not trained:", path, len(consts))
	sb.WriteString(warningList(lines))
	sb.WriteString("\nA constant is a tensor the forward code creates, or a copy of a parameter (or of a tensor computed from one) that the module cached before the export, as timm's LeViT and EfficientFormerV2 cache their attention biases in eval mode; that parameter is then not in the file and is never trained. To train it, clear the cache before exporting (model.train() then model.eval(), with no forward in between) or export with dynamo=False")
	return sb.String()
}

// warningList writes lines one per line, indented, the first eight and
// then how many more.
func warningList(lines []string) string {
	const show = 8
	var sb strings.Builder
	for i, l := range lines {
		if i == show {
			fmt.Fprintf(&sb, "\n  ... and %d more", len(lines)-show)
			break
		}
		sb.WriteString("\n  " + l)
	}
	return sb.String()
}
