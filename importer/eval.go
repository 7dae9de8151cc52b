package importer

import (
	"fmt"
	"math"

	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Evaluable lists the ops EvalNode computes, by op_type (default domain).
var Evaluable = map[string]bool{
	"Constant": true, "ConstantOfShape": true, "Shape": true, "Size": true,
	"Gather": true, "Unsqueeze": true, "Squeeze": true, "Concat": true,
	"Cast": true, "Slice": true, "Reshape": true, "Identity": true,
	"Add": true, "Sub": true, "Mul": true, "Div": true, "Range": true,
	"Equal": true, "Where": true, "Expand": true, "Mod": true,
}

// EvalNode computes node (an op of the default domain, at the given opset
// version) on CPU from concrete inputs, for shape and constant subgraphs:
// Constant (every value* attribute but strings), ConstantOfShape, Shape and
// Size (which read only their input's Shape: its data may be nil), Gather,
// Unsqueeze and Squeeze (axes as an attribute up to opset 12, an input
// from 13), Concat, Cast, Slice (attributes up to opset 9, inputs from 10),
// Reshape, Expand, Identity, Add, Sub, Mul, Div (numpy broadcasting),
// Range, Equal, Where and Mod (eval_mod.go). inputs follow node.Input; an omitted optional
// input is nil. Outputs are named after node.Output. Ops, attributes or
// element types it cannot evaluate give an error wrapping ErrUnsupported.
func EvalNode(node *onnxpb.NodeProto, opset int64, inputs []*Tensor) ([]*Tensor, error) {
	where := nodeWhere("", 0, node)
	if node.GetName() == "" && len(node.Output) > 0 {
		where = fmt.Sprintf("node producing %q (%s)", node.Output[0], node.GetOpType())
	}
	if d := normDomain(node.GetDomain()); d != "" {
		return nil, fmt.Errorf("importer: %s: domain %q: %w", where, d, ErrUnsupported)
	}
	if !Evaluable[node.GetOpType()] {
		return nil, fmt.Errorf("importer: %s: constant evaluation of %s: %w", where, node.GetOpType(), ErrUnsupported)
	}
	e := &evaluator{node: node, opset: opset, inputs: inputs}
	outs, err := e.eval()
	if err != nil {
		return nil, fmt.Errorf("importer: %s: %w", where, err)
	}
	for i, t := range outs {
		if i < len(node.Output) {
			t.Name = node.Output[i]
		}
	}
	return outs, nil
}

type evaluator struct {
	node   *onnxpb.NodeProto
	opset  int64
	inputs []*Tensor
}

func (e *evaluator) attr(name string) *onnxpb.AttributeProto {
	for _, a := range e.node.Attribute {
		if a.GetName() == name {
			return a
		}
	}
	return nil
}

func (e *evaluator) attrInt(name string, def int64) int64 {
	if a := e.attr(name); a != nil {
		return a.GetI()
	}
	return def
}

// input returns input i with its data checked against its type and shape;
// optional inputs may be absent (nil, nil).
func (e *evaluator) input(i int, optional bool) (*Tensor, error) {
	if i >= len(e.inputs) || e.inputs[i] == nil {
		if optional {
			return nil, nil
		}
		return nil, fmt.Errorf("input %d is missing", i)
	}
	t := e.inputs[i]
	if _, ok := elemSize[t.Type]; !ok {
		return nil, fmt.Errorf("input %d: element type %v: %w", i, t.Type, ErrUnsupported)
	}
	if err := checkStorage(t, t.Type); err != nil {
		return nil, fmt.Errorf("input %d: %w", i, err)
	}
	return t, nil
}

// ints reads an integer input (a 1-D or scalar list of indices or dims).
func (e *evaluator) ints(i int, optional bool) ([]int64, bool, error) {
	t, err := e.input(i, optional)
	if err != nil || t == nil {
		return nil, false, err
	}
	if t.I64 == nil && t.Len() > 0 {
		return nil, false, fmt.Errorf("input %d: expected integers, got %v", i, t.Type)
	}
	if len(t.Shape) > 1 {
		return nil, false, fmt.Errorf("input %d: expected a 1-D tensor, got shape %v", i, t.Shape)
	}
	return append([]int64{}, t.I64...), true, nil
}

// axesArg reads the axes of Squeeze/Unsqueeze/Slice/ReduceX: an attribute
// before opset `from`, input i from then on.
func (e *evaluator) axesArg(from int64, i int) ([]int64, bool, error) {
	if e.opset < from {
		if a := e.attr("axes"); a != nil {
			return append([]int64{}, a.Ints...), true, nil
		}
		return nil, false, nil
	}
	return e.ints(i, true)
}

func (e *evaluator) eval() ([]*Tensor, error) {
	one := func(t *Tensor, err error) ([]*Tensor, error) {
		if err != nil {
			return nil, err
		}
		return []*Tensor{t}, nil
	}
	switch op := e.node.GetOpType(); op {
	case "Constant":
		return one(e.constant())
	case "ConstantOfShape":
		return one(e.constantOfShape())
	case "Shape", "Size":
		if len(e.inputs) < 1 || e.inputs[0] == nil {
			return nil, fmt.Errorf("input 0 is missing")
		}
		shape := e.inputs[0].Shape
		if op == "Size" {
			return one(&Tensor{Type: Int64, Shape: []int{}, I64: []int64{int64(numElements(shape))}}, nil)
		}
		start, end := 0, len(shape)
		if e.opset >= 15 {
			start = clampInt(e.attrInt("start", 0))
			end = clampInt(e.attrInt("end", math.MaxInt64))
		}
		return one(ShapeOf(shape, start, end), nil)
	case "Identity":
		t, err := e.input(0, false)
		if err != nil {
			return nil, err
		}
		return one(cloneTensor(t), nil)
	case "Gather":
		return one(e.gather())
	case "Unsqueeze":
		return one(e.unsqueeze())
	case "Squeeze":
		return one(e.squeeze())
	case "Concat":
		return one(e.concat())
	case "Cast":
		t, err := e.input(0, false)
		if err != nil {
			return nil, err
		}
		return one(castTensor(t, DataType(e.attrInt("to", 0))))
	case "Slice":
		return one(e.slice())
	case "Reshape":
		return one(e.reshape())
	case "Expand":
		return one(e.expand())
	case "Add", "Sub", "Mul", "Div", "Equal":
		a, err := e.input(0, false)
		if err != nil {
			return nil, err
		}
		b, err := e.input(1, false)
		if err != nil {
			return nil, err
		}
		return one(binaryOp(op, a, b))
	case "Where":
		return one(e.where())
	case "Mod":
		return one(e.mod())
	case "Range":
		return one(e.rangeOp())
	}
	return nil, fmt.Errorf("constant evaluation of %s: %w", e.node.GetOpType(), ErrUnsupported)
}

func clampInt(v int64) int {
	if v > math.MaxInt {
		return math.MaxInt
	}
	if v < math.MinInt {
		return math.MinInt
	}
	return int(v)
}

// ShapeOf returns what ONNX Shape gives for an input of the given shape:
// a 1-D int64 tensor of shape[start:end], where negative start and end
// count from the end and both are clamped to [0, len(shape)] (opset 15).
// Pass 0 and len(shape) (or math.MaxInt) for the whole shape.
func ShapeOf(shape []int, start, end int) *Tensor {
	r := len(shape)
	norm := func(v int) int {
		if v < 0 {
			v += r
		}
		return min(max(v, 0), r)
	}
	start, end = norm(start), norm(end)
	vals := []int64{}
	for i := start; i < end; i++ {
		vals = append(vals, int64(shape[i]))
	}
	return &Tensor{Type: Int64, Shape: []int{len(vals)}, I64: vals}
}

// newTensor allocates a tensor of element type dt and the given shape,
// refusing more than MaxElements elements or negative dimensions.
func newTensor(dt DataType, shape []int) (*Tensor, error) {
	n := 1
	for _, d := range shape {
		if d < 0 {
			return nil, fmt.Errorf("negative dimension in shape %v", shape)
		}
		if d > 0 && n > MaxElements/d {
			return nil, fmt.Errorf("shape %v exceeds %d elements", shape, MaxElements)
		}
		n *= d
	}
	t := &Tensor{Type: dt, Shape: append([]int{}, shape...)}
	switch storageFor(dt) {
	case 'f':
		t.F32 = make([]float32, n)
	case 'd':
		t.F64 = make([]float64, n)
	default:
		t.I64 = make([]int64, n)
	}
	return t, nil
}

func cloneTensor(t *Tensor) *Tensor {
	c := &Tensor{Name: t.Name, Type: t.Type, Shape: append([]int{}, t.Shape...)}
	if t.F32 != nil {
		c.F32 = append([]float32{}, t.F32...)
	}
	if t.F64 != nil {
		c.F64 = append([]float64{}, t.F64...)
	}
	if t.I64 != nil {
		c.I64 = append([]int64{}, t.I64...)
	}
	return c
}

// copyElem sets dst[di] = src[si]; both have the same storage.
func copyElem(dst *Tensor, di int, src *Tensor, si int) {
	switch {
	case dst.F32 != nil:
		dst.F32[di] = src.F32[si]
	case dst.F64 != nil:
		dst.F64[di] = src.F64[si]
	default:
		dst.I64[di] = src.I64[si]
	}
}

// take returns the tensor of the given shape whose element k is src[idx[k]].
func take(src *Tensor, shape []int, idx []int) (*Tensor, error) {
	out, err := newTensor(src.Type, shape)
	if err != nil {
		return nil, err
	}
	for k, i := range idx {
		copyElem(out, k, src, i)
	}
	return out, nil
}

func (e *evaluator) constant() (*Tensor, error) {
	if len(e.node.Attribute) != 1 {
		return nil, fmt.Errorf("expected exactly one value attribute, got %d", len(e.node.Attribute))
	}
	a := e.node.Attribute[0]
	switch a.GetName() {
	case "value":
		if a.T == nil {
			return nil, fmt.Errorf("attribute value holds no tensor")
		}
		if a.T.GetDataType() == int32(onnxpb.TensorProto_STRING) {
			return nil, fmt.Errorf("string tensors: %w", ErrUnsupported)
		}
		return DecodeTensor(a.T)
	case "value_float":
		return &Tensor{Type: Float32, Shape: []int{}, F32: []float32{a.GetF()}}, nil
	case "value_floats":
		return &Tensor{Type: Float32, Shape: []int{len(a.Floats)}, F32: append([]float32{}, a.Floats...)}, nil
	case "value_int":
		return &Tensor{Type: Int64, Shape: []int{}, I64: []int64{a.GetI()}}, nil
	case "value_ints":
		return &Tensor{Type: Int64, Shape: []int{len(a.Ints)}, I64: append([]int64{}, a.Ints...)}, nil
	case "sparse_value":
		return sparseToDense(a.SparseTensor)
	case "value_string", "value_strings":
		return nil, fmt.Errorf("attribute %s: %w", a.GetName(), ErrUnsupported)
	}
	return nil, fmt.Errorf("unknown attribute %q; expected value, value_float(s), value_int(s) or sparse_value", a.GetName())
}

// sparseToDense expands a SparseTensorProto (COO indices, linear [NNZ] or
// per-axis [NNZ, rank]).
func sparseToDense(sp *onnxpb.SparseTensorProto) (*Tensor, error) {
	if sp == nil || sp.Values == nil || sp.Indices == nil {
		return nil, fmt.Errorf("sparse_value needs values and indices")
	}
	vals, err := DecodeTensor(sp.Values)
	if err != nil {
		return nil, err
	}
	ind, err := DecodeTensor(sp.Indices)
	if err != nil {
		return nil, err
	}
	shape := make([]int, len(sp.Dims))
	for i, d := range sp.Dims {
		if d < 0 || d > MaxElements {
			return nil, fmt.Errorf("sparse_value dims %v out of range", sp.Dims)
		}
		shape[i] = int(d)
	}
	out, err := newTensor(vals.Type, shape)
	if err != nil {
		return nil, err
	}
	nnz := vals.Len()
	n := out.Len()
	strides := stridesOf(shape)
	for k := 0; k < nnz; k++ {
		var lin int64
		switch {
		case len(ind.Shape) == 1 && ind.Len() == nnz:
			lin = ind.I64[k]
		case len(ind.Shape) == 2 && ind.Shape[0] == nnz && ind.Shape[1] == len(shape):
			for j := range shape {
				c := ind.I64[k*len(shape)+j]
				if c < 0 || c >= int64(shape[j]) {
					return nil, fmt.Errorf("sparse_value index %d out of range for dims %v", c, shape)
				}
				lin += c * int64(strides[j])
			}
		default:
			return nil, fmt.Errorf("sparse_value indices of shape %v do not match %d values of rank %d", ind.Shape, nnz, len(shape))
		}
		if lin < 0 || lin >= int64(n) {
			return nil, fmt.Errorf("sparse_value index %d out of range for dims %v", lin, shape)
		}
		copyElem(out, int(lin), vals, k)
	}
	return out, nil
}

func stridesOf(shape []int) []int {
	s := make([]int, len(shape))
	acc := 1
	for i := len(shape) - 1; i >= 0; i-- {
		s[i] = acc
		acc *= shape[i]
	}
	return s
}

func toShape(dims []int64, what string) ([]int, error) {
	shape := make([]int, len(dims))
	for i, d := range dims {
		if d < 0 || d > MaxElements {
			return nil, fmt.Errorf("%s %v: dimension %d out of range", what, dims, d)
		}
		shape[i] = int(d)
	}
	return shape, nil
}

func (e *evaluator) constantOfShape() (*Tensor, error) {
	dims, _, err := e.ints(0, false)
	if err != nil {
		return nil, err
	}
	shape, err := toShape(dims, "shape")
	if err != nil {
		return nil, err
	}
	val := &Tensor{Type: Float32, Shape: []int{1}, F32: []float32{0}}
	if a := e.attr("value"); a != nil && a.T != nil {
		if val, err = DecodeTensor(a.T); err != nil {
			return nil, err
		}
		if val.Len() != 1 {
			return nil, fmt.Errorf("attribute value has %d elements, expected 1", val.Len())
		}
	}
	out, err := newTensor(val.Type, shape)
	if err != nil {
		return nil, err
	}
	for i := 0; i < out.Len(); i++ {
		copyElem(out, i, val, 0)
	}
	return out, nil
}

// normAxis maps a possibly negative axis into [0, rank).
func normAxis(a int64, rank int) (int, error) {
	if a < -int64(rank) || a >= int64(rank) {
		return 0, fmt.Errorf("axis %d out of range for rank %d", a, rank)
	}
	if a < 0 {
		a += int64(rank)
	}
	return int(a), nil
}

func (e *evaluator) gather() (*Tensor, error) {
	data, err := e.input(0, false)
	if err != nil {
		return nil, err
	}
	ind, err := e.input(1, false)
	if err != nil {
		return nil, err
	}
	if ind.I64 == nil && ind.Len() > 0 {
		return nil, fmt.Errorf("indices must be integers, got %v", ind.Type)
	}
	ax, err := normAxis(e.attrInt("axis", 0), len(data.Shape))
	if err != nil {
		return nil, err
	}
	d := data.Shape[ax]
	outer := numElements(data.Shape[:ax])
	inner := numElements(data.Shape[ax+1:])
	shape := append(append(append([]int{}, data.Shape[:ax]...), ind.Shape...), data.Shape[ax+1:]...)
	if numElements(shape) > MaxElements {
		return nil, fmt.Errorf("output shape %v exceeds %d elements", shape, MaxElements)
	}
	idx := make([]int, 0, numElements(shape))
	for o := 0; o < outer; o++ {
		for _, k := range ind.I64 {
			if k < -int64(d) || k >= int64(d) {
				return nil, fmt.Errorf("index %d out of range for axis %d of size %d", k, ax, d)
			}
			if k < 0 {
				k += int64(d)
			}
			for i := 0; i < inner; i++ {
				idx = append(idx, (o*d+int(k))*inner+i)
			}
		}
	}
	return take(data, shape, idx)
}

func (e *evaluator) unsqueeze() (*Tensor, error) {
	data, err := e.input(0, false)
	if err != nil {
		return nil, err
	}
	axes, ok, err := e.axesArg(13, 1)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("axes are missing")
	}
	r := len(data.Shape) + len(axes)
	ins := make([]bool, r)
	for _, a := range axes {
		ax, err := normAxis(a, r)
		if err != nil {
			return nil, err
		}
		if ins[ax] {
			return nil, fmt.Errorf("axis %d repeated in %v", a, axes)
		}
		ins[ax] = true
	}
	shape := make([]int, 0, r)
	j := 0
	for i := 0; i < r; i++ {
		if ins[i] {
			shape = append(shape, 1)
		} else {
			shape = append(shape, data.Shape[j])
			j++
		}
	}
	out := cloneTensor(data)
	out.Shape = shape
	return out, nil
}

