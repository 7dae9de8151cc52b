package backend

import (
	"fmt"
	"sort"

	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// lowerFunc lowers one ONNX node. in holds one value per node input, nil
// for an omitted optional input (empty name). It returns one value per
// node output that is used (extra trailing outputs may be omitted).
// Lowering functions may return constants (a value with c set) when the
// result is known at build time (Shape of a node of known shape, say).
type lowerFunc func(b *builder, n *onnxpb.NodeProto, in []*value) ([]*value, error)

type opEntry struct {
	minOpset int64
	lower    lowerFunc
}

// registry maps an ONNX op type (default domain) to its lowerings, sorted by
// minOpset. The lowering used for a model of opset v is the one with the
// largest minOpset <= v.
var registry = map[string][]opEntry{}

// register adds a lowering of opType valid from opset minOpset on. Op
// family files call it from init. Registering the same (opType, minOpset)
// twice panics: it is a programming error.
func register(opType string, minOpset int64, f lowerFunc) {
	for _, e := range registry[opType] {
		if e.minOpset == minOpset {
			panic(fmt.Sprintf("backend: %s registered twice for opset %d", opType, minOpset))
		}
	}
	es := append(registry[opType], opEntry{minOpset, f})
	sort.Slice(es, func(i, j int) bool { return es[i].minOpset < es[j].minOpset })
	registry[opType] = es
}

// fusedLowerings maps the op type of a fused node (package rewrite) to
// its lowering, which lowers the node the fused one replaced where the
// fusion does not apply (builder.lowerFallback).
var fusedLowerings = map[string]lowerFunc{}

// registerFused adds the lowering of the fused op type op. Op family
// files call it from init.
func registerFused(op string, f lowerFunc) {
	if fusedLowerings[op] != nil {
		panic(fmt.Sprintf("backend: fused %s registered twice", op))
	}
	fusedLowerings[op] = f
}

// lookup returns the lowering of opType for opset, or nil.
func lookup(opType string, opset int64) lowerFunc {
	var f lowerFunc
	for _, e := range registry[opType] {
		if e.minOpset <= opset {
			f = e.lower
		}
	}
	return f
}

// Supported reports whether backend can lower opType (default ONNX domain)
// in a model importing the given opset. Ops whose inputs are all known when
// the graph is built (shape arithmetic) may be folded even when not
// supported here; Open reports what a given model actually needs.
func Supported(opType string, opset int64) bool { return lookup(opType, opset) != nil }

// SupportedOps returns the op types backend lowers, sorted.
func SupportedOps() []string {
	out := make([]string, 0, len(registry))
	for k := range registry {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// value is what flows along an ONNX edge while the graph is built: either
// a Gorgonia node (computed at run time) or a constant tensor known at build
// time, or a tensor sequence (sequence.go). shape is always concrete (nil
// for a sequence).
type value struct {
	n     gnode            // run-time value; nil for a constant
	c     *importer.Tensor // build-time constant; nil for a node
	shape []int
	seq   *sequence // a tensor sequence; n and c are nil
}

// isConst reports whether v is known at build time.
func (v *value) isConst() bool { return v != nil && v.c != nil }

// constValue wraps a tensor as a build-time value.
func constValue(t *importer.Tensor) *value {
	return &value{c: t, shape: append([]int{}, t.Shape...)}
}

// nodeValue wraps a Gorgonia node as a run-time value.
func nodeValue(n gnode) *value {
	return &value{n: n, shape: append([]int{}, n.Shape()...)}
}

// nodeErr formats an error about node n.
func nodeErr(n *onnxpb.NodeProto, format string, args ...any) error {
	return fmt.Errorf("node %q (%s): %s", n.GetName(), n.GetOpType(), fmt.Sprintf(format, args...))
}

// attr returns n's attribute name, or nil.
func attr(n *onnxpb.NodeProto, name string) *onnxpb.AttributeProto {
	for _, a := range n.Attribute {
		if a.GetName() == name {
			return a
		}
	}
	return nil
}

// hasAttr reports whether n carries attribute name.
func hasAttr(n *onnxpb.NodeProto, name string) bool { return attr(n, name) != nil }

// attrInt returns the integer attribute name of n, or def if absent.
func attrInt(n *onnxpb.NodeProto, name string, def int64) (int64, error) {
	a := attr(n, name)
	if a == nil {
		return def, nil
	}
	if a.GetType() != onnxpb.AttributeProto_INT {
		return 0, nodeErr(n, "attribute %q: expected an int, got %v", name, a.GetType())
	}
	return a.GetI(), nil
}

// attrFloat returns the float attribute name of n, or def if absent.
func attrFloat(n *onnxpb.NodeProto, name string, def float64) (float64, error) {
	a := attr(n, name)
	if a == nil {
		return def, nil
	}
	if a.GetType() != onnxpb.AttributeProto_FLOAT {
		return 0, nodeErr(n, "attribute %q: expected a float, got %v", name, a.GetType())
	}
	return float64(a.GetF()), nil
}

// attrString returns the string attribute name of n, or def if absent.
func attrString(n *onnxpb.NodeProto, name string, def string) (string, error) {
	a := attr(n, name)
	if a == nil {
		return def, nil
	}
	if a.GetType() != onnxpb.AttributeProto_STRING {
		return "", nodeErr(n, "attribute %q: expected a string, got %v", name, a.GetType())
	}
	return string(a.GetS()), nil
}

// attrInts returns the ints attribute name of n, or def if absent.
func attrInts(n *onnxpb.NodeProto, name string, def []int64) ([]int64, error) {
	a := attr(n, name)
	if a == nil {
		return def, nil
	}
	if a.GetType() != onnxpb.AttributeProto_INTS {
		return nil, nodeErr(n, "attribute %q: expected ints, got %v", name, a.GetType())
	}
	return append([]int64{}, a.GetInts()...), nil
}

// attrFloats returns the floats attribute name of n, or def if absent.
func attrFloats(n *onnxpb.NodeProto, name string, def []float64) ([]float64, error) {
	a := attr(n, name)
	if a == nil {
		return def, nil
	}
	if a.GetType() != onnxpb.AttributeProto_FLOATS {
		return nil, nodeErr(n, "attribute %q: expected floats, got %v", name, a.GetType())
	}
	out := make([]float64, len(a.GetFloats()))
	for i, f := range a.GetFloats() {
		out[i] = float64(f)
	}
	return out, nil
}

// attrTensor returns the tensor attribute name of n, decoded, or nil.
func attrTensor(n *onnxpb.NodeProto, name string) (*importer.Tensor, error) {
	a := attr(n, name)
	if a == nil {
		return nil, nil
	}
	if a.GetType() != onnxpb.AttributeProto_TENSOR {
		return nil, nodeErr(n, "attribute %q: expected a tensor, got %v", name, a.GetType())
	}
	t, err := importer.DecodeTensor(a.GetT())
	if err != nil {
		return nil, nodeErr(n, "attribute %q: %v", name, err)
	}
	return t, nil
}

// input returns in[i], or an error naming the node if it is missing.
func input(n *onnxpb.NodeProto, in []*value, i int) (*value, error) {
	if i >= len(in) || in[i] == nil {
		return nil, nodeErr(n, "input %d is required but missing", i)
	}
	return in[i], nil
}

// optInput returns in[i], or nil when the optional input is omitted.
func optInput(in []*value, i int) *value {
	if i >= len(in) {
		return nil
	}
	return in[i]
}

// constInput returns input i of n as a build-time constant, or an error
// saying that it must be one (Reshape's shape, Unsqueeze's axes at opset
// 13, ...). what names the input in the message.
func constInput(n *onnxpb.NodeProto, in []*value, i int, what string) (*importer.Tensor, error) {
	v, err := input(n, in, i)
	if err != nil {
		return nil, err
	}
	if !v.isConst() {
		return nil, nodeErr(n, "input %d (%s, %q) must be known when the graph is built (a constant, an initializer or shape arithmetic), but it is computed at run time", i, what, n.Input[i])
	}
	return v.c, nil
}

// optConstInts returns optional input i of n as int64s (nil if omitted),
// requiring it to be a build-time constant.
func optConstInts(n *onnxpb.NodeProto, in []*value, i int, what string) ([]int64, error) {
	if optInput(in, i) == nil {
		return nil, nil
	}
	t, err := constInput(n, in, i, what)
	if err != nil {
		return nil, err
	}
	return t.Int64s(), nil
}

// integerType reports whether a model input of element type et is bound
// at build time (integers and bools).
func integerType(et importer.DataType) bool {
	switch et {
	case importer.Int64, importer.Int32, importer.Int8, importer.Uint8, importer.Bool,
		onnxpb.TensorProto_INT16, onnxpb.TensorProto_UINT16, onnxpb.TensorProto_UINT32, onnxpb.TensorProto_UINT64:
		return true
	}
	return false
}

// ints converts ONNX int64 attribute values to ints.
func ints(v []int64) []int {
	if v == nil {
		return nil
	}
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out
}

// normAxis maps a possibly negative axis into [0, rank), or errors.
func normAxis(n *onnxpb.NodeProto, axis int64, rank int) (int, error) {
	a := int(axis)
	if a < 0 {
		a += rank
	}
	if a < 0 || a >= rank {
		return 0, nodeErr(n, "axis %d out of range for rank %d", axis, rank)
	}
	return a, nil
}

// axisAttr reads n's "axis" attribute (def when absent) and maps it into
// [0, rank) as normAxis does.
func axisAttr(n *onnxpb.NodeProto, def int64, rank int) (int, error) {
	ax, err := attrInt(n, "axis", def)
	if err != nil {
		return 0, err
	}
	return normAxis(n, ax, rank)
}
