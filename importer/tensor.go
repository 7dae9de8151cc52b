package importer

import (
	"fmt"

	"github.com/paretonav/paretonav/importer/onnxpb"
)

// DataType is an ONNX element type (TensorProto.DataType).
type DataType = onnxpb.TensorProto_DataType

// Element types used throughout paretonav.
const (
	Float32 = onnxpb.TensorProto_FLOAT
	Float64 = onnxpb.TensorProto_DOUBLE
	Float16 = onnxpb.TensorProto_FLOAT16
	Int64   = onnxpb.TensorProto_INT64
	Int32   = onnxpb.TensorProto_INT32
	Int8    = onnxpb.TensorProto_INT8
	Uint8   = onnxpb.TensorProto_UINT8
	Bool    = onnxpb.TensorProto_BOOL
)

// Tensor is a decoded dense array. Exactly one of the data slices is set:
// F32 for float32 and float16 (widened), F64 for float64, I64 for every
// integer type and bool (widened). Type keeps the original element type so
// that a tensor can be written back as it came.
type Tensor struct {
	Name  string
	Type  DataType
	Shape []int
	F32   []float32
	F64   []float64
	I64   []int64
}

// Len returns the number of elements implied by Shape (1 for a scalar).
func (t *Tensor) Len() int { return numElements(t.Shape) }

// IsFloat reports whether t holds floating-point values.
func (t *Tensor) IsFloat() bool { return t.F32 != nil || t.F64 != nil }

// Float64s returns t's values as float64 (a copy).
func (t *Tensor) Float64s() []float64 {
	out := make([]float64, t.Len())
	switch {
	case t.F64 != nil:
		copy(out, t.F64)
	case t.F32 != nil:
		for i, v := range t.F32 {
			out[i] = float64(v)
		}
	default:
		for i, v := range t.I64 {
			out[i] = float64(v)
		}
	}
	return out
}

// Int64s returns t's values as int64 (a copy; floats are truncated).
func (t *Tensor) Int64s() []int64 {
	out := make([]int64, t.Len())
	switch {
	case t.I64 != nil:
		copy(out, t.I64)
	case t.F32 != nil:
		for i, v := range t.F32 {
			out[i] = int64(v)
		}
	default:
		for i, v := range t.F64 {
			out[i] = int64(v)
		}
	}
	return out
}

// NewFloat32 returns a float32 tensor of the given shape over data (not
// copied). It panics if len(data) does not match the shape.
func NewFloat32(name string, shape []int, data []float32) *Tensor {
	if len(data) != numElements(shape) {
		panic(fmt.Sprintf("importer: NewFloat32 %q: %d values for shape %v", name, len(data), shape))
	}
	return &Tensor{Name: name, Type: Float32, Shape: append([]int(nil), shape...), F32: data}
}

// NewInt64 returns an int64 tensor of the given shape over data (not
// copied). It panics if len(data) does not match the shape.
func NewInt64(name string, shape []int, data []int64) *Tensor {
	if len(data) != numElements(shape) {
		panic(fmt.Sprintf("importer: NewInt64 %q: %d values for shape %v", name, len(data), shape))
	}
	return &Tensor{Name: name, Type: Int64, Shape: append([]int(nil), shape...), I64: data}
}

func numElements(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}