func (e *evaluator) squeeze() (*Tensor, error) {
	data, err := e.input(0, false)
	if err != nil {
		return nil, err
	}
	axes, ok, err := e.axesArg(13, 1)
	if err != nil {
		return nil, err
	}
	drop := make([]bool, len(data.Shape))
	if ok {
		for _, a := range axes {
			ax, err := normAxis(a, len(data.Shape))
			if err != nil {
				return nil, err
			}
			if data.Shape[ax] != 1 {
				return nil, fmt.Errorf("cannot squeeze axis %d of size %d (shape %v)", a, data.Shape[ax], data.Shape)
			}
			drop[ax] = true
		}
	} else {
		for i, d := range data.Shape {
			drop[i] = d == 1
		}
	}
	shape := []int{}
	for i, d := range data.Shape {
		if !drop[i] {
			shape = append(shape, d)
		}
	}
	out := cloneTensor(data)
	out.Shape = shape
	return out, nil
}

func (e *evaluator) concat() (*Tensor, error) {
	if len(e.inputs) == 0 {
		return nil, fmt.Errorf("no inputs")
	}
	ts := make([]*Tensor, len(e.inputs))
	for i := range e.inputs {
		t, err := e.input(i, false)
		if err != nil {
			return nil, err
		}
		ts[i] = t
	}
	a := e.attr("axis")
	if a == nil {
		return nil, fmt.Errorf("attribute axis is missing")
	}
	first := ts[0]
	ax, err := normAxis(a.GetI(), len(first.Shape))
	if err != nil {
		return nil, err
	}
	shape := append([]int{}, first.Shape...)
	shape[ax] = 0
	for i, t := range ts {
		if t.Type != first.Type {
			return nil, fmt.Errorf("input %d has element type %v, input 0 has %v", i, t.Type, first.Type)
		}
		if len(t.Shape) != len(first.Shape) {
			return nil, fmt.Errorf("input %d has rank %d, input 0 has rank %d", i, len(t.Shape), len(first.Shape))
		}
		for j, d := range t.Shape {
			if j != ax && d != first.Shape[j] {
				return nil, fmt.Errorf("input %d has shape %v, incompatible with input 0's %v on axis %d", i, t.Shape, first.Shape, j)
			}
		}
		shape[ax] += t.Shape[ax]
	}
	out, err := newTensor(first.Type, shape)
	if err != nil {
		return nil, err
	}
	outer := numElements(shape[:ax])
	inner := numElements(shape[ax+1:])
	k := 0
	for o := 0; o < outer; o++ {
		for _, t := range ts {
			block := t.Shape[ax] * inner
			for i := 0; i < block; i++ {
				copyElem(out, k, t, o*block+i)
				k++
			}
		}
	}
	return out, nil
}

