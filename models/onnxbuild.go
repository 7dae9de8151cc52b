package models

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"

	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/importer/onnxpb"
	"github.com/paretonav/paretonav/internal/atomicfile"
)

// IR and opset versions of every model this package writes.
const (
	IRVersion = 7
	Opset     = 13
)

// Producer is the producer_name recorded in the models this package writes.
const Producer = "paretonav/models"

// BatchDim is the symbolic name of the dynamic batch dimension of every
// graph input and output.
const BatchDim = "N"

// builder assembles one ONNX graph. Initializer values are drawn from a
// seeded generator in the order the initializers are added, so a seed
// fixes every value. With noData set, initializers carry their shape only
// (for counting parameters without allocating them); such a model is not
// valid ONNX.
type builder struct {
	g      *onnxpb.GraphProto
	rng    *rand.Rand
	noData bool
	used   map[string]bool
	auto   int
}

func newBuilder(name string, seed int64, noData bool) *builder {
	return &builder{
		g:      &onnxpb.GraphProto{Name: proto.String(name)},
		rng:    rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15)),
		noData: noData,
		used:   map[string]bool{},
	}
}

// claim records a value name and panics on reuse: every name in an ONNX
// graph is assigned once, and a duplicate is a bug in a model definition.
func (b *builder) claim(name string) string {
	if b.used[name] {
		panic(fmt.Sprintf("models: value name %q assigned twice", name))
	}
	b.used[name] = true
	return name
}

// tmp returns a fresh intermediate value name built from hint.
func (b *builder) tmp(hint string) string {
	if !b.used[hint] {
		return b.claim(hint)
	}
	for {
		b.auto++
		n := fmt.Sprintf("%s_%d", hint, b.auto)
		if !b.used[n] {
			return b.claim(n)
		}
	}
}

// valueInfo returns a tensor ValueInfo; a negative dimension becomes the
// symbolic batch dimension.
func valueInfo(name string, elem onnxpb.TensorProto_DataType, dims []int64) *onnxpb.ValueInfoProto {
	shape := &onnxpb.TensorShapeProto{}
	for _, d := range dims {
		dim := &onnxpb.TensorShapeProto_Dimension{}
		if d < 0 {
			dim.Value = &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: BatchDim}
		} else {
			dim.Value = &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: d}
		}
		shape.Dim = append(shape.Dim, dim)
	}
	return &onnxpb.ValueInfoProto{
		Name: proto.String(name),
		Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: &onnxpb.TypeProto_Tensor{
			ElemType: proto.Int32(int32(elem)),
			Shape:    shape,
		}}},
	}
}

// input declares a float32 graph input (dims < 0 mark the batch dimension).
func (b *builder) input(name string, dims ...int64) string {
	b.g.Input = append(b.g.Input, valueInfo(b.claim(name), onnxpb.TensorProto_FLOAT, dims))
	return name
}

// output declares value as a float32 graph output.
func (b *builder) output(value string, dims ...int64) {
	b.g.Output = append(b.g.Output, valueInfo(value, onnxpb.TensorProto_FLOAT, dims))
}

// node appends a node and returns its outputs, named after outs (made
// unique). The node is named after its first output.
func (b *builder) node(op string, inputs []string, outs []string, attrs ...*onnxpb.AttributeProto) []string {
	names := make([]string, len(outs))
	for i, o := range outs {
		names[i] = b.tmp(o)
	}
	b.g.Node = append(b.g.Node, &onnxpb.NodeProto{
		Name:      proto.String(names[0]),
		OpType:    proto.String(op),
		Input:     inputs,
		Output:    names,
		Attribute: attrs,
	})
	return names
}

// op1 appends a single-output node.
func (b *builder) op1(op, out string, inputs []string, attrs ...*onnxpb.AttributeProto) string {
	return b.node(op, inputs, []string{out}, attrs...)[0]
}

