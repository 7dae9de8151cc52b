package importer

import (
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Builders for small hand-made protos.

func mkNode(op string, in, out []string, attrs ...*onnxpb.AttributeProto) *onnxpb.NodeProto {
	return &onnxpb.NodeProto{OpType: proto.String(op), Input: in, Output: out, Attribute: attrs}
}

func attrI(name string, v int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), I: proto.Int64(v), Type: onnxpb.AttributeProto_INT.Enum()}
}

func attrInts(name string, v ...int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Ints: v, Type: onnxpb.AttributeProto_INTS.Enum()}
}

func attrT(name string, t *Tensor) *onnxpb.AttributeProto {
	tp, err := EncodeTensor(t)
	if err != nil {
		panic(err)
	}
	return &onnxpb.AttributeProto{Name: proto.String(name), T: tp, Type: onnxpb.AttributeProto_TENSOR.Enum()}
}

func valueInfo(name string) *onnxpb.ValueInfoProto {
	return &onnxpb.ValueInfoProto{Name: proto.String(name)}
}

func mkModel(ir, opset int64, g *onnxpb.GraphProto) *onnxpb.ModelProto {
	return &onnxpb.ModelProto{
		IrVersion:   proto.Int64(ir),
		OpsetImport: []*onnxpb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(opset)}},
		Graph:       g,
	}
}

func mkInit(t *Tensor) *onnxpb.TensorProto {
	tp, err := EncodeTensor(t)
	if err != nil {
		panic(err)
	}
	return tp
}

// tiny returns a valid model: y = Add(x, w) with an int64 shape initializer
// reshaping it, at IR 8, opset 13.
func tiny() *onnxpb.ModelProto {
	return mkModel(8, 13, &onnxpb.GraphProto{
		Name:  proto.String("tiny"),
		Input: []*onnxpb.ValueInfoProto{valueInfo("x")},
		Initializer: []*onnxpb.TensorProto{
			mkInit(NewFloat32("w", []int{2, 3}, []float32{1, 2, 3, 4, 5, 6})),
			mkInit(NewInt64("s", []int{1}, []int64{6})),
		},
		Node: []*onnxpb.NodeProto{
			mkNode("Add", []string{"x", "w"}, []string{"a"}),
			mkNode("Reshape", []string{"a", "s"}, []string{"y"}),
		},
		Output: []*onnxpb.ValueInfoProto{valueInfo("y")},
	})
}

func marshal(t testing.TB, m proto.Message) []byte {
	t.Helper()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sameBits reports whether two tensors have equal type, shape and
// bit-identical values.
func sameBits(a, b *Tensor) bool {
	if a.Type != b.Type || len(a.Shape) != len(b.Shape) || len(a.F32) != len(b.F32) || len(a.F64) != len(b.F64) || len(a.I64) != len(b.I64) {
		return false
	}
	for i := range a.Shape {
		if a.Shape[i] != b.Shape[i] {
			return false
		}
	}
	for i := range a.F32 {
		if math.Float32bits(a.F32[i]) != math.Float32bits(b.F32[i]) {
			return false
		}
	}
	for i := range a.F64 {
		if math.Float64bits(a.F64[i]) != math.Float64bits(b.F64[i]) {
			return false
		}
	}
	for i := range a.I64 {
		if a.I64[i] != b.I64[i] {
			return false
		}
	}
	return true
}

func stringsContains(s, sub string) bool { return strings.Contains(s, sub) }