// castTensor converts t to element type to, as ONNX Cast does: floats to
// integers truncate toward zero, integers wrap to the target width, and
// anything nonzero is true.
func castTensor(t *Tensor, to DataType) (*Tensor, error) {
	if _, ok := elemSize[to]; !ok {
		return nil, fmt.Errorf("cast to %v: %w", to, ErrUnsupported)
	}
	out, err := newTensor(to, t.Shape)
	if err != nil {
		return nil, err
	}
	n := t.Len()
	for i := 0; i < n; i++ {
		switch storageFor(to) {
		case 'f', 'd':
			setFloat(out, i, getFloat(t, i))
		default:
			var v int64
			if t.I64 != nil {
				v = t.I64[i]
			} else {
				f := getFloat(t, i)
				switch {
				case to == Bool:
					if f != 0 {
						v = 1
					}
				case f != f:
					v = 0
				default:
					f = math.Trunc(f)
					if to == onnxpb.TensorProto_UINT64 && f >= 1<<63 {
						v = int64(uint64(f))
					} else {
						v = int64(f)
					}
				}
			}
			out.I64[i] = wrapInt(v, to)
		}
	}
	return out, nil
}

// getFloat reads element i of t as float64.
func getFloat(t *Tensor, i int) float64 {
	switch {
	case t.F32 != nil:
		return float64(t.F32[i])
	case t.F64 != nil:
		return t.F64[i]
	case t.Type == onnxpb.TensorProto_UINT64:
		return float64(uint64(t.I64[i]))
	}
	return float64(t.I64[i])
}

