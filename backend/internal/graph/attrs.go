package graph

import (
	"fmt"

	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// NodeErr formats an error about node n.
func NodeErr(n *onnxpb.NodeProto, format string, args ...any) error {
	return fmt.Errorf("node %q (%s): %s", n.GetName(), n.GetOpType(), fmt.Sprintf(format, args...))
}

// attr returns n's attribute name, or nil.
func Attr(n *onnxpb.NodeProto, name string) *onnxpb.AttributeProto {
	for _, a := range n.Attribute {
		if a.GetName() == name {
			return a
		}
	}
	return nil
}

// HasAttr reports whether n carries attribute name.
func HasAttr(n *onnxpb.NodeProto, name string) bool { return Attr(n, name) != nil }

// AttrInt returns the integer attribute name of n, or def if absent.
func AttrInt(n *onnxpb.NodeProto, name string, def int64) (int64, error) {
	a := Attr(n, name)
	if a == nil {
		return def, nil
	}
	if a.GetType() != onnxpb.AttributeProto_INT {
		return 0, NodeErr(n, "attribute %q: expected an int, got %v", name, a.GetType())
	}
	return a.GetI(), nil
}

// AttrFloat returns the float attribute name of n, or def if absent.
func AttrFloat(n *onnxpb.NodeProto, name string, def float64) (float64, error) {
	a := Attr(n, name)
	if a == nil {
		return def, nil
	}
	if a.GetType() != onnxpb.AttributeProto_FLOAT {
		return 0, NodeErr(n, "attribute %q: expected a float, got %v", name, a.GetType())
	}
	return float64(a.GetF()), nil
}

// AttrString returns the string attribute name of n, or def if absent.
func AttrString(n *onnxpb.NodeProto, name string, def string) (string, error) {
	a := Attr(n, name)
	if a == nil {
		return def, nil
	}
	if a.GetType() != onnxpb.AttributeProto_STRING {
		return "", NodeErr(n, "attribute %q: expected a string, got %v", name, a.GetType())
	}
	return string(a.GetS()), nil
}

// AttrInts returns the ints attribute name of n, or def if absent.
func AttrInts(n *onnxpb.NodeProto, name string, def []int64) ([]int64, error) {
	a := Attr(n, name)
	if a == nil {
		return def, nil
	}
	if a.GetType() != onnxpb.AttributeProto_INTS {
		return nil, NodeErr(n, "attribute %q: expected ints, got %v", name, a.GetType())
	}
	return append([]int64{}, a.GetInts()...), nil
}

// AttrFloats returns the floats attribute name of n, or def if absent.
func AttrFloats(n *onnxpb.NodeProto, name string, def []float64) ([]float64, error) {
	a := Attr(n, name)
	if a == nil {
		return def, nil
	}
	if a.GetType() != onnxpb.AttributeProto_FLOATS {
		return nil, NodeErr(n, "attribute %q: expected floats, got %v", name, a.GetType())
	}
	out := make([]float64, len(a.GetFloats()))
	for i, f := range a.GetFloats() {
		out[i] = float64(f)
	}
	return out, nil
}

// AttrTensor returns the tensor attribute name of n, decoded, or nil.
func AttrTensor(n *onnxpb.NodeProto, name string) (*importer.Tensor, error) {
	a := Attr(n, name)
	if a == nil {
		return nil, nil
	}
	if a.GetType() != onnxpb.AttributeProto_TENSOR {
		return nil, NodeErr(n, "attribute %q: expected a tensor, got %v", name, a.GetType())
	}
	t, err := importer.DecodeTensor(a.GetT())
	if err != nil {
		return nil, NodeErr(n, "attribute %q: %v", name, err)
	}
	return t, nil
}

// input returns in[i], or an error naming the node if it is missing.
func Input(n *onnxpb.NodeProto, in []*Value, i int) (*Value, error) {
	if i >= len(in) || in[i] == nil {
		return nil, NodeErr(n, "input %d is required but missing", i)
	}
	return in[i], nil
}

// OptInput returns in[i], or nil when the optional input is omitted.
func OptInput(in []*Value, i int) *Value {
	if i >= len(in) {
		return nil
	}
	return in[i]
}

// ConstInput returns input i of n as a build-time constant, or an error
// saying that it must be one (Reshape's shape, Unsqueeze's axes at opset
// 13, ...). what names the input in the message.
func ConstInput(n *onnxpb.NodeProto, in []*Value, i int, what string) (*importer.Tensor, error) {
	v, err := Input(n, in, i)
	if err != nil {
		return nil, err
	}
	if !v.IsConst() {
		return nil, NodeErr(n, "input %d (%s, %q) must be known when the graph is built (a constant, an initializer or shape arithmetic), but it is computed at run time", i, what, n.Input[i])
	}
	return v.C, nil
}

// OptConstInts returns optional input i of n as int64s (nil if omitted),
// requiring it to be a build-time constant.
func OptConstInts(n *onnxpb.NodeProto, in []*Value, i int, what string) ([]int64, error) {
	if OptInput(in, i) == nil {
		return nil, nil
	}
	t, err := ConstInput(n, in, i, what)
	if err != nil {
		return nil, err
	}
	return t.Int64s(), nil
}

// ints converts ONNX int64 attribute values to ints.
func Ints(v []int64) []int {
	if v == nil {
		return nil
	}
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out
}

// NormAxis maps a possibly negative axis into [0, rank), or errors.
func NormAxis(n *onnxpb.NodeProto, axis int64, rank int) (int, error) {
	a := int(axis)
	if a < 0 {
		a += rank
	}
	if a < 0 || a >= rank {
		return 0, NodeErr(n, "axis %d out of range for rank %d", axis, rank)
	}
	return a, nil
}

// AxisAttr reads n's "axis" attribute (def when absent) and maps it into
// [0, rank) as NormAxis does.
func AxisAttr(n *onnxpb.NodeProto, def int64, rank int) (int, error) {
	ax, err := AttrInt(n, "axis", def)
	if err != nil {
		return 0, err
	}
	return NormAxis(n, ax, rank)
}
