package importer

import (
	"sort"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/importer/onnxpb"
)

// What PyTorch 2.x's dynamo exporter says about each initializer. It
// writes a value_info entry for every initializer with metadata_props
// (ValueInfoProto field 4, IR 10; read from the unknown fields of our
// IR-8 bindings):
//
//   - pkg.torch.export.graph_signature.InputSpec.kind: PARAMETER for the
//     module's parameters, BUFFER for its buffers (BatchNorm statistics,
//     attention masks, index tables), CONSTANT_TENSOR for lifted constants;
//   - pkg.onnxscript.optimizer.folded_from: the values the onnxscript
//     optimizer folded into a new initializer (a Linear weight transposed
//     for MatMul, a layer scale reshaped, a scalar computed from
//     constants), as a Python list literal; a folded parameter is
//     usually gone from the file, named there by its state_dict key.
//
// A file without these entries (the TorchScript exporter's, ours, any
// other) has no kinds, and every float initializer read as data stays
// trainable.

// Metadata keys of the dynamo exporter.
const (
	torchKindKey   = "pkg.torch.export.graph_signature.InputSpec.kind"
	foldedFromKey  = "pkg.onnxscript.optimizer.folded_from"
	torchParameter = "PARAMETER"
	torchConstant  = "CONSTANT_TENSOR"
	fieldVIMeta    = protowire.Number(4) // ValueInfoProto.metadata_props
	// The onnxscript rewriter's rule that made a node (NodeProto
	// metadata_props, field 9, IR 10): FuseBatchNormIntoConv and its
	// ConvTranspose and Gemm kin fuse a BatchNorm into the node, whose
	// weight and bias initializers then hold the fused values. The node
	// keeps it where a file converted down to an older opset loses the
	// initializers' metadata (torch.onnx.export(dynamo=True) at
	// opset_version < 18).
	rewriteRuleKey  = "pkg.onnxscript.rewriter.rule_name"
	fuseBatchNormPf = "FuseBatchNormInto"
	fieldNodeMeta   = protowire.Number(9)
)

// graphValueMeta returns the metadata_props of every graph input and
// value_info of g that has some, by name, and whether any carries the
// dynamo exporter's InputSpec.kind (the file is a dynamo export).
func graphValueMeta(g *onnxpb.GraphProto) (map[string]map[string]string, bool) {
	meta := map[string]map[string]string{}
	dynamo := false
	for _, vis := range [][]*onnxpb.ValueInfoProto{g.Input, g.ValueInfo} {
		for _, vi := range vis {
			if md := valueInfoMeta(vi); md != nil {
				meta[vi.GetName()] = md
				_, k := md[torchKindKey]
				dynamo = dynamo || k
			}
		}
	}
	return meta, dynamo
}

// floatTensor reports whether t holds floating-point values.
func floatTensor(t *onnxpb.TensorProto) bool {
	switch DataType(t.GetDataType()) {
	case Float32, Float64, Float16, onnxpb.TensorProto_BFLOAT16:
		return true
	}
	return false
}

// valueInfoMeta returns the metadata_props of a ValueInfoProto.
func valueInfoMeta(vi *onnxpb.ValueInfoProto) map[string]string {
	return metadataProps(vi, fieldVIMeta)
}