// setFloat stores v in element i of a floating-point t, rounding it to t's
// element type.
func setFloat(t *Tensor, i int, v float64) {
	switch t.Type {
	case onnxpb.TensorProto_DOUBLE:
		t.F64[i] = v
	case onnxpb.TensorProto_FLOAT16:
		t.F32[i] = halfToFloat(floatToHalf(float32(v)))
	case onnxpb.TensorProto_BFLOAT16:
		h := floatToBFloat16(float32(v))
		t.F32[i] = math.Float32frombits(uint32(h) << 16)
	default:
		t.F32[i] = float32(v)
	}
}

func (e *evaluator) slice() (*Tensor, error) {
	data, err := e.input(0, false)
	if err != nil {
		return nil, err
	}
	var starts, ends, axes, steps []int64
	var haveAxes, haveSteps bool
	if e.opset < 10 {
		a, b := e.attr("starts"), e.attr("ends")
		if a == nil || b == nil {
			return nil, fmt.Errorf("attributes starts and ends are required before opset 10")
		}
		starts, ends = a.Ints, b.Ints
		if c := e.attr("axes"); c != nil {
			axes, haveAxes = c.Ints, true
		}
	} else {
		if starts, _, err = e.ints(1, false); err != nil {
			return nil, err
		}
		if ends, _, err = e.ints(2, false); err != nil {
			return nil, err
		}
		if axes, haveAxes, err = e.ints(3, true); err != nil {
			return nil, err
		}
		if steps, haveSteps, err = e.ints(4, true); err != nil {
			return nil, err
		}
	}
	if len(ends) != len(starts) {
		return nil, fmt.Errorf("%d starts but %d ends", len(starts), len(ends))
	}
	if !haveAxes {
		axes = make([]int64, len(starts))
		for i := range axes {
			axes[i] = int64(i)
		}
	}
	if !haveSteps {
		steps = make([]int64, len(starts))
		for i := range steps {
			steps[i] = 1
		}
	}
	if len(axes) != len(starts) || len(steps) != len(starts) {
		return nil, fmt.Errorf("starts, ends, axes and steps have lengths %d, %d, %d, %d; expected equal", len(starts), len(ends), len(axes), len(steps))
	}
	r := len(data.Shape)
	begin := make([]int, r)
	step := make([]int, r)
	shape := append([]int{}, data.Shape...)
	seen := make([]bool, r)
	for i := range step {
		step[i] = 1
	}
	for j := range starts {
		ax, err := normAxis(axes[j], r)
		if err != nil {
			return nil, err
		}
		if seen[ax] {
			return nil, fmt.Errorf("axis %d repeated in %v", axes[j], axes)
		}
		seen[ax] = true
		d := int64(data.Shape[ax])
		s, en, st := starts[j], ends[j], steps[j]
		if st == 0 {
			return nil, fmt.Errorf("step 0 on axis %d", axes[j])
		}
		if s < 0 {
			s += d
		}
		if en < 0 {
			en += d
		}
		var n int64
		if st > 0 {
			s, en = min(max(s, 0), d), min(max(en, 0), d)
			if en > s {
				n = (en - s + st - 1) / st
			}
		} else {
			s, en = min(max(s, 0), d-1), min(max(en, -1), d-1)
			if s > en {
				n = (s - en - st - 1) / -st
			}
		}
		begin[ax], step[ax], shape[ax] = int(s), int(st), int(n)
	}
	strides := stridesOf(data.Shape)
	total := numElements(shape)
	idx := make([]int, total)
	pos := make([]int, r)
	for k := 0; k < total; k++ {
		lin := 0
		for a := 0; a < r; a++ {
			lin += (begin[a] + pos[a]*step[a]) * strides[a]
		}
		idx[k] = lin
		for a := r - 1; a >= 0; a-- {
			pos[a]++
			if pos[a] < shape[a] {
				break
			}
			pos[a] = 0
		}
	}
	return take(data, shape, idx)
}