// initFloat adds a float32 initializer whose i-th value is fill(i).
func (b *builder) initFloat(name string, dims []int64, fill func() float32) string {
	t := &onnxpb.TensorProto{
		Name:     proto.String(b.claim(name)),
		Dims:     dims,
		DataType: proto.Int32(int32(onnxpb.TensorProto_FLOAT)),
	}
	if !b.noData {
		n := 1
		for _, d := range dims {
			n *= int(d)
		}
		raw := make([]byte, 4*n)
		for i := range n {
			binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(fill()))
		}
		t.RawData = raw
	}
	b.g.Initializer = append(b.g.Initializer, t)
	return name
}

// constant returns a float32 initializer filled with v.
func (b *builder) constant(name string, dims []int64, v float32) string {
	return b.initFloat(name, dims, func() float32 { return v })
}

// uniform returns an initializer drawn from U(-bound, bound).
func (b *builder) uniform(name string, dims []int64, bound float64) string {
	return b.initFloat(name, dims, func() float32 { return float32((2*b.rng.Float64() - 1) * bound) })
}

// normal returns an initializer drawn from N(0, std²).
func (b *builder) normal(name string, dims []int64, std float64) string {
	return b.initFloat(name, dims, func() float32 { return float32(b.rng.NormFloat64() * std) })
}

// constInt64 adds a Constant node holding an int64 vector (shapes, axes):
// a Constant, not an initializer, so that it is never taken for a
// trainable parameter.
func (b *builder) constInt64(name string, vals ...int64) string {
	t := &onnxpb.TensorProto{
		Dims:      []int64{int64(len(vals))},
		DataType:  proto.Int32(int32(onnxpb.TensorProto_INT64)),
		Int64Data: vals,
	}
	return b.op1("Constant", name, nil, attrTensor("value", t))
}

// constFloats adds a Constant node holding a float32 vector.
func (b *builder) constFloats(name string, vals ...float32) string {
	t := &onnxpb.TensorProto{
		Dims:      []int64{int64(len(vals))},
		DataType:  proto.Int32(int32(onnxpb.TensorProto_FLOAT)),
		FloatData: vals,
	}
	return b.op1("Constant", name, nil, attrTensor("value", t))
}

// Init kinds for weights.
type initKind int

const (
	// initTorchDefault is PyTorch's default for Conv2d and Linear:
	// kaiming_uniform_(a=√5) for the weight, i.e. U(±1/√fan_in), and
	// U(±1/√fan_in) for the bias.
	initTorchDefault initKind = iota
	// initXavierNormalZeroBias is xavier_normal_ for the weight
	// (std = √(2/(fan_in+fan_out))) and a zero bias, as lorenmt/mtan does.
	initXavierNormalZeroBias
)

// weightBias adds the weight (dims, PyTorch layout: out first) and bias
// (out) of a conv or linear layer named prefix, initialised by kind.
func (b *builder) weightBias(prefix string, dims []int64, kind initKind) (w, bias string) {
	out := dims[0]
	fanIn := int64(1)
	for _, d := range dims[1:] {
		fanIn *= d
	}
	receptive := fanIn / dims[1]
	switch kind {
	case initXavierNormalZeroBias:
		std := math.Sqrt(2 / float64(fanIn+out*receptive))
		w = b.normal(prefix+".weight", dims, std)
		bias = b.constant(prefix+".bias", []int64{out}, 0)
	default:
		bound := 1 / math.Sqrt(float64(fanIn))
		w = b.uniform(prefix+".weight", dims, bound)
		bias = b.uniform(prefix+".bias", []int64{out}, bound)
	}
	return w, bias
}

// conv adds a 2-D convolution with bias (square kernel k, stride 1, padding
// pad on every side) named prefix.
func (b *builder) conv(prefix, x string, cin, cout, k, pad int64, kind initKind) string {
	w, bias := b.weightBias(prefix, []int64{cout, cin, k, k}, kind)
	return b.op1("Conv", prefix+"/conv", []string{x, w, bias},
		attrInts("kernel_shape", k, k), attrInts("pads", pad, pad, pad, pad),
		attrInts("strides", 1, 1), attrInts("dilations", 1, 1), attrInt("group", 1))
}