// metadataProps returns the metadata_props (field num, read from the
// unknown fields of our IR-8 bindings) of a ValueInfoProto or NodeProto.
func metadataProps(m proto.Message, num protowire.Number) map[string]string {
	var out map[string]string
	for _, b := range unknownFields(m, num) {
		var k, v string
		for len(b) > 0 {
			num, typ, n := protowire.ConsumeTag(b)
			if n < 0 {
				break
			}
			b = b[n:]
			if typ != protowire.BytesType {
				n = protowire.ConsumeFieldValue(num, typ, b)
				if n < 0 {
					break
				}
				b = b[n:]
				continue
			}
			s, n := protowire.ConsumeBytes(b)
			if n < 0 {
				break
			}
			b = b[n:]
			switch num {
			case 1:
				k = string(s)
			case 2:
				v = string(s)
			}
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = v
	}
	return out
}

// NotParameters returns the initializers that PyTorch's dynamo exporter
// marked as something other than a module parameter, each with the
// reason: a buffer or lifted constant (InputSpec.kind other than
// PARAMETER), or a value the onnxscript optimizer folded from no
// parameter (only constants and buffers). Initializers without such
// metadata are not listed. Training must leave the listed ones alone: an
// attention mask or a folded scale factor is not a weight.
func (m *Model) NotParameters() map[string]string {
	g := m.Proto.GetGraph()
	if g == nil {
		return nil
	}
	all, _ := graphValueMeta(g)
	meta := map[string]map[string]string{}
	dynamo := false
	for _, t := range g.Initializer {
		if md, ok := all[t.GetName()]; ok {
			meta[t.GetName()] = md
			_, k := md[torchKindKey]
			dynamo = dynamo || k
		}
	}
	out := map[string]string{}
	if dynamo {
		// A scalar without metadata is a Python number of the forward
		// (Swin's attention scale, q * 0.25) that the optimizer lifted
		// into an initializer: module parameters carry InputSpec.kind,
		// and what the optimizer computes from them is no scalar.
		for _, t := range g.Initializer {
			if _, ok := meta[t.GetName()]; !ok && len(t.GetDims()) == 0 {
				out[t.GetName()] = "a scalar the dynamo exporter lifted from the forward code, without metadata"
			}
		}
	}
	for name, md := range meta {
		if kind, ok := md[torchKindKey]; ok && kind != torchParameter {
			out[name] = "the dynamo exporter marks it " + kind + ", not PARAMETER"
			continue
		}
		from, ok := md[foldedFromKey]
		if !ok {
			continue
		}
		srcs := parseNameList(from)
		param := false
		for _, s := range srcs {
			if isParameterSource(s, meta) {
				param = true
				break
			}
		}
		if !param {
			out[name] = "the onnxscript optimizer folded it from no parameter (" + strings.Join(srcs, ", ") + ")"
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// isParameterSource reports whether a folded initializer's source s was a
// module parameter: an initializer marked PARAMETER, or one the optimizer
// removed after folding it (no longer in the file) named by a state_dict
// key, which holds a dot (the exporter's own values, val_12 or mul_3,
// never do). A parameter of the root module itself (no dot) folded away
// is missed: its folded copy is then left untrained.
func isParameterSource(s string, meta map[string]map[string]string) bool {
	if md, ok := meta[s]; ok {
		return md[torchKindKey] == torchParameter
	}
	return strings.Contains(s, ".")
}

// parseNameList reads a Python list literal of strings ("['a', 'b']"),
// sorted.
func parseNameList(s string) []string {
	s = strings.TrimSpace(s)
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	var out []string
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if len(p) >= 2 && (p[0] == '\'' || p[0] == '"') && p[len(p)-1] == p[0] {
			p = p[1 : len(p)-1]
		}
		if p != "" {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// OptimizerRewritten returns the float initializers of a PyTorch 2.x
// dynamo export (a file whose initializers carry InputSpec.kind) that the
// onnxscript optimizer rewrote into something other than a module
// parameter, each with the reason: a Conv's weight or bias with no
// metadata at all (BatchNorm fused into the Conv before it keeps the
// Conv weight's name but not its value, and adds a new bias or rewrites
// the Conv's own), and those folded from a
// parameter together with another module tensor (Swin's relative position
// bias table gathered by its index; a parameter only reshaped or
// transposed is not listed). They are trainable like any weight, but
// training them trains no parameter of the module, and they do not map
// back onto its state_dict; torch.onnx.export(..., dynamo=True,
// optimize=False) keeps the parameters. In any file, the float
// initializers of a node the rewriter fused a BatchNorm into (its
// metadata's rule_name) are listed too: all that says so in a dynamo
// export converted down to opset 17 or older. nil for any other file.
func (m *Model) OptimizerRewritten() map[string]string {
	g := m.Proto.GetGraph()
	if g == nil {
		return nil
	}
	float := map[string]bool{}
	for _, t := range g.Initializer {
		if floatTensor(t) {
			float[t.GetName()] = true
		}
	}
	meta, dynamo := graphValueMeta(g)
	// What a fused BatchNorm leaves: a Conv's weight or bias.
	convParam := map[string]bool{}
	for _, n := range g.Node {
		if n.GetOpType() == "Conv" && normDomain(n.GetDomain()) == "" {
			for i := 1; i < len(n.Input) && i <= 2; i++ {
				convParam[n.Input[i]] = true
			}
		}
	}
	out := map[string]string{}
	for _, n := range g.Node {
		rule := metadataProps(n, fieldNodeMeta)[rewriteRuleKey]
		if !strings.HasPrefix(rule, fuseBatchNormPf) {
			continue
		}
		for _, in := range n.Input {
			if float[in] {
				out[in] = "written by the optimizer's " + rule + " rule (a BatchNorm fused into this " + n.GetOpType() + ")"
			}
		}
	}
	for _, t := range g.Initializer {
		name := t.GetName()
		if _, done := out[name]; !dynamo || done || !float[name] {
			continue
		}
		md := meta[name]
		_, hasKind := md[torchKindKey]
		from, folded := md[foldedFromKey]
		switch {
		// A scalar is a lifted constant (NotParameters); Resize's scales
		// and other tensors read by no Conv are constants of the forward.
		case !hasKind && !folded && len(t.GetDims()) > 0 && convParam[name]:
			out[name] = "written by the optimizer without PyTorch's metadata (a BatchNorm fused into a Conv)"
		case folded:
			// A parameter reshaped or transposed is folded from it and
			// shape constants (val_N); one combined with another module
			// tensor (a buffer, a second parameter) is something else.
			var params, tensors []string
			for _, s := range parseNameList(from) {
				if isParameterSource(s, meta) {
					params = append(params, s)
				}
				if strings.Contains(s, ".") || meta[s][torchKindKey] != "" {
					tensors = append(tensors, s)
				}
			}
			if len(params) > 0 && len(tensors) > 1 {
				out[name] = "folded from " + strings.Join(tensors, ", ") + " (and constants) into a new tensor"
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// LiftedConstants returns the float initializers of at least one element
// that PyTorch's dynamo exporter marks CONSTANT_TENSOR, in graph order: a
// tensor the forward code creates, or a copy of a parameter (or of a
// tensor computed from one) that the module cached before the export, as
// timm's LeViT and EfficientFormerV2 cache attention_biases[:, idx] in
// eval mode. Such a parameter is not in the file, and nothing trains it;
// only the module's author can tell the two apart, so tune names them.
func (m *Model) LiftedConstants() []LiftedConstant {
	g := m.Proto.GetGraph()
	if g == nil {
		return nil
	}
	meta, _ := graphValueMeta(g)
	var out []LiftedConstant
	for _, t := range g.Initializer {
		if meta[t.GetName()][torchKindKey] == torchConstant && len(t.GetDims()) > 0 && floatTensor(t) {
			out = append(out, LiftedConstant{t.GetName(), t.GetDims()})
		}
	}
	return out
}

// LiftedConstant is an initializer the dynamo exporter marks
// CONSTANT_TENSOR: its name and shape.
type LiftedConstant struct {
	Name string
	Dims []int64
}