func (e *evaluator) reshape() (*Tensor, error) {
	data, err := e.input(0, false)
	if err != nil {
		return nil, err
	}
	dims, _, err := e.ints(1, false)
	if err != nil {
		return nil, err
	}
	allowZero := e.opset >= 14 && e.attrInt("allowzero", 0) != 0
	shape, err := ReshapeTarget(data.Shape, dims, allowZero)
	if err != nil {
		return nil, err
	}
	out := cloneTensor(data)
	out.Shape = shape
	return out, nil
}

// ReshapeTarget resolves an ONNX Reshape shape argument against the input
// shape: 0 copies the input's dimension (unless allowZero), one -1 is
// inferred from the element count.
func ReshapeTarget(in []int, dims []int64, allowZero bool) ([]int, error) {
	shape := make([]int, len(dims))
	infer := -1
	known := 1
	for i, d := range dims {
		switch {
		case d == -1:
			if infer >= 0 {
				return nil, fmt.Errorf("reshape to %v: more than one -1", dims)
			}
			infer = i
			continue
		case d == 0 && !allowZero:
			if i >= len(in) {
				return nil, fmt.Errorf("reshape to %v: 0 at position %d but the input has rank %d", dims, i, len(in))
			}
			shape[i] = in[i]
		case d < 0 || d > MaxElements:
			return nil, fmt.Errorf("reshape to %v: invalid dimension %d", dims, d)
		default:
			shape[i] = int(d)
		}
		if shape[i] > 0 && known > MaxElements/shape[i] {
			return nil, fmt.Errorf("reshape to %v: too many elements", dims)
		}
		known *= shape[i]
	}
	n := numElements(in)
	if infer >= 0 {
		if known == 0 || n%known != 0 {
			return nil, fmt.Errorf("reshape %v to %v: cannot infer the -1 dimension", in, dims)
		}
		shape[infer] = n / known
		known = n
	}
	if known != n {
		return nil, fmt.Errorf("reshape %v (%d elements) to %v (%d elements)", in, n, shape, known)
	}
	return shape, nil
}