// gemm adds a fully connected layer y = x·Wᵀ + b named prefix (W is
// [out, in], as in PyTorch's Linear).
func (b *builder) gemm(prefix, x string, in, out int64, kind initKind) string {
	w, bias := b.weightBias(prefix, []int64{out, in}, kind)
	return b.op1("Gemm", prefix+"/gemm", []string{x, w, bias},
		attrFloat("alpha", 1), attrFloat("beta", 1), attrInt("transA", 0), attrInt("transB", 1))
}

// BatchNormEpsilon and BatchNormMomentum are the attributes of every
// BatchNormalization node (PyTorch's defaults: eps 1e-5, momentum 0.1,
// which is 0.9 in ONNX's convention).
const (
	BatchNormEpsilon  = 1e-5
	BatchNormMomentum = 0.9
)

// batchNorm adds a BatchNormalization named prefix with scale 1, bias 0,
// running mean 0 and running variance 1.
func (b *builder) batchNorm(prefix, x string, c int64) string {
	dims := []int64{c}
	scale := b.constant(prefix+".weight", dims, 1)
	bias := b.constant(prefix+".bias", dims, 0)
	mean := b.constant(prefix+".running_mean", dims, 0)
	variance := b.constant(prefix+".running_var", dims, 1)
	return b.op1("BatchNormalization", prefix+"/bn", []string{x, scale, bias, mean, variance},
		attrFloat("epsilon", BatchNormEpsilon), attrFloat("momentum", BatchNormMomentum))
}

// model wraps the graph in a ModelProto (IR 7, default-domain opset 13).
func (b *builder) model(doc string) *onnxpb.ModelProto {
	return &onnxpb.ModelProto{
		IrVersion:       proto.Int64(IRVersion),
		OpsetImport:     []*onnxpb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(Opset)}},
		ProducerName:    proto.String(Producer),
		ProducerVersion: proto.String("0.1"),
		DocString:       proto.String(doc),
		Graph:           b.g,
	}
}

func attrInt(name string, v int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INT.Enum(), I: proto.Int64(v)}
}

func attrInts(name string, v ...int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INTS.Enum(), Ints: v}
}

func attrFloat(name string, v float32) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_FLOAT.Enum(), F: proto.Float32(v)}
}

func attrString(name, v string) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_STRING.Enum(), S: []byte(v)}
}

func attrTensor(name string, t *onnxpb.TensorProto) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_TENSOR.Enum(), T: t}
}

// Marshal serialises m deterministically (same model, same bytes).
func Marshal(m *onnxpb.ModelProto) ([]byte, error) {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("models: marshal %s: %w", m.GetGraph().GetName(), err)
	}
	return b, nil
}

// WriteModel writes m to path atomically (internal/atomicfile, mode 0644):
// readers see the old file or the whole new one.
func WriteModel(path string, m *onnxpb.ModelProto) error {
	b, err := Marshal(m)
	if err != nil {
		return err
	}
	err = atomicfile.Write(path, 0o644, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
	if err != nil {
		return fmt.Errorf("models: write %s: %w", path, err)
	}
	return nil
}

// CountParams returns the number of trainable values in m: the elements of
// every floating-point initializer except BatchNormalization running
// statistics (inputs 3 and 4 of a BatchNormalization node).
func CountParams(m *onnxpb.ModelProto) int64 {
	stats := map[string]bool{}
	for _, n := range m.GetGraph().GetNode() {
		if n.GetOpType() == "BatchNormalization" && len(n.Input) == 5 {
			stats[n.Input[3]] = true
			stats[n.Input[4]] = true
		}
	}
	var total int64
	for _, t := range m.GetGraph().GetInitializer() {
		switch onnxpb.TensorProto_DataType(t.GetDataType()) {
		case onnxpb.TensorProto_FLOAT, onnxpb.TensorProto_DOUBLE, onnxpb.TensorProto_FLOAT16, onnxpb.TensorProto_BFLOAT16:
		default:
			continue
		}
		if stats[t.GetName()] {
			continue
		}
		n := int64(1)
		for _, d := range t.Dims {
			n *= d
		}
		total += n
	}
	return total
}
