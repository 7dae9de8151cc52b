package importer

import (
	"fmt"
	"math"
)

// Mod (opset 10; 13 adds bfloat16) on constants, as EvalNode computes it.
// PyTorch's TorchScript exporter writes it on shapes (torchvision's and
// timm's attention: a dimension modulo the head count, a padding modulo
// the window). fmod = 0 gives the remainder with the divisor's sign
// (Python's %, integers only, as the operator requires); fmod = 1 the
// remainder with the dividend's sign (C's fmod; required for floats).

func (e *evaluator) mod() (*Tensor, error) {
	a, err := e.input(0, false)
	if err != nil {
		return nil, err
	}
	b, err := e.input(1, false)
	if err != nil {
		return nil, err
	}
	fmod := e.attrInt("fmod", 0)
	if fmod != 0 && fmod != 1 {
		return nil, fmt.Errorf("fmod = %d, expected 0 or 1", fmod)
	}
	if a.Type != b.Type {
		return nil, fmt.Errorf("inputs have element types %v and %v; expected equal", a.Type, b.Type)
	}
	isFloat := a.IsFloat()
	if isFloat && fmod == 0 {
		return nil, fmt.Errorf("fmod = 0 on %v inputs; the operator requires fmod = 1 for floating-point types", a.Type)
	}
	shape, err := BroadcastShape(a.Shape, b.Shape)
	if err != nil {
		return nil, err
	}
	if err := checkOutSize(shape); err != nil {
		return nil, err
	}
	out, err := newTensor(a.Type, shape)
	if err != nil {
		return nil, err
	}
	ia, ib := broadcastIndex(shape, a.Shape), broadcastIndex(shape, b.Shape)
	for k := range ia {
		if isFloat {
			setFloat(out, k, math.Mod(getFloat(a, ia[k]), getFloat(b, ib[k])))
			continue
		}
		x, y := a.I64[ia[k]], b.I64[ib[k]]
		if y == 0 {
			return nil, fmt.Errorf("integer modulo by zero")
		}
		r := x % y // the dividend's sign
		if fmod == 0 && r != 0 && (r < 0) != (y < 0) {
			r += y
		}
		out.I64[k] = wrapInt(r, a.Type)
	}
	return out, nil
}