// BroadcastShape returns the numpy-style broadcast of the given shapes.
func BroadcastShape(shapes ...[]int) ([]int, error) {
	r := 0
	for _, s := range shapes {
		r = max(r, len(s))
	}
	out := make([]int, r)
	for i := range out {
		out[i] = 1
	}
	for _, s := range shapes {
		off := r - len(s)
		for i, d := range s {
			switch {
			case d == out[off+i] || d == 1:
			case out[off+i] == 1:
				out[off+i] = d
			default:
				return nil, fmt.Errorf("shapes %v cannot be broadcast together", shapes)
			}
		}
	}
	return out, nil
}

// broadcastIndex maps each element of out (row-major) to the element of a
// tensor of shape in broadcast to it.
func broadcastIndex(out, in []int) []int {
	r := len(out)
	st := make([]int, r)
	inStrides := stridesOf(in)
	off := r - len(in)
	for i, d := range in {
		if d != 1 {
			st[off+i] = inStrides[i]
		}
	}
	total := numElements(out)
	idx := make([]int, total)
	pos := make([]int, r)
	lin := 0
	for k := 0; k < total; k++ {
		idx[k] = lin
		for a := r - 1; a >= 0; a-- {
			pos[a]++
			lin += st[a]
			if pos[a] < out[a] {
				break
			}
			lin -= st[a] * pos[a]
			pos[a] = 0
		}
	}
	return idx
}

