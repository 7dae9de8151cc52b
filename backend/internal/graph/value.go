package graph

import (
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// value is what flows along an ONNX edge while the graph is built: either
// a Gorgonia node (computed at run time) or a constant tensor known at build
// time, or a tensor sequence (sequence.go). shape is always concrete (nil
// for a sequence).
type Value struct {
	N     Node             // run-time value; nil for a constant
	C     *importer.Tensor // build-time constant; nil for a node
	Shape []int
	Seq   *Sequence // a tensor sequence; n and c are nil
}

// IsConst reports whether v is known at build time.
func (v *Value) IsConst() bool { return v != nil && v.C != nil }

// ConstValue wraps a tensor as a build-time value.
func ConstValue(t *importer.Tensor) *Value {
	return &Value{C: t, Shape: append([]int{}, t.Shape...)}
}

// NodeValue wraps a Gorgonia node as a run-time value.
func NodeValue(n Node) *Value {
	return &Value{N: n, Shape: append([]int{}, n.Shape()...)}
}

// IntegerType reports whether a model input of element type et is bound
// at build time (integers and bools).
func IntegerType(et importer.DataType) bool {
	switch et {
	case importer.Int64, importer.Int32, importer.Int8, importer.Uint8, importer.Bool,
		onnxpb.TensorProto_INT16, onnxpb.TensorProto_UINT16, onnxpb.TensorProto_UINT32, onnxpb.TensorProto_UINT64:
		return true
	}
	return false
}
