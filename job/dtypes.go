package job

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/paretonav/paretonav/backend"
	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Element types of the data (docs/data.md, "Element types"):
//
//   - A floating-point model input, and the target of a regression loss
//     (mse, l1, depth_l1, normal_cos), is float32. float64 (numpy's
//     default) and float16 arrays are converted to float32 with a warning;
//     integer and bool arrays are refused (integer depths in millimetres,
//     say, need scaling a conversion cannot guess).
//   - The target of a classification loss (nll, ce) holds class indices
//     as int64 (PyTorch's class targets). Other integer types (uint8
//     segmentation masks, int32 labels) are converted to int64 with a
//     warning; floating-point and bool arrays are refused, integral or not
//     (a float array there is most often soft labels or the wrong array).
//   - An integer model input takes any integer array, and a floating-point
//     array of whole numbers (as NPZ files written from float data hold),
//     converted to the input's type with a warning when it differs; other
//     floating-point arrays are refused.

// dtypeName is the numpy name of an element type.
func dtypeName(t importer.DataType) string {
	switch t {
	case importer.Float32:
		return "float32"
	case importer.Float64:
		return "float64"
	case importer.Float16:
		return "float16"
	case onnxpb.TensorProto_BFLOAT16:
		return "bfloat16"
	}
	return strings.ToLower(t.String())
}

// isIntType reports whether t is an integer element type (not bool).
func isIntType(t importer.DataType) bool {
	switch t {
	case importer.Int64, importer.Int32, importer.Int8, importer.Uint8,
		onnxpb.TensorProto_INT16, onnxpb.TensorProto_UINT16, onnxpb.TensorProto_UINT32, onnxpb.TensorProto_UINT64:
		return true
	}
	return false
}

// isFloatType reports whether t is a floating-point element type.
func isFloatType(t importer.DataType) bool {
	switch t {
	case importer.Float32, importer.Float64, importer.Float16, onnxpb.TensorProto_BFLOAT16:
		return true
	}
	return false
}

// asFloat32 returns a float32 copy of a (a itself when already float32).
func asFloat32(a *importer.Tensor) *importer.Tensor {
	if a.Type == importer.Float32 {
		return a
	}
	if a.F64 == nil { // float16 and bfloat16 are held widened to float32
		return &importer.Tensor{Name: a.Name, Type: importer.Float32, Shape: a.Shape, F32: a.F32}
	}
	v := make([]float32, len(a.F64))
	for i, x := range a.F64 {
		v[i] = float32(x)
	}
	return &importer.Tensor{Name: a.Name, Type: importer.Float32, Shape: a.Shape, F32: v}
}

// retype returns a with element type t (integers are held as int64
// whatever their type).
func retype(a *importer.Tensor, t importer.DataType) *importer.Tensor {
	return &importer.Tensor{Name: a.Name, Type: t, Shape: a.Shape, I64: a.I64}
}

// checkTypes checks the element type of every bound array against what
// reads it, converts in ds the arrays the rules above convert, and returns
// a warning per conversion; refused arrays are errors naming the array,
// its type, what reads it and the type expected.
func (b *Binding) checkTypes(ds *finetune.Dataset, path string) ([]string, error) {
	var errs []error
	var warns []string
	for _, u := range b.arrays() {
		a := ds.Arrays[u.Key]
		if a == nil {
			continue
		}
		arr, role := u.Array, u.Role
		if in := u.input; in != nil {
			switch {
			case isIntType(in.Type) || in.Type == importer.Bool:
				if !isIntType(a.Type) && a.Type != importer.Bool {
					if ds.FileBacked() {
						// Read a batch at a time: each value is checked
						// to be whole as its file is read.
						ds.Arrays[u.Key] = &importer.Tensor{Name: a.Name, Type: in.Type, Shape: a.Shape}
						warns = append(warns, fmt.Sprintf("%s: array %q (%s) converted to %s for %s (its values must be whole numbers)", path, arr, dtypeName(a.Type), dtypeName(in.Type), role))
						continue
					}
					if v, ok := integral(a); ok {
						ds.Arrays[u.Key] = &importer.Tensor{Name: a.Name, Type: in.Type, Shape: a.Shape, I64: v}
						warns = append(warns, fmt.Sprintf("%s: array %q (%s, whole numbers) converted to %s for %s", path, arr, dtypeName(a.Type), dtypeName(in.Type), role))
						continue
					}
					errs = append(errs, fmt.Errorf("%s: array %q for %s has element type %s and values that are not whole numbers; the model expects %s",
						path, arr, role, dtypeName(a.Type), dtypeName(in.Type)))
				} else if a.Type != in.Type {
					ds.Arrays[u.Key] = retype(a, in.Type)
					warns = append(warns, fmt.Sprintf("%s: array %q (%s) converted to %s for %s", path, arr, dtypeName(a.Type), dtypeName(in.Type), role))
				}
			case !isFloatType(a.Type):
				errs = append(errs, fmt.Errorf("%s: array %q for %s has element type %s; the model expects %s (floating point): save it with .astype(np.float32)",
					path, arr, role, dtypeName(a.Type), dtypeName(in.Type)))
			case a.Type != importer.Float32:
				ds.Arrays[u.Key] = asFloat32(a)
				warns = append(warns, fmt.Sprintf("%s: array %q (%s) converted to float32 for %s", path, arr, dtypeName(a.Type), role))
			}
			continue
		}
		t := u.task
		role = fmt.Sprintf("%s (loss %s)", role, t.Loss)
		switch {
		case backend.IntegerTarget(t.Loss):
			switch {
			case a.Type == importer.Int64:
			case isIntType(a.Type):
				ds.Arrays[u.Key] = retype(a, importer.Int64)
				warns = append(warns, fmt.Sprintf("%s: array %q (%s) converted to int64 for the %s", path, arr, dtypeName(a.Type), role))
			default:
				errs = append(errs, fmt.Errorf("%s: array %q for the %s has element type %s; %s takes class indices as int64: save it with .astype(np.int64)",
					path, arr, role, dtypeName(a.Type), t.Loss))
			}
		case isFloatType(a.Type):
			if a.Type != importer.Float32 {
				ds.Arrays[u.Key] = asFloat32(a)
				warns = append(warns, fmt.Sprintf("%s: array %q (%s) converted to float32 for the %s", path, arr, dtypeName(a.Type), role))
			}
		default:
			errs = append(errs, fmt.Errorf("%s: array %q for the %s has element type %s; %s takes float32 targets in the output's units: convert (and scale) it with .astype(np.float32)",
				path, arr, role, dtypeName(a.Type), t.Loss))
		}
	}
	return warns, errors.Join(errs...)
}

// integral returns a's values as int64 when every one is a whole number.
func integral(a *importer.Tensor) ([]int64, bool) {
	v := a.Float64s()
	out := make([]int64, len(v))
	for i, x := range v {
		if x != math.Trunc(x) || math.IsInf(x, 0) {
			return nil, false
		}
		out[i] = int64(x)
	}
	return out, true
}