func checkOutSize(shape []int) error {
	n := 1
	for _, d := range shape {
		if d > 0 && n > MaxElements/d {
			return fmt.Errorf("output shape %v exceeds %d elements", shape, MaxElements)
		}
		n *= d
	}
	return nil
}

// binaryOp computes Add, Sub, Mul, Div or Equal with broadcasting.
func binaryOp(op string, a, b *Tensor) (*Tensor, error) {
	if a.Type != b.Type {
		return nil, fmt.Errorf("inputs have element types %v and %v; expected equal", a.Type, b.Type)
	}
	shape, err := BroadcastShape(a.Shape, b.Shape)
	if err != nil {
		return nil, err
	}
	if err := checkOutSize(shape); err != nil {
		return nil, err
	}
	ia, ib := broadcastIndex(shape, a.Shape), broadcastIndex(shape, b.Shape)
	dt := a.Type
	if op == "Equal" {
		dt = Bool
	}
	out, err := newTensor(dt, shape)
	if err != nil {
		return nil, err
	}
	isInt := a.I64 != nil || (a.F32 == nil && a.F64 == nil)
	for k := range ia {
		if isInt {
			x, y := a.I64[ia[k]], b.I64[ib[k]]
			var v int64
			switch op {
			case "Add":
				v = x + y
			case "Sub":
				v = x - y
			case "Mul":
				v = x * y
			case "Div":
				if y == 0 {
					return nil, fmt.Errorf("integer division by zero")
				}
				if a.Type == onnxpb.TensorProto_UINT64 {
					v = int64(uint64(x) / uint64(y))
				} else {
					v = x / y
				}
			case "Equal":
				if x == y {
					v = 1
				}
			}
			out.I64[k] = wrapInt(v, dt)
			continue
		}
		x, y := getFloat(a, ia[k]), getFloat(b, ib[k])
		var v float64
		switch op {
		case "Add":
			v = x + y
		case "Sub":
			v = x - y
		case "Mul":
			v = x * y
		case "Div":
			v = x / y
		case "Equal":
			if x == y {
				out.I64[k] = 1
			}
			continue
		}
		setFloat(out, k, v)
	}
	return out, nil
}

func (e *evaluator) where() (*Tensor, error) {
	c, err := e.input(0, false)
	if err != nil {
		return nil, err
	}
	x, err := e.input(1, false)
	if err != nil {
		return nil, err
	}
	y, err := e.input(2, false)
	if err != nil {
		return nil, err
	}
	if c.Type != Bool {
		return nil, fmt.Errorf("condition has element type %v, expected BOOL", c.Type)
	}
	if x.Type != y.Type {
		return nil, fmt.Errorf("X and Y have element types %v and %v; expected equal", x.Type, y.Type)
	}
	shape, err := BroadcastShape(c.Shape, x.Shape, y.Shape)
	if err != nil {
		return nil, err
	}
	if err := checkOutSize(shape); err != nil {
		return nil, err
	}
	ic, ix, iy := broadcastIndex(shape, c.Shape), broadcastIndex(shape, x.Shape), broadcastIndex(shape, y.Shape)
	out, err := newTensor(x.Type, shape)
	if err != nil {
		return nil, err
	}
	for k := range ic {
		if c.I64[ic[k]] != 0 {
			copyElem(out, k, x, ix[k])
		} else {
			copyElem(out, k, y, iy[k])
		}
	}
	return out, nil
}

func (e *evaluator) expand() (*Tensor, error) {
	data, err := e.input(0, false)
	if err != nil {
		return nil, err
	}
	dims, _, err := e.ints(1, false)
	if err != nil {
		return nil, err
	}
	target, err := toShape(dims, "shape")
	if err != nil {
		return nil, err
	}
	shape, err := BroadcastShape(data.Shape, target)
	if err != nil {
		return nil, err
	}
	if err := checkOutSize(shape); err != nil {
		return nil, err
	}
	return take(data, shape, broadcastIndex(shape, data.Shape))
}

func (e *evaluator) rangeOp() (*Tensor, error) {
	var ts [3]*Tensor
	for i := range ts {
		t, err := e.input(i, false)
		if err != nil {
			return nil, err
		}
		if t.Len() != 1 {
			return nil, fmt.Errorf("input %d has shape %v, expected a scalar", i, t.Shape)
		}
		if t.Type != ts[0].typeOr(t.Type) {
			return nil, fmt.Errorf("input %d has element type %v, input 0 has %v", i, t.Type, ts[0].Type)
		}
		ts[i] = t
	}
	dt := ts[0].Type
	var n int64
	if ts[0].I64 != nil {
		start, limit, delta := ts[0].I64[0], ts[1].I64[0], ts[2].I64[0]
		if delta == 0 {
			return nil, fmt.Errorf("delta is 0")
		}
		if delta > 0 && limit > start {
			n = (limit - start + delta - 1) / delta
		} else if delta < 0 && limit < start {
			n = (start - limit - delta - 1) / -delta
		}
		if n > MaxElements {
			return nil, fmt.Errorf("range of %d elements exceeds %d", n, MaxElements)
		}
		out, _ := newTensor(dt, []int{int(n)})
		for i := range out.I64 {
			out.I64[i] = wrapInt(start+int64(i)*delta, dt)
		}
		return out, nil
	}
	start, limit, delta := getFloat(ts[0], 0), getFloat(ts[1], 0), getFloat(ts[2], 0)
	if delta == 0 {
		return nil, fmt.Errorf("delta is 0")
	}
	c := math.Ceil((limit - start) / delta)
	if c != c || c > MaxElements {
		return nil, fmt.Errorf("range from %v to %v by %v has too many elements", start, limit, delta)
	}
	if c > 0 {
		n = int64(c)
	}
	out, _ := newTensor(dt, []int{int(n)})
	for i := 0; i < int(n); i++ {
		setFloat(out, i, start+float64(i)*delta)
	}
	return out, nil
}

// typeOr returns t's type, or def when t is nil.
func (t *Tensor) typeOr(def DataType) DataType {
	if t == nil {
		return def
	}
	return t.Type
}
